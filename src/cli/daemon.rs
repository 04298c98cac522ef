//! `genai daemon`: the JSON-RPC server over stdin/stdout. Logs go to stderr only.

use genai_core::error::{Error, ErrorKind};

#[derive(clap::Args)]
pub struct Args {
    /// Relay stdio to a shared `genai serve` at this WebSocket address instead of running a
    /// daemon here (the token from $GENAI_SERVE_TOKEN, else the config dir's token file).
    #[arg(long, value_name = "WS_URL")]
    pub connect: Option<String>,
}

pub async fn run(args: Args) -> Result<(), Error> {
    if let Some(url) = args.connect {
        let paths = genai_core::config::Paths::from_env()?;
        let token = match std::env::var("GENAI_SERVE_TOKEN") {
            Ok(t) if !t.trim().is_empty() => t.trim().to_string(),
            _ => std::fs::read_to_string(genai_server::auth::token_path(&paths.config_dir))
                .map(|t| t.trim().to_string())
                .map_err(|e| {
                    Error::new(
                        ErrorKind::Config,
                        format!("no serve token: set GENAI_SERVE_TOKEN or run `genai serve --print-token` on this machine first ({e})"),
                    )
                })?,
        };
        return genai_rpc::ws::bridge::relay(
            &url,
            &token,
            super::stdio::stdin(),
            super::stdio::stdout(),
        )
        .await;
    }
    super::serve_stdio("genai daemon", |fw| {
        genai_rpc::server::serve(fw, super::stdio::stdin(), super::stdio::stdout())
    })
    .await
}
