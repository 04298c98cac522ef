//! Reading the gateway's answers as its tests check them: the typed server-sent events of the
//! Responses and Messages APIs, and an error body checked to be OpenAI's shape.

use serde_json::Value;

/// The events of a streamed answer whose events are typed (`event: NAME` then `data: JSON`),
/// each checked to carry its name as its data's `type`: (name, data) in order.
pub fn typed_events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|e| !e.trim().is_empty())
        .map(|e| {
            let (head, data) = e.split_once('\n').unwrap_or_else(|| panic!("{e:?}"));
            let name = head.strip_prefix("event: ").unwrap().to_string();
            let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
            assert_eq!(data["type"], name.as_str(), "{e}");
            (name, data)
        })
        .collect()
}

/// The error of an answer, checked to be OpenAI's shape (a message, a type, a param and a
/// code, the last two maybe null).
pub fn openai_error(v: &Value) -> &Value {
    let e = &v["error"];
    assert!(e["message"].is_string(), "no error message: {v}");
    assert!(e["type"].is_string(), "no error type: {v}");
    assert!(e.get("param").is_some() && e.get("code").is_some(), "{v}");
    e
}
