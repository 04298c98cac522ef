//! `genai serve`: the daemon's protocol over WebSocket (jsonrpsee), so several clients share
//! one daemon and its conversations. It is the daemon on a second transport: each connection
//! gets the same `dispatch::Session` and `RpcPort` as a stdio client, and notifications reach
//! clients through jsonrpsee subscriptions (`connection.rs`). This file owns binding the
//! listener (its accept loop, timeouts and connection cap: `listener.rs`) and the HTTP gate in
//! front of jsonrpsee: the web chat page at `/`, the warm local model's route (`warm.rs`), the
//! gateway's OpenAI and Anthropic APIs under `/v1/` (`genai_gateway`, whose `Access` admits
//! the serve token or a virtual key there), the token and the origin check (`auth.rs`), and
//! the limits. The folders clients may root conversations in are `roots.rs`'s. It must never
//! hold conversation state.

pub mod auth;
pub mod bridge;
mod connection;
mod listener;
mod page;
pub mod presence;
pub mod roots;
mod warm;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use jsonrpsee::server::{stop_channel, ServerConfig, ServerHandle, StopHandle};
use tokio::net::TcpListener;

use connection::{Connection, Shared};
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::session::Framework;

/// The limits of one server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// WebSocket clients at once; more are refused.
    pub connections: u32,
    /// HTTP connections open at once (kept under the open-file limit; a WebSocket leaves this
    /// count once upgraded); past it the oldest is asked to close (at once when idle, after its
    /// answer otherwise).
    pub open_connections: usize,
    /// A request's head must arrive within this (a connection idle this long is closed), and
    /// a request's body within this after its head.
    pub read_timeout: Duration,
    /// The largest message either way, in bytes.
    pub message_bytes: u32,
    /// Turns one connection may have running or queued (`OnNewMessage`).
    pub turns_per_connection: usize,
    /// Events a subscriber may fall behind (and messages queued for its socket) before the
    /// client is dropped.
    pub buffered_events: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: 256,
            open_connections: 16_384,
            read_timeout: Duration::from_secs(30),
            message_bytes: 16 * 1024 * 1024,
            turns_per_connection: 16,
            buffered_events: 4096,
        }
    }
}

