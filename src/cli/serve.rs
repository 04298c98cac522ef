//! `genai serve`: the daemon's protocol over WebSocket for several clients (see
//! `genai::rpc::ws`), with a token, an origin allow list, limits and a web chat page.
//! Prints one line, `listening on ws://ADDR`, and serves until interrupted; on stderr, the
//! chat page's address with the token (`http://ADDR/#token=TOKEN`) when `--web-root` is
//! given, else how to build and serve the page. A `--web-root` that is not a folder holding
//! `index.html` is a usage error.

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
    /// after `npm run build` there); it must hold `index.html`.
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
    if let Some(dir) = &args.web_root {
        check_web_root(dir)?;
    }
    let store = Store::open(&paths.history_db())?;
    let fw = Arc::new(Framework::new(config, registry, Arc::new(store)).with_home(&paths));
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
    let page = options.web_root.is_some();
    let token = options.token.clone();
    let running = ws::start(fw.clone(), options).await?;
    outln!("listening on ws://{}", running.addr);
    if page {
        eprintln!(
            "genai: open the chat page at http://{}/#token={token}",
            running.addr
        );
    } else {
        eprintln!(
            "genai: no chat page is served: build it with `npm run build` in editor-integrations/vscode, then start genai serve with --web-root editor-integrations/vscode/dist/web; clients need the token (genai serve --print-token)"
        );
    }
    let _ = tokio::signal::ctrl_c().await;
    running.stop().await;
    fw.cancel_all();
    fw.idle().await;
    fw.close_all();
    Ok(())
}

/// Refuses a web root that is not a folder holding the page's `index.html`.
fn check_web_root(dir: &std::path::Path) -> Result<(), Error> {
    let refuse = |why: &str| {
        Err(Error::new(
            ErrorKind::InvalidParams,
            format!(
                "--web-root {}: {why}; build the page with `npm run build` in editor-integrations/vscode and pass its dist/web folder",
                dir.display()
            ),
        ))
    };
    if !dir.is_dir() {
        return refuse(if dir.exists() {
            "not a folder"
        } else {
            "no such folder"
        });
    }
    if !dir.join("index.html").is_file() {
        return refuse("the folder holds no index.html");
    }
    Ok(())
}
