//! MCP over streamable HTTP, the transport `genai serve` answers on `/mcp`: the `rmcp` SDK's
//! server keeps one session per client (its `Mcp-Session-Id`), each with its own handler, so
//! each client has its own tools, undo session and elicitations, as over stdio.
//!
//! It owns the transport's settings. It must never admit a client: the serve's front door
//! checks the serve token and the origin before a request reaches it.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use genai_core::session::Framework;
use http_body_util::combinators::BoxBody;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::port::Served;
use crate::server::{GenaiServer, Options};

/// The path `genai serve` answers MCP on.
pub const PATH: &str = "/mcp";

/// The MCP endpoint of one serve.
#[derive(Clone)]
pub struct HttpEndpoint {
    service: StreamableHttpService<GenaiServer, LocalSessionManager>,
}

impl HttpEndpoint {
    /// The endpoint serving `options`' workspace. A request body past `body_bytes` is refused
    /// with 413; `stop` ends every session (and its event stream).
    pub fn new(
        fw: Arc<Framework>,
        options: Options,
        body_bytes: usize,
        stop: CancellationToken,
    ) -> HttpEndpoint {
        // The SDK's own Host check guards a server that takes no token against DNS rebinding;
        // the serve's gate asks every request for the serve token and checks its origin, and
        // a serve behind a balancer is reached by names the SDK cannot know, so it is off.
        let config = StreamableHttpServerConfig::default()
            .disable_allowed_hosts()
            .with_max_request_body_bytes(body_bytes)
            .with_cancellation_token(stop);
        let factory = move || GenaiServer::new(fw.clone(), &options, Served::Serve);
        HttpEndpoint {
            service: StreamableHttpService::new(factory, Arc::default(), config),
        }
    }

    /// The answer to one admitted request on [`PATH`].
    pub async fn answer<B>(
        &self,
        req: http::Request<B>,
    ) -> http::Response<BoxBody<Bytes, Infallible>>
    where
        B: http_body::Body + Send + 'static,
        B::Error: std::fmt::Display,
    {
        self.service.handle(req).await
    }
}