impl Limits {
    /// What a plain HTTP request's body may be: its bytes, and how long it may take to come.
    pub fn body(&self) -> genai_gateway::BodyLimit {
        genai_gateway::BodyLimit {
            bytes: self.message_bytes,
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
    stop: ServerHandle,
    task: tokio::task::JoinHandle<()>,
    access: Arc<genai_gateway::Access>,
}

impl Running {
    /// Stops accepting, closes every connection, waits for the listener to end and for the
    /// gateway's request rows to be stored.
    pub async fn stop(self) {
        let _ = self.stop.stop();
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
    let access = genai_gateway::Access::start(fw.store().clone(), options.token.clone()).await?;
    let gate = Arc::new(Gate {
        token: options.token.clone(),
        origins,
        web_root: options.web_root.clone(),
        access: access.clone(),
    });
    let limits = options.limits.clone();
    let config = ServerConfig::builder()
        .max_connections(limits.connections)
        .max_request_body_size(limits.message_bytes)
        .max_response_body_size(limits.message_bytes)
        .set_message_buffer_capacity(limits.buffered_events.min(u32::MAX as usize) as u32)
        .ws_only()
        .build();
    let builder = jsonrpsee::server::Server::builder()
        .set_config(config)
        .to_service_builder();
    let shared = Arc::new(Shared::new(fw, limits, options.roots.clone()));
    let (stop_handle, server_handle) = stop_channel();
    let task = tokio::spawn(listener::accept(
        listener,
        builder,
        shared,
        gate,
        stop_handle,
    ));
    Ok(Running {
        addr,
        stop: server_handle,
        task,
        access,
    })
}

/// Who may pass to jsonrpsee.
struct Gate {
    token: String,
    origins: Vec<String>,
    web_root: Option<std::path::PathBuf>,
    /// The gateway's token and virtual keys.
    access: Arc<genai_gateway::Access>,
}

type Builder = jsonrpsee::server::TowerServiceBuilder<
    tower::layer::util::Identity,
    tower::layer::util::Identity,
>;

/// One HTTP request of a connection: the gate, then jsonrpsee (which upgrades it).
async fn handle(
    req: jsonrpsee::server::HttpRequest<hyper_body::Incoming>,
    shared: Arc<Shared>,
    gate: Arc<Gate>,
    builder: Builder,
    conn_stop: StopHandle,
    conn_handle: ServerHandle,
) -> std::result::Result<jsonrpsee::server::HttpResponse, jsonrpsee::core::BoxError> {
    if warm::is_warm(&req) && !jsonrpsee::server::ws::is_upgrade_request(&req) {
        if let Some(refused) = gate.check_client(&req) {
            return Ok(refused);
        }
        return Ok(warm::answer(req, &shared.fw, shared.limits.body()).await);
    }
    if genai_gateway::is_gateway(&req) && !jsonrpsee::server::ws::is_upgrade_request(&req) {
        let caller = match gate.check_api_client(&req).await {
            Ok(caller) => caller,
            Err(refused) => return Ok(refused),
        };
        return Ok(genai_gateway::answer(req, &shared.fw, shared.limits.body(), caller).await);
    }
    if let Some(refused) = gate.check(&req) {
        return Ok(refused);
    }
    let offered_protocol = req
        .headers()
        .get(http::header::SEC_WEBSOCKET_PROTOCOL)
        .is_some();
    let module = Connection::new(shared, conn_handle).module();
    let mut service = builder.build(module, conn_stop);
    let mut response = tower::Service::call(&mut service, req).await?;
    if offered_protocol && response.status() == http::StatusCode::SWITCHING_PROTOCOLS {
        // A browser that offered subprotocols needs one chosen, or it fails.
        response.headers_mut().insert(
            http::header::SEC_WEBSOCKET_PROTOCOL,
            http::HeaderValue::from_static(auth::PROTOCOL),
        );
    }
    Ok(response)
}

mod hyper_body {
    pub use hyper::body::Incoming;
}

impl Gate {
    /// `None` when the request may go on to jsonrpsee; else the answer (the page, or a
    /// refusal).
    fn check<B>(&self, req: &http::Request<B>) -> Option<jsonrpsee::server::HttpResponse> {
        if !jsonrpsee::server::ws::is_upgrade_request(req) {
            return Some(page::answer(
                req.method(),
                req.uri().path(),
                req.headers(),
                self.web_root.as_deref(),
            ));
        }
        self.check_client(req)
    }

    /// `None` when the request comes from an allowed origin with the token; else the refusal.
    fn check_client<B>(&self, req: &http::Request<B>) -> Option<jsonrpsee::server::HttpResponse> {
        let header =
            |name: http::header::HeaderName| req.headers().get(name).and_then(|v| v.to_str().ok());
        if !auth::origin_allowed(header(http::header::ORIGIN), &self.origins) {
            return Some(refuse(
                http::StatusCode::FORBIDDEN,
                "this origin may not connect (genai serve --allow-origin ORIGIN)",
            ));
        }
        if !auth::has_token(
            header(http::header::AUTHORIZATION),
            header(http::header::SEC_WEBSOCKET_PROTOCOL),
            &self.token,
        ) {
            return Some(refuse(
                http::StatusCode::UNAUTHORIZED,
                "a bearer token is needed (genai serve --print-token)",
            ));
        }
        None
    }
}

impl Gate {
    /// The caller of a gateway request from an allowed origin with the token or a live
    /// virtual key (as a bearer token or `x-api-key`) within its limits; else the refusal in
    /// the gateway's error shape.
    async fn check_api_client<B>(
        &self,
        req: &http::Request<B>,
    ) -> std::result::Result<genai_gateway::Caller, jsonrpsee::server::HttpResponse> {
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
        let path = req.uri().path();
        if !auth::origin_allowed(header("origin"), &self.origins) {
            return Err(genai_gateway::ApiError::forbidden_origin()
                .response_in(genai_gateway::Api::of_path(path)));
        }
        self.access
            .admit(
                path,
                header("authorization"),
                header("x-api-key"),
                header("user-agent"),
            )
            .await
    }
}

fn refuse(status: http::StatusCode, why: &'static str) -> jsonrpsee::server::HttpResponse {
    let mut r = jsonrpsee::server::HttpResponse::new(jsonrpsee::server::HttpBody::from(why));
    *r.status_mut() = status;
    r
}
