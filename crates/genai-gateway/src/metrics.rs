//! What `genai serve`'s `/metrics` shows Prometheus: the gateway's requests, errors, requests
//! in flight, their durations and times to first token, tokens in and out and spend, each by
//! API, model and key name; retries and cooldowns by model and deployment; the shared
//! database's pool (connections in use, idle, the most) and its failures; and the build. The
//! families live in one registry for the process ([`encode`] writes them in Prometheus' text
//! format, version 0.0.4), fed where each request's row is recorded (`ledger.rs`), so counting
//! is no second pass over a request.
//!
//! It owns the families, their names and labels, and a cap on the model names a label may
//! take. It must never put a key (only a key's name) nor a body in a label, and never make a
//! request wait: each count is an atomic add or a short lock of one family's map.

use std::collections::HashSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock, RwLock, Weak};
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};

use super::shared::SharedState;
use genai_core::store::GatewayRequest;

/// The `Content-Type` of [`encode`]'s text.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The most model names the `model` label takes; past them a new name is counted as `other`
/// (a caller naming a new `PROVIDER:MODEL` each time cannot grow the families without end).
const MODEL_NAMES: usize = 256;

/// The label of a model past [`MODEL_NAMES`].
const OTHER_MODEL: &str = "other";

/// Upper bounds of the duration buckets, in seconds: a cached answer to a long generation.
const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// A request's route, model and key.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Of {
    api: &'static str,
    /// The model asked for, once the gateway resolved it; empty when it was refused before.
    model: String,
    /// The virtual key's name, or `serve-token`.
    key: String,
}

/// A request by how it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Ended {
    api: &'static str,
    model: String,
    key: String,
    /// `2xx`, `4xx`, `5xx` or `cancelled` (the client left a stream).
    status: &'static str,
}

/// A failed request by its HTTP status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Failed {
    api: &'static str,
    model: String,
    key: String,
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ApiOnly {
    api: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Timed {
    api: &'static str,
    model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Deployed {
    model: String,
    deployment: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Deployment {
    deployment: String,
}

/// A state of the shared database's connections: `in_use`, `idle`, `max`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PoolConnections {
    state: &'static str,
}

type Timings = Family<Timed, Histogram, fn() -> Histogram>;

/// Every family, registered once.
struct Metrics {
    registry: Registry,
    requests: Family<Ended, Counter>,
    errors: Family<Failed, Counter>,
    in_flight: Family<ApiOnly, Gauge>,
    duration: Timings,
    first_token: Timings,
    input_tokens: Family<Of, Counter>,
    output_tokens: Family<Of, Counter>,
    spend: Family<Of, Counter<f64, AtomicU64>>,
    retries: Family<Deployed, Counter>,
    cooldowns: Family<Deployment, Counter>,
    pool: Family<PoolConnections, Gauge>,
    database_errors: Counter,
    /// The shared database whose pool is shown, while it is in use.
    shared: RwLock<Option<Weak<dyn SharedState>>>,
    /// The model names the label has taken.
    models: RwLock<HashSet<String>>,
}

fn timings() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("genai");
        let m = Metrics {
            registry: Registry::default(),
            requests: Family::default(),
            errors: Family::default(),
            in_flight: Family::default(),
            duration: Family::new_with_constructor(timings),
            first_token: Family::new_with_constructor(timings),
            input_tokens: Family::default(),
            output_tokens: Family::default(),
            spend: Family::default(),
            retries: Family::default(),
            cooldowns: Family::default(),
            pool: Family::default(),
            database_errors: Counter::default(),
            shared: RwLock::new(None),
            models: RwLock::default(),
        };
        let info = Info::new(vec![("version", env!("CARGO_PKG_VERSION"))]);
        registry.register("build", "The version of genai serving", info);
        let gw = registry.sub_registry_with_prefix("gateway");
        gw.register(
            "requests",
            "Gateway requests by API, model, key name and status class",
            m.requests.clone(),
        );
        gw.register(
            "errors",
            "Gateway requests answered with an HTTP error, by API, model, key name and status code",
            m.errors.clone(),
        );
        gw.register(
            "requests_in_flight",
            "Gateway requests being answered now, streams included, by API",
            m.in_flight.clone(),
        );
        gw.register_with_unit(
            "request_duration",
            "Time from a gateway request's arrival to its answer's last byte, by API and model",
            Unit::Seconds,
            m.duration.clone(),
        );
        gw.register_with_unit(
            "time_to_first_token",
            "Time from a streamed gateway request's arrival to its first token, by API and model",
            Unit::Seconds,
            m.first_token.clone(),
        );
        gw.register(
            "input_tokens",
            "Tokens the models read for gateway requests, by API, model and key name",
            m.input_tokens.clone(),
        );
        gw.register(
            "output_tokens",
            "Tokens the models wrote for gateway requests, by API, model and key name",
            m.output_tokens.clone(),
        );
        gw.register(
            "spend_usd",
            "What gateway requests cost in US dollars where the model's price is known, by API, model and key name",
            m.spend.clone(),
        );
        gw.register(
            "retries",
            "Requests to a deployment sent again after it failed, by model and deployment",
            m.retries.clone(),
        );
        gw.register(
            "cooldowns",
            "Times a deployment was set aside for a while after failing, by deployment",
            m.cooldowns.clone(),
        );
        let db = registry.sub_registry_with_prefix("database");
        db.register(
            "pool_connections",
            "The shared database's connections ([store] url): in_use, idle, and max (the most the pool opens)",
            m.pool.clone(),
        );
        db.register(
            "errors",
            "Gateway calls on the shared database that failed (unreachable, timed out, refused)",
            m.database_errors.clone(),
        );
        Metrics { registry, ..m }
    }

    /// The label of `model`: itself while the cap has room, else [`OTHER_MODEL`].
    fn model_label(&self, model: &str) -> String {
        let known = |s: &HashSet<String>| s.contains(model);
        if known(&self.models.read().unwrap_or_else(|e| e.into_inner())) {
            return model.to_string();
        }
        let mut models = self.models.write().unwrap_or_else(|e| e.into_inner());
        if known(&models) || models.len() < MODEL_NAMES {
            models.insert(model.to_string());
            return model.to_string();
        }
        OTHER_MODEL.to_string()
    }
}

