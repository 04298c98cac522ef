//! The operator's routes of `genai serve`: `/healthz` (the process serves) and `/readyz` (the
//! history answers a query and its schema is this genai's, and so does the shared store of
//! `[store] url` when there is one) without a token, for a load
//! balancer or an orchestrator; `/metrics` (`genai_gateway::metrics`, Prometheus' text format)
//! with the metrics token or the serve token; and the listener of `[serve] metrics_address`,
//! which serves these routes alone and `/metrics` without a token, for a private network.
//!
//! It owns these three paths. It must never answer another path (the router's gate admits
//! those), nor say in an answer anything but "ok", why it is not ready, or the metrics.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::{auth, router::refuse};
use genai_core::store::Store;
use genai_gateway::body::{self, HttpResponse};

/// How long `/readyz` waits for the history before it says it is not ready.
const READY_WITHIN: Duration = Duration::from_secs(5);

/// What the operator's routes need.
pub(crate) struct Ops {
    pub(crate) store: Arc<Store>,
    /// The gateway's gate, which knows whether its shared store is ready.
    pub(crate) access: Arc<genai_gateway::Access>,
    /// The bearer token `/metrics` takes besides the serve token (`[serve] metrics_token`).
    pub(crate) metrics_token: Option<String>,
    pub(crate) serve_token: String,
}

/// Whether `path` is one of the operator's routes.
pub(crate) fn is_ops(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics")
}

impl Ops {
    /// The answer to an operator's route (see [`is_ops`]); `/metrics` without a token when
    /// `open` (the metrics listener), else with the metrics token or the serve token.
    pub(crate) async fn answer<B>(&self, req: &http::Request<B>, open: bool) -> HttpResponse {
        if !matches!(*req.method(), http::Method::GET | http::Method::HEAD) {
            return refuse(
                http::StatusCode::METHOD_NOT_ALLOWED,
                "this route takes GET only",
            );
        }
        match req.uri().path() {
            "/healthz" => refuse(http::StatusCode::OK, "ok\n"),
            "/readyz" => self.ready().await,
            "/metrics" if open || self.may_read_metrics(req) => {
                let mut r = HttpResponse::new(body::full(genai_gateway::metrics::encode()));
                r.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    http::HeaderValue::from_static(genai_gateway::metrics::CONTENT_TYPE),
                );
                r
            }
            "/metrics" => refuse(
                http::StatusCode::UNAUTHORIZED,
                "a bearer token is needed: [serve] metrics_token, or the serve token (genai serve --print-token)",
            ),
            _ => refuse(http::StatusCode::NOT_FOUND, "no such route"),
        }
    }

    fn may_read_metrics<B>(&self, req: &http::Request<B>) -> bool {
        let authorization = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        auth::has_token(authorization, None, &self.serve_token)
            || self
                .metrics_token
                .as_deref()
                .is_some_and(|t| auth::has_token(authorization, None, t))
    }

    /// 200 `ready` when the history answers within [`READY_WITHIN`] at this genai's schema,
    /// else 503 with the reason.
    async fn ready(&self) -> HttpResponse {
        let store = self.store.clone();
        let asked = async {
            let local = tokio::task::spawn_blocking(move || store.ready()).await?;
            Ok::<_, tokio::task::JoinError>(match self.access.shared_ready().await {
                Some(Err(e)) => Err(e),
                _ => local,
            })
        };
        let why = match tokio::time::timeout(READY_WITHIN, asked).await {
            Ok(Ok(Ok(()))) => return refuse(http::StatusCode::OK, "ready\n"),
            Ok(Ok(Err(e))) => e.message,
            Ok(Err(e)) => format!("the history's check failed: {e}"),
            Err(_) => format!(
                "the history did not answer within {} s",
                READY_WITHIN.as_secs()
            ),
        };
        tracing::warn!("not ready: {why}");
        refuse(
            http::StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}\n"),
        )
    }
}

/// Serves the operator's routes alone on `listener` (`[serve] metrics_address`), `/metrics`
/// without a token, until `stop`.
pub(crate) async fn serve_alone(
    listener: TcpListener,
    ops: Arc<Ops>,
    read_timeout: Duration,
    stop: CancellationToken,
) {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(read_timeout);
    loop {
        let socket = tokio::select! {
            s = listener.accept() => s,
            _ = stop.cancelled() => break,
        };
        let socket = match socket {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!("the metrics listener could not accept: {e}");
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(10)) => continue,
                    _ = stop.cancelled() => break,
                }
            }
        };
        let ops = ops.clone();
        let svc = hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let ops = ops.clone();
            async move {
                let answer = if is_ops(req.uri().path()) {
                    ops.answer(&req, true).await
                } else {
                    refuse(
                        http::StatusCode::NOT_FOUND,
                        "this address serves /metrics, /healthz and /readyz only",
                    )
                };
                Ok::<_, std::convert::Infallible>(answer)
            }
        });
        let conn = http.serve_connection(TokioIo::new(socket), svc);
        let stop = stop.clone();
        tokio::spawn(async move {
            tokio::pin!(conn);
            let ended = tokio::select! {
                r = &mut conn => r,
                _ = stop.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = ended {
                tracing::debug!("a metrics connection ended: {e}");
            }
        });
    }
}
