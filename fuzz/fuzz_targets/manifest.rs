//! The plugin manifest validator on any JSON text: never a panic.
#![no_main]

use genai_core::tools::manifest::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(value) = serde_json::from_slice::<serde_json::Value>(data) {
        if let Ok(m) = Manifest::parse(&value) {
            let _ = m.tools("fuzz");
        }
    }
});
