//! `genai serve`'s WebSocket: the daemon's protocol over jsonrpsee, so several clients share
//! one daemon and its conversations. It is the daemon on a second transport: each client gets
//! the same `dispatch::Session` and `RpcPort` as a stdio client, and notifications reach
//! clients through jsonrpsee subscriptions (`connection.rs`). The front door (`genai-server`)
//! owns the listener and admits a client (token, origin) before it hands the upgrade here as
//! an `http` request; this module answers it as a tower service. The folders clients may root
//! conversations in are `roots.rs`'s; `bridge.rs` is `genai daemon --connect`'s side. It must
//! never hold conversation state, nor know of any route but the WebSocket.

pub mod bridge;
mod connection;
pub mod roots;

use std::sync::Arc;

use jsonrpsee::server::{stop_channel, ServerConfig, ServerHandle, StopHandle};
use tokio_util::sync::CancellationToken;

use connection::{Connection, Shared};
use genai_core::session::Framework;

/// What an upgrade is answered with: the handshake's response (its body is empty, or the
/// refusal's text).
pub(crate) type Response = jsonrpsee::server::HttpResponse;

/// What the service may fail with.
pub(crate) type BoxError = jsonrpsee::core::BoxError;

/// The limits of the WebSocket clients.
#[derive(Debug, Clone)]
pub struct Limits {
    /// WebSocket clients at once; more are refused.
    pub connections: u32,
    /// The largest message either way, in bytes.
    pub message_bytes: u32,
    /// Turns one connection may have running or queued (`OnNewMessage`).
    pub turns_per_connection: usize,
    /// Events a subscriber may fall behind (and messages queued for its socket) before the
    /// client is dropped.
    pub buffered_events: usize,
}

/// The WebSocket clients of one server.
pub struct WebSocket {
    shared: Arc<Shared>,
    builder: Builder,
}

type Builder = jsonrpsee::server::TowerServiceBuilder<
    tower::layer::util::Identity,
    tower::layer::util::Identity,
>;

impl WebSocket {
    pub fn new(fw: Arc<Framework>, limits: Limits, roots: roots::Roots) -> WebSocket {
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
        WebSocket {
            shared: Arc::new(Shared::new(fw, limits, roots)),
            builder,
        }
    }

    /// Answers an admitted client's upgrade: the handshake, after which the client is served
    /// on its own until it leaves, falls too far behind, or `stop` is cancelled.
    pub async fn upgrade(
        &self,
        req: http::Request<hyper::body::Incoming>,
        stop: &CancellationToken,
    ) -> Result<Response, BoxError> {
        // Each client has its own stop handle (a slow client is stopped alone) that the
        // server's stop also triggers.
        let (conn_stop, conn_handle): (StopHandle, ServerHandle) = stop_channel();
        let (stopper, stop) = (conn_handle.clone(), stop.clone());
        tokio::spawn(async move {
            tokio::select! {
                _ = stop.cancelled() => { let _ = stopper.stop(); }
                _ = stopper.clone().stopped() => {}
            }
        });
        let offered_protocol = req
            .headers()
            .get(http::header::SEC_WEBSOCKET_PROTOCOL)
            .is_some();
        let module = Connection::new(self.shared.clone(), conn_handle).module();
        let mut service = self.builder.clone().build(module, conn_stop);
        let mut response = tower::Service::call(&mut service, req).await?;
        if offered_protocol && response.status() == http::StatusCode::SWITCHING_PROTOCOLS {
            // A browser that offered subprotocols needs one chosen, or it fails.
            response.headers_mut().insert(
                http::header::SEC_WEBSOCKET_PROTOCOL,
                http::HeaderValue::from_static(PROTOCOL),
            );
        }
        Ok(response)
    }
}

/// The subprotocol the WebSocket answers with when the client offered it (a browser offers
/// it with the token as a second one).
pub const PROTOCOL: &str = "genai";

/// Whether a request asks to upgrade to a WebSocket.
pub fn is_upgrade<B>(req: &http::Request<B>) -> bool {
    jsonrpsee::server::ws::is_upgrade_request(req)
}
