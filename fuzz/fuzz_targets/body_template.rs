//! The `http-template` body template engine on any template: never a panic; what renders
//! without error is checked as the format checks it.
#![no_main]

use genai_core::format::template::render;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Map, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(template) = std::str::from_utf8(data) else {
        return;
    };
    let mut values = Map::new();
    values.insert("prompt".into(), json!("a \"quoted\" prompt\n"));
    values.insert(
        "messages".into(),
        json!([{"role": "user", "content": "hi"}]),
    );
    values.insert("temperature".into(), json!(0.5));
    values.insert("x".into(), Value::Null);
    let _ = render(template, &values);
});
