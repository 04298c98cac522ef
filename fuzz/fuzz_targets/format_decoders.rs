//! Every format's response decoders on any input: the first byte picks the format, the rest is
//! a whole body for `extract` and, split on NUL bytes, the events of a stream (`type\tdata` when
//! a tab is there) for the stream decoder. Never a panic; errors are fine.
#![no_main]

use genai_core::format::{StreamEvent, ALL};
use libfuzzer_sys::fuzz_target;
use serde_json::Map;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let format = ALL[usize::from(pick) % ALL.len()];
    let parameters = Map::new();
    let _ = format.extract(&parameters, body);
    let mut decoder = format.decoder(&parameters);
    for raw in body.split(|b| *b == 0) {
        let text = String::from_utf8_lossy(raw);
        let event = match text.split_once('\t') {
            Some((kind, data)) => StreamEvent {
                event: Some(kind.to_string()),
                data: data.to_string(),
            },
            None => StreamEvent::data(text.into_owned()),
        };
        if decoder.feed(&event).is_err() {
            return;
        }
        let _ = decoder.take_tool_call_deltas();
    }
    let _ = decoder.finish();
});
