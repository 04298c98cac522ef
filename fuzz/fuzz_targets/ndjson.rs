//! The NDJSON framing on any bytes in pieces: never a panic, never a line over the limit.
#![no_main]

#[path = "pieces.rs"]
mod pieces;

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(body) = pieces::body(data) else {
        return;
    };
    let events = genai_core::provider::ndjson::events(body, "fuzz", 4096);
    futures::executor::block_on(events.for_each(|e| {
        if let Ok(e) = e {
            assert!(e.data.len() <= 4096);
        }
        futures::future::ready(())
    }));
});
