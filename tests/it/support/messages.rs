//! Reading a list of chat messages as the product sends it to a provider or keeps it in a
//! conversation's history. It only reads JSON; it never checks what a test expects.

use serde_json::Value;

/// The `role` of every message of a JSON list, in order.
pub fn roles(messages: &Value) -> Vec<&str> {
    messages
        .as_array()
        .unwrap_or_else(|| panic!("not a list of messages: {messages}"))
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect()
}
