//! `genai serve`: the daemon's protocol over WebSocket for several clients (see
//! `genai::rpc::ws`), with a token, an origin allow list, limits and a web chat page.
//! Prints one line, `listening on ws://ADDR`, and serves until interrupted.

use std::net::SocketAddr;
use std::sync::Arc;

use genai::error::{Error, ErrorKind};
use genai::rpc::ws::{self, auth, Limits, Options};
use genai::session::Framework;
use genai::store::Store;

#[derive(clap::Args)]
pub struct Args {
    /// The address to listen on (loopback by default: anyone who can reach it still needs
    /// the token).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8765")]
    pub listen: SocketAddr,
    /// Print the bearer token (made on first use, in the config dir) and exit.
    #[arg(long)]
    pub print_token: bool,
    /// A browser origin allowed to connect besides the served page's own (repeatable).
    #[arg(long = "allow-origin", value_name = "ORIGIN")]
    pub allow_origins: Vec<String>,
    /// The folder of the web chat page served at `/` (`editor-integrations/vscode/dist/web`
    /// after `npm run build` there).
    #[arg(long, value_name = "DIR")]
    pub web_root: Option<std::path::PathBuf>,
    /// Connections at once.
    #[arg(long, default_value_t = Limits::default().connections)]
    pub max_connections: u32,
    /// The largest message, in bytes.
    #[arg(long, default_value_t = Limits::default().message_bytes)]
    pub max_message_bytes: u32,
    /// Turns one connection may have queued or running.
    #[arg(long, default_value_t = Limits::default().turns_per_connection)]
    pub max_turns_per_connection: usize,
    /// Events a client may fall behind before it is dropped.
    #[arg(long, default_value_t = Limits::default().buffered_events)]
    pub max_buffered_events: usize,
}

pub async fn run(args: Args) -> Result<(), Error> {
    let (paths, config, registry) = super::load()?;
    let token = auth::token(&paths.config_dir)?;
    if args.print_token {
        outln!("{token}");
        return Ok(());
    }
    if args.max_connections == 0
        || args.max_turns_per_connection == 0
        || args.max_buffered_events == 0
    {
        return Err(Error::new(
            ErrorKind::InvalidParams,
            "the limits must be at least 1",
        ));
    }
    let store = Store::open(&paths.history_db())?;
    let fw = Arc::new(Framework::new(config, registry, Arc::new(store)));
    let options = Options {
        listen: args.listen,
        token,
        origins: args.allow_origins,
        web_root: args.web_root,
        limits: Limits {
            connections: args.max_connections,
            message_bytes: args.max_message_bytes,
            turns_per_connection: args.max_turns_per_connection,
            buffered_events: args.max_buffered_events,
        },
    };
    let running = ws::start(fw.clone(), options).await?;
    outln!("listening on ws://{}", running.addr);
    eprintln!(
        "genai: plain HTTP at http://{}/ (the chat page with --web-root); token: genai serve --print-token",
        running.addr
    );
    let _ = tokio::signal::ctrl_c().await;
    running.stop().await;
    fw.cancel_all();
    fw.idle().await;
    fw.close_all();
    Ok(())
}
