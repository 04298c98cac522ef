//! `genai lsp`: a Language Server over stdio on `tower-lsp-server`, for any LSP editor. Code
//! actions on a selection (built-in and `[lsp.actions.NAME]`), `genai.ask`, work-done
//! progress with cancel, document sync, and optional completion. Each action is one
//! conversation of the core (titled by the action and the file), driven through the client
//! port in `port.rs`. This front-end must never use the daemon's crate: it shares only the core.

mod actions;
mod completion;
mod documents;
mod editing;
mod port;
mod reply;
mod server;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::{LspService, Server};

use genai_core::session::Framework;

/// Serves the language server on `input`/`output` until the client exits; shown replies are
/// written under `data_dir/lsp/`.
pub async fn serve(
    fw: Arc<Framework>,
    data_dir: PathBuf,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite,
) {
    let (service, socket) =
        LspService::build(move |client| server::Backend::new(client, fw, data_dir))
            .custom_method(
                "textDocument/inlineCompletion",
                server::Backend::inline_completion,
            )
            .custom_method(
                "window/workDoneProgress/cancel",
                server::Backend::cancel_progress,
            )
            .finish();
    // Actions wait on the model for seconds: let many run while the editor keeps typing.
    Server::new(input, output, socket)
        .concurrency_level(64)
        .serve(service)
        .await;
}