fn metrics() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

/// Shows `state`'s connection pool from now on (the gateway's start on a shared database).
pub(crate) fn watch_pool(state: &Arc<dyn SharedState>) {
    *metrics().shared.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::downgrade(state));
}

/// Counts a failed call on the shared database.
pub(crate) fn database_failed() {
    metrics().database_errors.inc();
}

/// Every family in Prometheus' text format (version 0.0.4; [`CONTENT_TYPE`]).
pub fn encode() -> String {
    let m = metrics();
    let shared = m.shared.read().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(state) = shared.and_then(|w| w.upgrade()) {
        let pool = state.pool();
        for (state, n) in [
            ("in_use", pool.in_use),
            ("idle", pool.idle),
            ("max", pool.max),
        ] {
            m.pool
                .get_or_create(&PoolConnections { state })
                .set(n as i64);
        }
    }
    let mut out = String::with_capacity(8192);
    if let Err(e) =
        prometheus_client::encoding::prometheus_text::encode(&mut out, &metrics().registry)
    {
        tracing::warn!("the metrics could not be written: {e}");
    }
    out
}

/// Counts a request sent again to `deployment` of `model` after a failure (the router of
/// `[serve.models]` deployments calls it).
pub fn retried(model: &str, deployment: &str) {
    let m = metrics();
    let labels = Deployed {
        model: m.model_label(model),
        deployment: deployment.to_string(),
    };
    m.retries.get_or_create(&labels).inc();
}

/// Counts `deployment` set aside after failing (the router calls it).
pub fn cooled_down(deployment: &str) {
    let labels = Deployment {
        deployment: deployment.to_string(),
    };
    metrics().cooldowns.get_or_create(&labels).inc();
}

/// A request of `api` in flight, until dropped.
pub(crate) struct InFlight(&'static str);

impl InFlight {
    pub(crate) fn start(api: &'static str) -> InFlight {
        metrics().in_flight.get_or_create(&ApiOnly { api }).inc();
        InFlight(api)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        metrics()
            .in_flight
            .get_or_create(&ApiOnly { api: self.0 })
            .dec();
    }
}

/// The class of a row's status: `2xx`, `4xx`, `5xx`, or `cancelled`.
fn class(status: &str) -> &'static str {
    match status.as_bytes().first() {
        Some(b'1' | b'2' | b'3') => "2xx",
        Some(b'4') => "4xx",
        Some(b'5') => "5xx",
        _ => "cancelled",
    }
}

