//! OpenTelemetry traces: when a collector is configured (`[telemetry] otlp_endpoint` or the
//! standard `OTEL_EXPORTER_OTLP_ENDPOINT`), the spans genai opens with [`spans`] go over
//! OTLP/HTTP (protobuf) from a batch thread; the caller installs [`Telemetry::layer`] beside
//! its log layer and drops the [`Telemetry`] at exit, which flushes what is left within
//! [`FLUSH_WITHIN`].
//!
//! It owns starting and stopping the exporter and whether spans carry content. It must never
//! run anything when no collector is configured (no layer, no thread: spans stay disabled
//! and cost a branch), never make a request wait on the collector (spans are queued, the
//! queue is bounded, an export has [`EXPORT_WITHIN`]), and never let a prompt or reply into
//! a span unless `[telemetry] content = true`, and then through the redactor.

mod export;
pub mod propagate;
pub mod spans;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

use crate::config::telemetry::TelemetryConfig;

/// The target of genai's spans: the trace layer takes these and nothing else (the log layer
/// leaves them out).
pub const TARGET: &str = "genai_telemetry";

/// How long one export may take before it is given up (the collector is slow or gone).
pub const EXPORT_WITHIN: Duration = Duration::from_secs(3);

/// How long the exit waits for the last spans to go out.
pub const FLUSH_WITHIN: Duration = Duration::from_secs(4);

/// Spans waiting for export past this many are dropped, not held: memory stays bounded
/// while a collector is down.
const QUEUE: usize = 8192;

/// Whether spans carry the messages (`[telemetry] content`).
static CONTENT: AtomicBool = AtomicBool::new(false);

/// Whether spans may carry prompts and replies.
pub fn content() -> bool {
    CONTENT.load(Ordering::Relaxed)
}

/// The exporter while traces go out; dropping it flushes and stops it.
pub struct Telemetry {
    provider: SdkTracerProvider,
}

/// Starts exporting when a collector is configured: `None` when none is (nothing runs) or
/// the exporter cannot be built (said once on the log, at warn).
pub fn start(config: &TelemetryConfig) -> Option<Telemetry> {
    let (on, endpoint) = config.endpoint();
    if !on {
        return None;
    }
    config
        .headers
        .values()
        .for_each(|v| crate::redact::remember(v));
    if let Ok(headers) = std::env::var("OTEL_EXPORTER_OTLP_HEADERS") {
        headers
            .split(',')
            .filter_map(|kv| kv.split_once('=').map(|(_, v)| v))
            .for_each(crate::redact::remember);
    }
    // The exporter's client is reqwest's on rustls without a provider of its own (as the MCP
    // client's): ring, as everywhere in genai.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_timeout(EXPORT_WITHIN)
        .with_headers(config.headers.clone().into_iter().collect());
    if let Some(url) = &endpoint {
        builder = builder.with_endpoint(url);
    }
    let exporter = match builder.build() {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!("traces are off: the OTLP exporter could not start: {e}");
            return None;
        }
    };
    let batches = BatchConfigBuilder::default()
        .with_max_queue_size(QUEUE)
        .build();
    let processor = BatchSpanProcessor::builder(export::Reported::new(exporter))
        .with_batch_config(batches)
        .build();
    let mut resource = Resource::builder();
    if std::env::var_os("OTEL_SERVICE_NAME").is_none() {
        resource = resource.with_service_name(
            config
                .service_name
                .clone()
                .unwrap_or_else(|| "genai".to_string()),
        );
    }
    let provider = SdkTracerProvider::builder()
        .with_span_processor(processor)
        .with_resource(resource.build())
        .build();
    CONTENT.store(config.content, Ordering::Relaxed);
    Some(Telemetry { provider })
}

impl Telemetry {
    /// The layer that turns genai's spans ([`TARGET`]) into OpenTelemetry spans.
    pub fn layer<S>(&self) -> impl Layer<S> + Send + Sync + 'static
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.provider.tracer("genai"))
            .with_location(false)
            .with_threads(false)
            .with_level(false)
            .with_target(false)
            .with_tracked_inactivity(false)
            .with_filter(Targets::new().with_target(TARGET, tracing::Level::INFO))
    }
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        if let Err(e) = self.provider.shutdown_with_timeout(FLUSH_WITHIN) {
            tracing::warn!("the last spans may not have reached the collector: {e}");
        }
    }
}
