//! `genai daemon`: the JSON-RPC server over stdin/stdout. Logs go to stderr only.

use genai::error::Error;

pub async fn run() -> Result<(), Error> {
    super::serve_stdio("genai daemon", |fw| {
        genai::rpc::server::serve(fw, tokio::io::stdin(), tokio::io::stdout())
    })
    .await
}
