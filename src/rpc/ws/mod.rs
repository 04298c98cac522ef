//! `genai serve`: the daemon's protocol over WebSocket (jsonrpsee), so several clients share
//! one daemon and its conversations. It is the daemon on a second transport: each connection
//! gets the same `dispatch::Session` and `RpcPort` as a stdio client, and notifications reach
//! clients through jsonrpsee subscriptions (`connection.rs`). This file owns the listener and
//! the HTTP gate in front of jsonrpsee: the web chat page at `/`, the warm local model's route
//! (`warm.rs`), the gateway's OpenAI APIs under `/v1/` (`crate::gateway`), the token and the
//! origin check (`auth.rs`), and the limits. It must never hold conversation state.

pub mod auth;
pub mod bridge;
mod connection;
mod page;
pub mod presence;
mod warm;

use std::net::SocketAddr;
use std::sync::Arc;

use jsonrpsee::server::{stop_channel, ServerConfig, ServerHandle, StopHandle};
use tokio::net::TcpListener;

use crate::error::{Error, ErrorKind, Result};
use crate::session::Framework;
use connection::{Connection, Shared};

/// The limits of one server.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Open connections at once; more are refused.
    pub connections: u32,
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
            message_bytes: 16 * 1024 * 1024,
            turns_per_connection: 16,
            buffered_events: 4096,
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
}

/// A running server: its address and the handle that stops it.
pub struct Running {
    pub addr: SocketAddr,
    stop: ServerHandle,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops accepting, closes every connection, and waits for the listener to end.
    pub async fn stop(self) {
        let _ = self.stop.stop();
        let _ = self.task.await;
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
    let gate = Arc::new(Gate {
        token: options.token.clone(),
        origins,
        web_root: options.web_root.clone(),
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
    let shared = Arc::new(Shared::new(fw, limits));
    let (stop_handle, server_handle) = stop_channel();
    let task = tokio::spawn(accept(listener, builder, shared, gate, stop_handle));
    Ok(Running {
        addr,
        stop: server_handle,
        task,
    })
}

/// Who may pass to jsonrpsee.
struct Gate {
    token: String,
    origins: Vec<String>,
    web_root: Option<std::path::PathBuf>,
}

type Builder = jsonrpsee::server::TowerServiceBuilder<
    tower::layer::util::Identity,
    tower::layer::util::Identity,
>;

async fn accept(
    listener: TcpListener,
    builder: Builder,
    shared: Arc<Shared>,
    gate: Arc<Gate>,
    stop: StopHandle,
) {
    loop {
        let socket = tokio::select! {
            s = listener.accept() => s,
            _ = stop.clone().shutdown() => break,
        };
        let (socket, _) = match socket {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!("accepting a connection failed: {e}");
                continue;
            }
        };
        // Frames go out as soon as they are written: with Nagle's algorithm a notification
        // waited for the client's delayed ACK, about 40 ms a turn (jsonrpsee sets this only on
        // the connections it accepts itself).
        if let Err(e) = socket.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY: {e}");
        }
        // Each connection has its own stop handle (a slow client is stopped alone) that the
        // server's stop also triggers.
        let (conn_stop, conn_handle) = stop_channel();
        let server_stop = stop.clone();
        let stopper = conn_handle.clone();
        tokio::spawn(async move {
            server_stop.shutdown().await;
            let _ = stopper.stop();
        });
        let (shared, gate, builder) = (shared.clone(), gate.clone(), builder.clone());
        let svc = tower::service_fn(
            move |req: jsonrpsee::server::HttpRequest<hyper_body::Incoming>| {
                let (shared, gate, builder) = (shared.clone(), gate.clone(), builder.clone());
                let (conn_stop, conn_handle) = (conn_stop.clone(), conn_handle.clone());
                handle(req, shared, gate, builder, conn_stop, conn_handle)
            },
        );
        let conn_done = stop.clone();
        tokio::spawn(async move {
            if let Err(e) =
                jsonrpsee::server::serve_with_graceful_shutdown(socket, svc, conn_done.shutdown())
                    .await
            {
                tracing::debug!("connection ended: {e}");
            }
        });
    }
}

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
        return Ok(warm::answer(req, &shared.fw, shared.limits.message_bytes).await);
    }
    if crate::gateway::is_gateway(&req) && !jsonrpsee::server::ws::is_upgrade_request(&req) {
        if let Some(refused) = gate.check_api_client(&req) {
            return Ok(refused);
        }
        return Ok(crate::gateway::answer(req, &shared.fw, shared.limits.message_bytes).await);
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
    /// `None` when a gateway request comes from an allowed origin with the token (as a bearer
    /// token or `x-api-key`); else the refusal in the gateway's error shape.
    fn check_api_client<B>(
        &self,
        req: &http::Request<B>,
    ) -> Option<jsonrpsee::server::HttpResponse> {
        let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
        if !auth::origin_allowed(header("origin"), &self.origins) {
            return Some(
                crate::gateway::ApiError::forbidden_origin()
                    .response_in(crate::gateway::Api::of_path(req.uri().path())),
            );
        }
        if !auth::has_api_key(header("authorization"), header("x-api-key"), &self.token) {
            return Some(
                crate::gateway::ApiError::unauthorized()
                    .response_in(crate::gateway::Api::of_path(req.uri().path())),
            );
        }
        None
    }
}

fn refuse(status: http::StatusCode, why: &'static str) -> jsonrpsee::server::HttpResponse {
    let mut r = jsonrpsee::server::HttpResponse::new(jsonrpsee::server::HttpBody::from(why));
    *r.status_mut() = status;
    r
}
