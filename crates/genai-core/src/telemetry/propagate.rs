//! W3C trace context on the wire: an incoming request's `traceparent` (and `tracestate`)
//! makes its span a child of the client's, and every request to a provider carries the
//! current span's, so the provider's own traces join genai's.
//!
//! It owns reading and writing those two headers. It must never write them when traces are
//! off (the current span is then disabled and has no context) nor carry anything else.

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_http::{HeaderExtractor, HeaderInjector};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Makes `span` a child of the trace the request's headers continue, when they name one.
pub fn continue_from(span: &tracing::Span, headers: &http::HeaderMap) {
    if span.is_disabled() || !headers.contains_key("traceparent") {
        return;
    }
    let parent = TraceContextPropagator::new().extract(&HeaderExtractor(headers));
    if parent.span().span_context().is_valid() {
        let _ = span.set_parent(parent);
    }
}

/// The current span's `traceparent` (and `tracestate`) added to `headers`; nothing when
/// traces are off.
pub fn inject_current(headers: &mut http::HeaderMap) {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return;
    }
    let cx = span.context();
    if cx.span().span_context().is_valid() {
        TraceContextPropagator::new().inject_context(&cx, &mut HeaderInjector(headers));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use tracing::Instrument;
    use tracing_subscriber::layer::SubscriberExt;

    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    fn incoming() -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        let parent = format!("00-{TRACE}-00f067aa0ba902b7-01");
        h.insert("traceparent", parent.parse().unwrap());
        h
    }

    /// What a request to a provider would carry, sent from within a gateway request's span.
    async fn sent_upstream() -> http::HeaderMap {
        let method = http::Method::POST;
        let span = crate::telemetry::spans::request(&method, "/v1/x", &incoming());
        async {
            let mut out = http::HeaderMap::new();
            inject_current(&mut out);
            out
        }
        .instrument(span)
        .await
    }

    #[tokio::test]
    async fn the_clients_trace_goes_on_upstream_under_genais_own_span() {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
        let traced = tracing_subscriber::registry().with(layer);
        let _on = tracing::subscriber::set_default(traced);
        let out = sent_upstream().await;
        let sent = out["traceparent"].to_str().unwrap();
        let parts: Vec<&str> = sent.split('-').collect();
        assert_eq!(parts[1], TRACE, "{sent}");
        assert_ne!(
            parts[2], "00f067aa0ba902b7",
            "genai's span, not the client's: {sent}"
        );
    }

    #[tokio::test]
    async fn with_traces_off_nothing_is_read_or_sent() {
        assert!(sent_upstream().await.is_empty());
    }
}
