//! The MCP session over a byte stream (stdio for `genai mcp`): the `rmcp` SDK's server reads
//! and writes the newline-delimited JSON-RPC (protocol only on its output; logs go to the
//! tracing log), and this handler answers `initialize`, `tools/list`, `tools/call`,
//! `prompts/list` and `prompts/get` from the core.
//!
//! It owns what the server says of itself and which module answers what. A tool's failure is
//! a result with `isError` the client reads, never a protocol error; bad input never ends the
//! session.

use std::path::PathBuf;
use std::sync::Arc;

use genai_core::session::{Framework, PermissionFlags, ServedTools};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, GetPromptRequestParams, GetPromptResponse,
    Implementation, ListPromptsResult, ListToolsResult, PaginatedRequestParams, ServerCapabilities,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use tokio::io::{AsyncRead, AsyncWrite};

use crate::port::{McpPort, Served};
use crate::{prompts, tools};

/// What `genai mcp` serves on.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workspace's root: the folder the tools work in and the commands are looked up from.
    pub root: PathBuf,
    /// `--mode`, `--allow` and `--deny`, over the config's and the project's rules.
    pub permissions: PermissionFlags,
}

/// What the client is told when it connects.
const INSTRUCTIONS: &str = "genai's tools on the files of one workspace folder (read, list, \
search, edit, write, run commands sandboxed, fetch), under genai's permission policy: a call \
it refuses answers why and the rule that would allow it. `ask` asks any model genai reaches; \
`search_history` searches genai's stored conversations. The prompts are genai's commands.";

/// The handler of one session.
pub(crate) struct GenaiServer {
    fw: Arc<Framework>,
    served: ServedTools,
    port: Arc<McpPort>,
}

impl ServerHandler for GenaiServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("genai", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.port.attach(&context.peer);
        Ok(ListToolsResult::with_all_items(tools::list(&self.served)))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.port.attach(&context.peer);
        let arguments = request.arguments.unwrap_or_default();
        let (fw, served, port) = (&self.fw, &self.served, &self.port);
        tools::call(fw, served, port, &request.name, arguments, &context.ct)
            .await
            .map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.port.attach(&context.peer);
        let listed = prompts::list(&self.fw, self.served.root());
        Ok(ListPromptsResult::with_all_items(listed))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.port.attach(&context.peer);
        let root = self.served.root();
        prompts::get(&self.fw, root, &request.name, request.arguments)
            .await
            .map(Into::into)
    }
}

impl GenaiServer {
    /// A session's handler: its own port to the client and its own tools, whose changes
    /// `genai undo --cid` takes back as one session.
    pub(crate) fn new(
        fw: Arc<Framework>,
        options: &Options,
        served: Served,
    ) -> std::io::Result<GenaiServer> {
        let port = Arc::new(McpPort::new(served));
        let served = fw
            .serve_tools(&options.root, &options.permissions, port.clone())
            .map_err(|e| std::io::Error::other(e.message))?;
        for note in served.notes() {
            tracing::warn!("genai mcp: {note}");
        }
        tracing::info!(
            "genai mcp serves {}; its changes are undone with genai undo --cid {}",
            served.root().display(),
            served.session_id()
        );
        Ok(GenaiServer { fw, served, port })
    }
}

/// Serves MCP on `input` and `output` until the client closes its end.
pub async fn serve<R, W>(
    fw: Arc<Framework>,
    options: Options,
    input: R,
    output: W,
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let server = GenaiServer::new(fw, &options, Served::Stdio)?;
    let running = server
        .serve((input, output))
        .await
        .map_err(|e| std::io::Error::other(format!("the MCP session did not start: {e}")))?;
    running
        .waiting()
        .await
        .map_err(|e| std::io::Error::other(format!("the MCP session failed: {e}")))?;
    Ok(())
}
