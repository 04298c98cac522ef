//! The body of what `genai serve` answers over plain HTTP (the gateway, the warm route, the
//! page): whole bytes, nothing, or a stream of frames, as one boxed type, so the front door
//! answers with any of them. It owns the type and its makers; it must never read or write
//! what a body says.

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http_body_util::{BodyExt, Empty, Full, StreamBody};

/// What a body's stream may fail with (the front door's and hyper's error type).
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An answer's body.
pub type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, BoxError>;

/// An HTTP answer.
pub type HttpResponse = http::Response<Body>;

/// A body of these bytes.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// An empty body.
pub fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

/// A body sending `frames` as they come; dropping it drops the stream.
pub(crate) fn stream(frames: impl Stream<Item = Bytes> + Send + 'static) -> Body {
    let frames = frames.map(|f| Ok::<_, BoxError>(hyper::body::Frame::data(f)));
    StreamBody::new(frames).boxed_unsync()
}
