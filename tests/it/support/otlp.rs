//! An OpenTelemetry collector for the traces tests: `tests/otlp/receiver.py`, which decodes
//! what genai exports over OTLP/HTTP with OpenTelemetry's own protobuf types (the PyPI
//! package `opentelemetry-proto`, which `scripts/test.sh` installs and names in
//! GENAI_TEST_OTLP_PYTHON), its spans read back as JSON lines. Outside CI a missing package
//! skips the test, saying why.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

/// A running receiver, killed when dropped.
pub struct Receiver {
    child: Child,
    pub port: u16,
    spans: Arc<Mutex<Vec<Value>>>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Receiver {
    /// Starts one on a free loopback port; `None` (the test skipped) when the package is
    /// missing outside CI.
    pub fn start() -> Option<Receiver> {
        let path = super::python_sdk::find("opentelemetry.proto", "GENAI_TEST_OTLP_PYTHON")?;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/otlp/receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .env("PYTHONPATH", path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let port = first
            .strip_prefix("listening ")
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("unexpected first line of the receiver: {first:?}"));
        let spans = Arc::new(Mutex::new(Vec::new()));
        let seen = spans.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let span: Value = serde_json::from_str(&line).unwrap();
                seen.lock().unwrap().push(span);
            }
        });
        Some(Receiver { child, port, spans })
    }

    /// The OTLP/HTTP base URL genai is given.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Value> {
        self.spans.lock().unwrap().clone()
    }

    /// The spans of trace `trace_id` once `done` holds of them, within `within`.
    #[track_caller]
    pub fn trace_when(
        &self,
        trace_id: Option<&str>,
        within: Duration,
        done: impl Fn(&[Value]) -> bool,
    ) -> Vec<Value> {
        let of_trace = || {
            let spans = self.spans();
            spans
                .into_iter()
                .filter(|s| trace_id.is_none_or(|t| s["trace_id"] == t))
                .collect::<Vec<_>>()
        };
        super::poll::wait_until("the receiver has the spans", within, || done(&of_trace()));
        of_trace()
    }
}

/// The first span named `name` (its OpenTelemetry name), failing the test when none is.
#[track_caller]
pub fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no span named {name:?} in {spans:#?}"))
}

/// Whether a span named `name` is there.
pub fn has(spans: &[Value], name: &str) -> bool {
    spans.iter().any(|s| s["name"] == name)
}
