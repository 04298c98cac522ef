//! `genai lsp`: the language server on stdin/stdout (see `genai_lsp`). Logs go to stderr,
//! never stdout, which carries the protocol only.

use std::sync::Arc;

use genai_core::error::Error;
use genai_core::session::Framework;
use genai_core::store::Store;

pub async fn run() -> Result<(), Error> {
    let (paths, config, registry) = super::load()?;
    let store = Store::open(&paths.history_db())?;
    let fw = Arc::new(Framework::new(config, registry, Arc::new(store)).with_home(&paths));
    // A signal ends it as `exit` does: the last spans are flushed on the way out.
    tokio::select! {
        () = genai_lsp::serve(
            fw,
            paths.data_dir.clone(),
            super::stdio::stdin(),
            super::stdio::stdout(),
        ) => {}
        () = super::stopped() => tracing::info!("genai lsp: stopped by a signal"),
    }
    Ok(())
}
