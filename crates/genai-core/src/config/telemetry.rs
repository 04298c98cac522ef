//! `[telemetry]`: where genai sends its OpenTelemetry traces (OTLP over HTTP) and whether
//! they may carry the prompts and replies. The standard `OTEL_EXPORTER_OTLP_*` variables win
//! over the file, as every OpenTelemetry SDK reads them.
//!
//! It owns reading these settings. It must never start an exporter (`telemetry/` does) and
//! never let a header's value out unmasked (`Config::masked_toml` masks them: they carry the
//! collector's credentials).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The standard variables naming the collector: the traces' own URL, then the base URL that
/// `/v1/traces` is added to.
pub const ENDPOINT_ENV: [&str; 2] = [
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
];

/// `[telemetry]`: OpenTelemetry traces of gateway requests and turns.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TelemetryConfig {
    /// The collector's OTLP/HTTP base URL (`http://localhost:4318`; traces go to its
    /// `/v1/traces`). `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`)
    /// wins over it. Neither set: no traces, and nothing of OpenTelemetry runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub otlp_endpoint: Option<String>,
    /// Whether spans carry the messages sent to the model and its replies
    /// (`gen_ai.input.messages`, `gen_ai.output.messages`), genai's secrets masked. Off by
    /// default: spans carry names, models, token counts and timings only.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub content: bool,
    /// The traces' `service.name` (default `genai`; `OTEL_SERVICE_NAME` wins).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    /// Headers every export carries, such as the collector's credentials
    /// (`OTEL_EXPORTER_OTLP_HEADERS` adds to them). Masked by `genai config show`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

impl TelemetryConfig {
    /// Where traces go: the environment's URL as the SDK reads it (`None` here: the SDK takes
    /// it), else the file's base URL with `/v1/traces` added. `None` with `false`: no traces.
    pub fn endpoint(&self) -> (bool, Option<String>) {
        let set = |v: &str| std::env::var(v).is_ok_and(|u| !u.trim().is_empty());
        let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim() == "true");
        if disabled {
            return (false, None);
        }
        if ENDPOINT_ENV.iter().any(|v| set(v)) {
            return (true, None);
        }
        match self.otlp_endpoint.as_deref().map(str::trim) {
            Some(base) if !base.is_empty() => (true, Some(traces_url(base))),
            _ => (false, None),
        }
    }
}

/// A base URL's traces path, as the OTLP/HTTP spec adds it (kept when already there).
fn traces_url(base: &str) -> String {
    let base = base.trim_end_matches('/');
    match base.ends_with("/v1/traces") {
        true => base.to_string(),
        false => format!("{base}/v1/traces"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_gets_the_traces_path_once() {
        assert_eq!(traces_url("http://c:4318"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c:4318/"), "http://c:4318/v1/traces");
        assert_eq!(traces_url("http://c/v1/traces"), "http://c/v1/traces");
    }
}
