//! Request ids echoed byte for byte. JSON-RPC requires the response's `id` to be the request's;
//! `serde_json` reads a number beyond 64-bit integers (`18446744073709551616`) or with a
//! spelling of its own (`1.50`) as a float and would write it back changed.
//!
//! Such an id is swapped, on input, for a stand-in string that carries its text after a marker
//! unique to this process, and the stand-in is swapped back for the text in every outgoing
//! frame. It owns only that swap: it must never touch an id that prints as it was written
//! (strings, ordinary integers), which is almost every id.

use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

pub(crate) struct RawIds {
    /// The stand-in's marker, as the Rust string and as it is written in JSON.
    marker: String,
    written: String,
    /// Whether a stand-in was ever made (else outgoing frames are not searched).
    used: AtomicBool,
}

#[derive(Deserialize)]
struct IdOf<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
}

impl Default for RawIds {
    fn default() -> Self {
        let marker = format!("\u{1}genai-id-{:016x}:", fastrand::u64(..));
        let written = serde_json::to_string(&marker).unwrap_or_default();
        let written = written.trim_end_matches('"').to_string();
        RawIds {
            marker,
            written,
            used: AtomicBool::new(false),
        }
    }
}

impl RawIds {
    /// Swaps the ids of `msg` (a message or a batch, read from `frame`) that would not be
    /// written back as they came for stand-ins.
    pub(crate) fn protect(&self, frame: &[u8], msg: &mut Value) {
        let changed = |v: &Value| matches!(v.get("id"), Some(Value::Number(n)) if !(n.is_i64() || n.is_u64()));
        match msg {
            Value::Object(_) if changed(msg) => {
                if let Ok(raw) = serde_json::from_slice::<IdOf>(frame) {
                    self.swap(msg, raw.id);
                }
            }
            Value::Array(items) if items.iter().any(changed) => {
                if let Ok(raws) = serde_json::from_slice::<Vec<IdOf>>(frame) {
                    for (item, raw) in items.iter_mut().zip(raws) {
                        if changed(item) {
                            self.swap(item, raw.id);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    fn swap(&self, msg: &mut Value, raw: Option<&RawValue>) {
        let (Some(raw), Some(id)) = (raw, msg.get_mut("id")) else {
            return;
        };
        if serde_json::to_string(id).ok().as_deref() != Some(raw.get()) {
            *id = Value::String(format!("{}{}", self.marker, raw.get()));
            self.used.store(true, Ordering::Relaxed);
        }
    }

    /// `frame` with every stand-in replaced by the id's own text.
    pub(crate) fn restore(&self, frame: Bytes) -> Bytes {
        if !self.used.load(Ordering::Relaxed) {
            return frame;
        }
        let Ok(text) = std::str::from_utf8(&frame) else {
            return frame;
        };
        if !text.contains(&self.written) {
            return frame;
        }
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        while let Some(at) = rest.find(&self.written) {
            out.push_str(&rest[..at]);
            let after = &rest[at + self.written.len()..];
            // A number's text has no quote: the stand-in ends at the next one.
            let end = after.find('"').unwrap_or(after.len());
            out.push_str(&after[..end]);
            rest = &after[(end + 1).min(after.len())..];
        }
        out.push_str(rest);
        Bytes::from(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_serde_would_change_come_back_as_written() {
        let ids = RawIds::default();
        for raw in [
            "18446744073709551616",
            "12345678901234567890123",
            "1.50",
            "1e3",
            "-0",
        ] {
            let frame = format!(r#"{{"jsonrpc":"2.0","id":{raw},"method":"X"}}"#);
            let mut msg: Value = serde_json::from_str(&frame).unwrap();
            ids.protect(frame.as_bytes(), &mut msg);
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": msg["id"], "result": {}});
            let out = ids.restore(Bytes::from(answer.to_string()));
            let out = std::str::from_utf8(&out).unwrap();
            assert!(out.contains(&format!(r#""id":{raw},"#)), "{raw}: {out}");
        }
        // A batch: each member's own id.
        let frame = r#"[{"id":1.0e2,"method":"A"},{"id":7,"method":"B"},{"id":0.10,"method":"C"}]"#;
        let mut msg: Value = serde_json::from_str(frame).unwrap();
        ids.protect(frame.as_bytes(), &mut msg);
        assert_eq!(msg[1]["id"], 7);
        let out = ids.restore(Bytes::from(msg.to_string()));
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"[{"id":1.0e2,"method":"A"},{"id":7,"method":"B"},{"id":0.10,"method":"C"}]"#
        );
    }

    #[test]
    fn ordinary_ids_are_left_alone() {
        let ids = RawIds::default();
        let frame = r#"{"id":42,"method":"X"}"#;
        let mut msg: Value = serde_json::from_str(frame).unwrap();
        ids.protect(frame.as_bytes(), &mut msg);
        assert_eq!(msg["id"], 42);
        let same = Bytes::from_static(b"{\"id\":\"\\u0001genai-id-x:5\"}");
        assert_eq!(ids.restore(same.clone()), same);
    }
}