/// Counts a recorded request of `api` (its row's status, usage and cost), which took `took`,
/// its first token `first_token` after it came when it was streamed; `model` is the model
/// asked for once resolved.
pub(crate) fn recorded(
    api: &'static str,
    model: Option<&str>,
    row: &GatewayRequest,
    took: Duration,
    first_token: Option<Duration>,
) {
    let m = metrics();
    let model = model.map(|n| m.model_label(n)).unwrap_or_default();
    let status = class(&row.status);
    let ended = Ended {
        api,
        model,
        key: row.key_name.clone(),
        status,
    };
    m.requests.get_or_create(&ended).inc();
    let Ended { model, key, .. } = ended;
    let timed = Timed {
        api,
        model: model.clone(),
    };
    m.duration.get_or_create(&timed).observe(took.as_secs_f64());
    if let Some(first) = first_token {
        m.first_token
            .get_or_create(&timed)
            .observe(first.as_secs_f64());
    }
    if matches!(status, "4xx" | "5xx") {
        let failed = Failed {
            api,
            model: model.clone(),
            key: key.clone(),
            code: row.status.clone(),
        };
        m.errors.get_or_create(&failed).inc();
    }
    let of = Of { api, model, key };
    if let Some(n) = row.input_tokens.filter(|n| *n > 0) {
        m.input_tokens.get_or_create(&of).inc_by(n);
    }
    if let Some(n) = row.output_tokens.filter(|n| *n > 0) {
        m.output_tokens.get_or_create(&of).inc_by(n);
    }
    if let Some(cost) = row.cost.filter(|c| c.is_finite() && *c > 0.0) {
        m.spend.get_or_create(&of).inc_by(cost);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recorded_request_is_counted_by_api_model_key_and_class_and_keys_stay_names() {
        let row = GatewayRequest {
            key_name: "team-a".into(),
            status: "429".into(),
            input_tokens: Some(0),
            ..GatewayRequest::default()
        };
        recorded(
            "unit-api",
            Some("unit-model"),
            &row,
            Duration::from_millis(3),
            None,
        );
        let ok = GatewayRequest {
            key_name: "team-a".into(),
            status: "200".into(),
            input_tokens: Some(11),
            output_tokens: Some(5),
            cost: Some(0.25),
            ..GatewayRequest::default()
        };
        let first = Some(Duration::from_millis(2));
        recorded(
            "unit-api",
            Some("unit-model"),
            &ok,
            Duration::from_millis(4),
            first,
        );
        let text = encode();
        let labels = "api=\"unit-api\",model=\"unit-model\",key=\"team-a\"";
        for line in [
            format!("genai_gateway_requests_total{{{labels},status=\"4xx\"}} 1"),
            format!("genai_gateway_requests_total{{{labels},status=\"2xx\"}} 1"),
            format!("genai_gateway_errors_total{{{labels},code=\"429\"}} 1"),
            format!("genai_gateway_input_tokens_total{{{labels}}} 11"),
            format!("genai_gateway_output_tokens_total{{{labels}}} 5"),
            format!("genai_gateway_spend_usd_total{{{labels}}} 0.25"),
            "genai_gateway_request_duration_seconds_count{api=\"unit-api\",model=\"unit-model\"} 2"
                .to_string(),
            "genai_gateway_time_to_first_token_seconds_count{api=\"unit-api\",model=\"unit-model\"} 1"
                .to_string(),
        ] {
            assert!(text.lines().any(|l| l == line), "no {line} in:\n{text}");
        }
    }

    #[test]
    fn a_request_in_flight_is_counted_until_it_ends() {
        let gauge = || {
            let text = encode();
            text.lines()
                .find_map(|l| l.strip_prefix("genai_gateway_requests_in_flight{api=\"flight\"} "))
                .map(|v| v.to_string())
        };
        let held = InFlight::start("flight");
        assert_eq!(gauge().as_deref(), Some("1"));
        drop(held);
        assert_eq!(gauge().as_deref(), Some("0"));
    }

    #[test]
    fn past_the_cap_a_new_model_name_is_other() {
        let m = Metrics::new();
        for i in 0..MODEL_NAMES {
            assert_eq!(m.model_label(&format!("m{i}")), format!("m{i}"));
        }
        assert_eq!(m.model_label("one-more"), OTHER_MODEL);
        assert_eq!(m.model_label("m0"), "m0", "a known name keeps its label");
    }

    #[test]
    fn retries_and_cooldowns_are_counted_by_deployment() {
        retried("unit-retry-model", "east");
        cooled_down("east-unit");
        let text = encode();
        assert!(text.contains(
            "genai_gateway_retries_total{model=\"unit-retry-model\",deployment=\"east\"} 1"
        ));
        assert!(text.contains("genai_gateway_cooldowns_total{deployment=\"east-unit\"} 1"));
    }
}
