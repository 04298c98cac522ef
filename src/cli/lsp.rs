//! `genai lsp`: the language server on stdin/stdout (see `genai::lsp`). Logs go to stderr,
//! never stdout, which carries the protocol only.

use std::sync::Arc;

use genai::error::Error;
use genai::session::Framework;
use genai::store::Store;

pub async fn run() -> Result<(), Error> {
    let (paths, config, registry) = super::load()?;
    let store = Store::open(&paths.history_db())?;
    let fw = Arc::new(Framework::new(config, registry, Arc::new(store)).with_home(&paths));
    genai::lsp::serve(
        fw,
        paths.data_dir.clone(),
        super::stdio::stdin(),
        super::stdio::stdout(),
    )
    .await;
    Ok(())
}
