//! `genai acp`: the Agent Client Protocol agent over stdin/stdout, for ACP editors (Zed,
//! JetBrains, Neovim, Emacs). Logs go to stderr only.

use genai_core::error::Error;

pub async fn run() -> Result<(), Error> {
    super::serve_stdio("genai acp", |fw| {
        genai_acp::serve(fw, super::stdio::stdin(), super::stdio::stdout())
    })
    .await
}
