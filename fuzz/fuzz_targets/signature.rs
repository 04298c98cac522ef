//! The plugin function signature parser on any text: never a panic, and a parsed signature
//! always has a JSON Schema.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(sig) = genai_core::tools::signature::parse(text) {
            assert!(sig.input_schema().is_object());
        }
    }
});
