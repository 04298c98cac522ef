//! The JSON Schemas of the protocol (from the method table, `methods.rs`), the message model,
//! the config file and `genai ask`'s event stream, generated from the Rust types. `schemas/` holds them committed; a test fails when they drift.
//! This module only lists types; it must never hand-write a schema. The one hand-written
//! schema, `plugin-manifest.json` (a contract for module authors), lives beside them and is
//! named in [`HAND_WRITTEN`].

use schemars::{schema_for, JsonSchema};
use serde_json::Value;

use super::protocol::Event;

fn s<T: JsonSchema>() -> Value {
    serde_json::to_value(schema_for!(T)).unwrap_or(Value::Null)
}

/// Schemas in `schemas/` written by hand, not generated.
pub const HAND_WRITTEN: &[&str] = &["plugin-manifest.json"];

/// Every schema by file name (without `.json`), in a stable order: the message model, the
/// config file, each method's params and result from `METHODS`,
/// every notification in one, and the event stream's lines.
pub fn all() -> Vec<(String, Value)> {
    let mut all = vec![
        ("message".to_string(), s::<genai_core::message::Message>()),
        ("config".to_string(), s::<genai_core::config::Config>()),
    ];
    all.extend(super::methods::schemas());
    all.push(("notifications".to_string(), s::<Event>()));
    all.push((
        "stream-event".to_string(),
        s::<genai_protocol::events::StreamLine<genai_core::message::Usage>>(),
    ));
    all
}

/// The schema text as committed: pretty JSON with its keys sorted (whatever order the maps keep)
/// and a final newline.
pub fn render(v: &Value) -> String {
    let mut text = serde_json::to_string_pretty(&sorted(v)).unwrap_or_default();
    text.push('\n');
    text
}

/// `v` with every object's keys in alphabetical order.
fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}
