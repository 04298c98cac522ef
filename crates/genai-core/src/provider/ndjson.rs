//! Newline-delimited JSON (Ollama, some `http` endpoints): the framing of a streamed body into
//! events, one per non-empty line, with a limit on a line's size.
//!
//! Built on `tokio-util`'s `LinesCodec`, which remembers how far it searched, so it is linear
//! in the input. It owns framing only: it must never read a line's JSON (the format does).

use futures::StreamExt;
use tokio_util::codec::{FramedRead, LinesCodec, LinesCodecError};
use tokio_util::io::StreamReader;

use super::{ByteStream, EventStream, StreamEvent};
use crate::error::Error;

/// The events of an NDJSON body; a line over `max_line` bytes is an error. `provider` names
/// the errors.
pub fn events(bytes: ByteStream, provider: &str, max_line: usize) -> EventStream {
    let provider = provider.to_string();
    let reader = StreamReader::new(bytes.map(|r| r.map_err(std::io::Error::other)));
    let lines = FramedRead::new(reader, LinesCodec::new_with_max_length(max_line));
    Box::pin(
        lines
            // A byte-order mark is not JSON: it is taken off a line's start (the lines are
            // whole and decoded, so one split over pieces is taken off too).
            .map(|r| {
                r.map(|l| match l.strip_prefix('\u{feff}') {
                    Some(rest) => rest.to_string(),
                    None => l,
                })
            })
            .filter(|r| futures::future::ready(!matches!(r, Ok(l) if l.trim().is_empty())))
            .map(move |r| {
                r.map(|data| StreamEvent { event: None, data })
                    .map_err(|e| match e {
                        LinesCodecError::Io(io) => match io.into_inner() {
                            // A transport error of the body, as the transport made it.
                            Some(inner) => match inner.downcast::<Error>() {
                                Ok(e) => *e,
                                Err(other) => Error::provider(format!("{provider}: {other}")),
                            },
                            None => Error::provider(format!("{provider}: the stream broke")),
                        },
                        LinesCodecError::MaxLineLengthExceeded => Error::provider(format!(
                            "{provider}: the provider's stream has a line over {max_line} bytes \
                             (max_event_bytes)"
                        )),
                    })
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(pieces: &[&'static [u8]], max: usize) -> Vec<Result<String, String>> {
        let bytes: ByteStream = Box::pin(futures::stream::iter(
            pieces
                .iter()
                .map(|p| Ok(bytes::Bytes::from_static(p)))
                .collect::<Vec<_>>(),
        ));
        futures::executor::block_on(
            events(bytes, "p", max)
                .map(|r| r.map(|e| e.data).map_err(|e| e.message))
                .collect(),
        )
    }

    #[test]
    fn lines_across_pieces_blank_lines_and_the_limit() {
        let got = read(&[b"{\"a\"", b":1}\n\n  \n{\"b\":2}\r\n", b"{\"c\":3}"], 100);
        assert_eq!(
            got,
            [
                Ok("{\"a\":1}".to_string()),
                Ok("{\"b\":2}".to_string()),
                Ok("{\"c\":3}".to_string())
            ]
        );
        let got = read(&[b"0123456789abcdef\n"], 8);
        assert!(
            matches!(&got[0], Err(m) if m.contains("over 8 bytes")),
            "{got:?}"
        );
    }

    #[test]
    fn a_bom_before_the_first_line_is_skipped_however_it_is_cut() {
        let whole: &[u8] = b"\xEF\xBB\xBF{\"a\":1}\n{\"b\":2}\n";
        for cut in 0..=whole.len() {
            let (head, tail) = whole.split_at(cut);
            let got = read(&[head.to_vec().leak(), tail.to_vec().leak()], 100);
            assert_eq!(
                got,
                [Ok("{\"a\":1}".to_string()), Ok("{\"b\":2}".to_string())],
                "cut at {cut}"
            );
        }
        assert_eq!(read(&[b"\xEF\xBB\xBF\n{}\n"], 100), [Ok("{}".to_string())]);
    }
}
