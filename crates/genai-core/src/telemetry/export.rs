//! The span exporter as genai runs it: the OTLP exporter, its failures (a collector down or
//! refusing) said on the log at most once a minute with how many batches were lost.
//!
//! It owns that reporting. It must never retry, block or fail anything but the batch (the
//! batch thread calls it, never a request).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{SpanData, SpanExporter};
use opentelemetry_sdk::Resource;

/// How often a failing collector is said on the log.
const SAY_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub(super) struct Reported<E> {
    inner: E,
    said: Mutex<Option<Instant>>,
    lost: AtomicU64,
}

impl<E> Reported<E> {
    pub(super) fn new(inner: E) -> Reported<E> {
        Reported {
            inner,
            said: Mutex::new(None),
            lost: AtomicU64::new(0),
        }
    }

    /// Counts a lost batch and says so when the last word is a minute old.
    fn failed(&self, why: &str) {
        let lost = self.lost.fetch_add(1, Ordering::Relaxed) + 1;
        let Ok(mut said) = self.said.lock() else {
            return;
        };
        if said.is_some_and(|at| at.elapsed() < SAY_EVERY) {
            return;
        }
        *said = Some(Instant::now());
        let why = crate::redact::redact(why);
        tracing::warn!("traces: the collector took no spans ({lost} batches lost so far): {why}");
    }
}

impl<E: SpanExporter> SpanExporter for Reported<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let done = self.inner.export(batch).await;
        if let Err(e) = &done {
            self.failed(&e.to_string());
        }
        done
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
