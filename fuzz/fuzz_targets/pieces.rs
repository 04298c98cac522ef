//! What the stream decoders' targets share: the input's first byte is the size of the pieces
//! the rest arrives in, as a network would cut a body.

use bytes::Bytes;
use genai_core::provider::ByteStream;

/// The body of `data` (after its first byte) as a stream of pieces; `None` for empty input.
pub fn body(data: &[u8]) -> Option<ByteStream> {
    let (&piece, data) = data.split_first()?;
    let pieces: Vec<_> = data
        .chunks(usize::from(piece).max(1))
        .map(|c| Ok(Bytes::copy_from_slice(c)))
        .collect();
    Some(Box::pin(futures::stream::iter(pieces)))
}
