//! `genai serve`'s front door: one HTTP/1.1 listener for everything the serve answers. It owns
//! the listener (its accept loop, timeouts and connection cap: `listener.rs`), who may come in
//! (the serve token and the origin check: `auth.rs`; the gateway's virtual keys through
//! `genai_gateway::Access`), and the routes (`router.rs`): the web chat page at `/`
//! (`page.rs`), the warm local model's route (`warm.rs`), the gateway's OpenAI and Anthropic
//! APIs under `/v1/` (`genai-gateway`), and the daemon's WebSocket (`genai_rpc::ws`, a tower
//! service). `presence.rs` is the file that says a serve runs, which `genai ask` reads to use
//! its warm model. It must never hold conversation state nor speak a route's protocol: each
//! route's crate does.

pub mod auth;
mod listener;
mod page;
pub mod presence;
mod router;
mod warm;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use genai_core::error::{Error, ErrorKind, Result};
use genai_core::session::Framework;
pub use genai_rpc::ws::roots;

/// The limits of one server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// HTTP connections open at once (kept under the open-file limit; a WebSocket leaves this
    /// count once upgraded); past it the oldest is asked to close (at once when idle, after its
    /// answer otherwise).
    pub open_connections: usize,
    /// A request's head must arrive within this (a connection idle this long is closed), and
    /// a request's body within this after its head.
    pub read_timeout: Duration,
    /// The WebSocket clients' limits; its largest message is a plain request's largest body too.
    pub ws: genai_rpc::ws::Limits,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            open_connections: 16_384,
            read_timeout: Duration::from_secs(30),
            ws: genai_rpc::ws::Limits {
                connections: 256,
                message_bytes: 16 * 1024 * 1024,
                turns_per_connection: 16,
                buffered_events: 4096,
            },
        }
    }
}

impl Limits {
    /// What a plain HTTP request's body may be: its bytes, and how long it may take to come.
    pub(crate) fn body(&self) -> genai_gateway::BodyLimit {
        genai_gateway::BodyLimit {
            bytes: self.ws.message_bytes,
            within: self.read_timeout,
        }
    }
}

/// How to serve.
#[derive(Debug, Clone)]
pub struct Options {
    pub listen: SocketAddr,
    pub token: String,
    /// Browser origins allowed beside the server's own.
    pub origins: Vec<String>,
    /// A folder served as the web chat page in place of the binary's own
    /// (`editor-integrations/vscode/dist/web`, while the page is worked on).
    pub web_root: Option<std::path::PathBuf>,
    pub limits: Limits,
    /// The folders clients may root conversations in.
    pub roots: roots::Roots,
}

/// A running server: its address and the handle that stops it.
pub struct Running {
    pub addr: SocketAddr,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    access: Arc<genai_gateway::Access>,
}

impl Running {
    /// Stops accepting, closes every connection, waits for the listener to end and for the
    /// gateway's request rows to be stored.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
        self.access.flush().await;
    }
}

/// Binds and serves in the background.
pub async fn start(fw: Arc<Framework>, options: Options) -> Result<Running> {
    let listener = TcpListener::bind(options.listen).await.map_err(|e| {
        Error::new(
            ErrorKind::Config,
            format!("cannot listen on {}: {e}", options.listen),
        )
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::internal(format!("no local address: {e}")))?;
    let mut origins = options.origins.clone();
    origins.push(format!("http://{addr}"));
    if addr.ip().is_loopback() {
        origins.push(format!("http://localhost:{}", addr.port()));
    }
    let access = genai_gateway::Access::start(&fw, options.token.clone()).await?;
    let stop = CancellationToken::new();
    let limits = options.limits.clone();
    let router = Arc::new(router::Router {
        gate: router::Gate {
            token: options.token.clone(),
            origins,
            access: access.clone(),
        },
        web_root: options.web_root.clone(),
        ws: genai_rpc::ws::WebSocket::new(fw.clone(), limits.ws.clone(), options.roots.clone()),
        fw,
        body: limits.body(),
        stop: stop.clone(),
    });
    let task = tokio::spawn(listener::accept(listener, router, limits, stop.clone()));
    Ok(Running {
        addr,
        stop,
        task,
        access,
    })
}
