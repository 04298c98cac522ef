//! The daemon's framing codec on any bytes, fed in pieces whose sizes the input chooses: it
//! must never panic, never return a frame over the limit, and always consume what it reports.
#![no_main]

use bytes::BytesMut;
use genai_peer::framing::{Frame, FrameCodec, MAX_FRAME};
use libfuzzer_sys::fuzz_target;
use tokio_util::codec::Decoder;

fuzz_target!(|data: &[u8]| {
    let Some((&piece, data)) = data.split_first() else {
        return;
    };
    let piece = usize::from(piece).max(1);
    let mut codec = FrameCodec::default();
    let mut buf = BytesMut::new();
    for chunk in data.chunks(piece) {
        buf.extend_from_slice(chunk);
        while let Some(frame) = codec.decode(&mut buf).expect("the codec never fails") {
            if let Frame::Message(body) = frame {
                assert!(body.len() <= MAX_FRAME);
            }
        }
    }
    while let Some(_frame) = codec.decode_eof(&mut buf).expect("the codec never fails") {}
});
