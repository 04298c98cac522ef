//! The AWS event-stream decoder (Bedrock) on any bytes in pieces: never a panic.
#![no_main]

#[path = "pieces.rs"]
mod pieces;

use futures::StreamExt;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(body) = pieces::body(data) else {
        return;
    };
    let events = genai_core::provider::aws::event_stream::events("fuzz", body);
    futures::executor::block_on(events.for_each(|_| futures::future::ready(())));
});
