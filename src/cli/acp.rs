//! `genai acp`: the Agent Client Protocol agent over stdin/stdout, for ACP editors (Zed,
//! JetBrains, Neovim, Emacs). Logs go to stderr only.

use std::sync::Arc;

use genai::error::{Error, ErrorKind};
use genai::session::Framework;
use genai::store::Store;

pub async fn run() -> Result<(), Error> {
    let (paths, config, registry) = super::load()?;
    let store = Arc::new(Store::open(&paths.history_db())?);
    let fw = Arc::new(Framework::new(config, registry, store));
    tracing::info!(
        "genai acp ready; history at {}",
        paths.history_db().display()
    );
    let served = genai::acp::serve(fw.clone(), tokio::io::stdin(), tokio::io::stdout())
        .await
        .map_err(|e| Error::new(ErrorKind::Internal, format!("stdio failed: {e}")));
    // MCP servers are our children: they end with the agent.
    fw.toolbox.shutdown().await;
    served
}
