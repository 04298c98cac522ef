//! `genai serve`'s front door: one HTTP/1.1 listener for everything the serve answers. It owns
//! the listener (its accept loop, timeouts and connection cap: `listener.rs`), who may come in
//! (the serve token and the origin check: `auth.rs`; the gateway's virtual keys through
//! `genai_gateway::Access`), and the routes (`router.rs`): the web chat page at `/`
//! (`page.rs`), the warm local model's route (`warm.rs`), the gateway's OpenAI and Anthropic
//! APIs under `/v1/` (`genai-gateway`), MCP on `/mcp` (`genai_mcp::http`, in the serve's default
//! root under the config's permissions), the daemon's WebSocket (`genai_rpc::ws`, a tower
//! service), and the operator's `/healthz`, `/readyz` and `/metrics` (`ops.rs`, also alone on
//! a metrics address). `presence.rs` is the file that says a serve runs, which `genai ask`
//! reads to use its warm model. This file owns starting and stopping: a stop refuses new
//! connections at once, lets the requests and streams in flight finish within the grace,
//! cancels what remains, and stores the gateway's rows. It must never hold conversation state
//! nor speak a route's protocol: each route's crate does.

pub mod auth;
mod listener;
mod ops;
mod page;
pub mod presence;
mod router;
mod warm;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

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
    /// How long a stop lets requests and streams in flight finish before it cancels them.
    pub shutdown_grace: Duration,
    /// A bearer token `/metrics` takes besides the serve token.
    pub metrics_token: Option<String>,
    /// Where `/metrics` (with `/healthz` and `/readyz`) is served alone, without a token.
    pub metrics_address: Option<SocketAddr>,
    /// The store replicas share (`[store] url`): the gateway's keys and ledger live there.
    pub shared: Option<Arc<dyn genai_gateway::SharedState>>,
}

/// A running server: its addresses and the handle that stops it.
pub struct Running {
    pub addr: SocketAddr,
    /// Where `/metrics` is served alone, when it is.
    pub metrics_addr: Option<SocketAddr>,
    stop: CancellationToken,
    /// Ends the connections still open when the grace is over.
    cut: CancellationToken,
    task: tokio::task::JoinHandle<()>,
    /// Every connection's task.
    connections: TaskTracker,
    grace: Duration,
    access: Arc<genai_gateway::Access>,
}

impl Running {
    /// The token that, cancelled, ends a stop's grace at once (a second Ctrl-C).
    pub fn cut_short(&self) -> CancellationToken {
        self.cut.clone()
    }

    /// Stops: the listener closes at once (a new connection is refused), WebSockets are
    /// closed, idle connections too, and the requests and streams in flight may finish within
    /// the grace; then what remains is cancelled (a stream's row says `cancelled`) and the
    /// gateway's rows are stored. Whether everything finished within the grace.
    pub async fn stop(self) -> bool {
        self.stop.cancel();
        let _ = self.task.await;
        self.connections.close();
        let finished = tokio::select! {
            () = self.connections.wait() => true,
            () = tokio::time::sleep(self.grace) => false,
            () = self.cut.cancelled() => false,
        };
        if !finished {
            self.cut.cancel();
            self.connections.wait().await;
        }
        self.access.flush().await;
        finished
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
    let metrics_listener = match options.metrics_address {
        Some(at) => Some(TcpListener::bind(at).await.map_err(|e| {
            Error::new(
                ErrorKind::Config,
                format!("cannot listen on {at} ([serve] metrics_address): {e}"),
            )
        })?),
        None => None,
    };
    let access =
        genai_gateway::Access::start(&fw, options.token.clone(), options.shared.clone()).await?;
    if let Some(t) = &options.metrics_token {
        genai_core::redact::remember(t);
    }
    let stop = CancellationToken::new();
    let limits = options.limits.clone();
    let ops = Arc::new(ops::Ops {
        store: fw.store().clone(),
        access: access.clone(),
        metrics_token: options.metrics_token.clone(),
        serve_token: options.token.clone(),
    });
    let metrics_addr = match metrics_listener {
        Some(l) => {
            let at = l
                .local_addr()
                .map_err(|e| Error::internal(format!("no local address: {e}")))?;
            let serving = ops::serve_alone(l, ops.clone(), limits.read_timeout, stop.clone());
            tokio::spawn(serving);
            Some(at)
        }
        None => None,
    };
    let router = Arc::new(router::Router {
        gate: router::Gate {
            token: options.token.clone(),
            origins,
            access: access.clone(),
        },
        ops,
        web_root: options.web_root.clone(),
        ws: genai_rpc::ws::WebSocket::new(fw.clone(), limits.ws.clone(), options.roots.clone()),
        mcp: genai_mcp::http::HttpEndpoint::new(
            fw.clone(),
            genai_mcp::Options {
                root: options.roots.default_root().to_path_buf(),
                permissions: Default::default(),
            },
            limits.body().bytes as usize,
            stop.clone(),
        ),
        fw,
        body: limits.body(),
        stop: stop.clone(),
    });
    let (connections, cut) = (TaskTracker::new(), CancellationToken::new());
    let ending = listener::Ending {
        stop: stop.clone(),
        cut: cut.clone(),
        connections: connections.clone(),
    };
    let task = tokio::spawn(listener::accept(listener, router, limits, ending));
    Ok(Running {
        addr,
        metrics_addr,
        stop,
        cut,
        task,
        connections,
        grace: options.shutdown_grace,
        access,
    })
}
