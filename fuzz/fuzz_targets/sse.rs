//! The SSE parser on any bytes in pieces: never a panic, never an event over the limit, and
//! the same events however the body is cut.
#![no_main]

use std::collections::VecDeque;

use genai_core::provider::sse::SseDecoder;
use libfuzzer_sys::fuzz_target;

const MAX_EVENT: usize = 4096;

fn events(data: &[u8], piece: usize) -> Result<Vec<(Option<String>, String)>, String> {
    let mut decoder = SseDecoder::new(MAX_EVENT);
    let mut out = VecDeque::new();
    for chunk in data.chunks(piece) {
        decoder.feed(chunk, &mut out).map_err(|e| e.message)?;
    }
    Ok(out.into_iter().map(|e| (e.event, e.data)).collect())
}

fuzz_target!(|data: &[u8]| {
    let Some((&piece, data)) = data.split_first() else {
        return;
    };
    let whole = events(data, data.len().max(1));
    let cut = events(data, usize::from(piece).max(1));
    if let (Ok(whole), Ok(cut)) = (&whole, &cut) {
        assert_eq!(whole, cut, "the events depend on how the body was cut");
        assert!(whole.iter().all(|(_, d)| d.len() <= MAX_EVENT));
    }
});
