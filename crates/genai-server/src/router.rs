//! The routes of `genai serve`, in the order a request is matched: the operator's routes
//! (`/healthz` and `/readyz` open to all, `/metrics` with its own token check: `ops.rs`), the
//! warm local model's route and the gateway's `/v1/` APIs (plain HTTP), MCP on `/mcp`, the
//! daemon's WebSocket (an upgrade), and the web chat page (any other plain request). Each other route
//! is admitted here first by the [`Gate`]: the serve token from an allowed origin, or for the
//! gateway the token or a virtual key within its limits; a gateway request runs in its span
//! (`genai_core::telemetry`), continuing the client's `traceparent`. It must never read a body (each route reads its own, within the
//! limit) nor answer for a route: it only chooses one, or refuses.

use std::sync::Arc;

use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{auth, ops, page, warm};
use genai_core::session::Framework;
use genai_core::telemetry::spans;
use genai_gateway::body::{self, HttpResponse};

/// Everything the routes answer with.
pub(crate) struct Router {
    pub(crate) gate: Gate,
    pub(crate) ops: Arc<ops::Ops>,
    pub(crate) web_root: Option<std::path::PathBuf>,
    pub(crate) ws: genai_rpc::ws::WebSocket,
    /// MCP over streamable HTTP on `/mcp`, for the serve token's holders.
    pub(crate) mcp: genai_mcp::http::HttpEndpoint,
    pub(crate) fw: Arc<Framework>,
    /// What a plain request's body may be.
    pub(crate) body: genai_gateway::BodyLimit,
    /// The server's stop, which also closes every WebSocket.
    pub(crate) stop: CancellationToken,
}

/// Who may come in.
pub(crate) struct Gate {
    pub(crate) token: String,
    pub(crate) origins: Vec<String>,
    /// The gateway's token and virtual keys.
    pub(crate) access: Arc<genai_gateway::Access>,
}

impl Router {
    /// The answer to a gateway request: the caller admitted, then the gateway's.
    async fn gateway(&self, req: http::Request<Incoming>) -> HttpResponse {
        let caller = match self.gate.check_api_client(&req).await {
            Ok(caller) => caller,
            Err(refused) => return refused,
        };
        genai_gateway::answer(req, &self.fw, self.body, caller).await
    }

    /// The answer to one request of a connection.
    pub(crate) async fn answer(&self, req: http::Request<Incoming>) -> HttpResponse {
        let upgrade = genai_rpc::ws::is_upgrade(&req);
        if !upgrade && ops::is_ops(req.uri().path()) {
            if !auth::origin_allowed(self.gate.origin(&req), &self.gate.origins) {
                return refuse(http::StatusCode::FORBIDDEN, FOREIGN_ORIGIN);
            }
            return self.ops.answer(&req, false).await;
        }
        if !upgrade && warm::is_warm(&req) {
            if let Some(refused) = self.gate.check_client(&req) {
                return refused;
            }
            return warm::answer(req, &self.fw, self.body).await;
        }
        if !upgrade && genai_gateway::is_gateway(&req) {
            // The request's span, the root of its trace or the child of the client's.
            let span = spans::request(req.method(), req.uri().path(), req.headers());
            let answer = self.gateway(req).instrument(span.clone()).await;
            spans::answered(&span, answer.status().as_u16());
            return answer;
        }
        if !upgrade && req.uri().path() == genai_mcp::http::PATH {
            if let Some(refused) = self.gate.check_client(&req) {
                return refused;
            }
            let answer = self.mcp.answer(req).await;
            return answer.map(|b| b.map_err(|never| match never {}).boxed_unsync());
        }
        if !upgrade {
            return page::answer(
                req.method(),
                req.uri().path(),
                req.headers(),
                self.web_root.as_deref(),
            );
        }
        if let Some(refused) = self.gate.check_client(&req) {
            return refused;
        }
        match self.ws.upgrade(req, &self.stop).await {
            Ok(handshake) => handshake.map(|b| b.boxed_unsync()),
            Err(e) => {
                tracing::warn!("a WebSocket could not start: {e}");
                refuse(
                    http::StatusCode::INTERNAL_SERVER_ERROR,
                    "the WebSocket could not start",
                )
            }
        }
    }
}

/// Why a foreign origin is refused.
const FOREIGN_ORIGIN: &str = "this origin may not connect (genai serve --allow-origin ORIGIN)";

impl Gate {
    /// The request's `Origin` header.
    fn origin<'r, B>(&self, req: &'r http::Request<B>) -> Option<&'r str> {
        req.headers()
            .get(http::header::ORIGIN)
            .and_then(|v| v.to_str().ok())
    }

    /// `None` when the request comes from an allowed origin with the token; else the refusal.
    fn check_client<B>(&self, req: &http::Request<B>) -> Option<HttpResponse> {
        let header =
            |name: http::header::HeaderName| req.headers().get(name).and_then(|v| v.to_str().ok());
        if !auth::origin_allowed(header(http::header::ORIGIN), &self.origins) {
            return Some(refuse(http::StatusCode::FORBIDDEN, FOREIGN_ORIGIN));
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

    /// The caller of a gateway request from an allowed origin with the token or a live
    /// virtual key (as a bearer token or `x-api-key`) within its limits; else the refusal in
    /// the gateway's error shape.
    async fn check_api_client<B>(
        &self,
        req: &http::Request<B>,
    ) -> Result<genai_gateway::Caller, HttpResponse> {
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

/// A plain-text answer.
pub(crate) fn refuse(status: http::StatusCode, why: impl Into<bytes::Bytes>) -> HttpResponse {
    let mut r = HttpResponse::new(body::full(why));
    *r.status_mut() = status;
    r
}
