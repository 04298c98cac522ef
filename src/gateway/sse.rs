//! Server-sent events as `genai serve` writes them: one event's frame, and the HTTP answer
//! whose body is a stream of frames (the gateway's streamed replies and the warm local route).
//!
//! It owns the framing only. It must never decide what an event says, nor buffer a stream:
//! each frame goes out as it comes, and dropping the body drops the stream behind it (which is
//! how a client that goes away cancels the request upstream).

use bytes::Bytes;
use futures::{Stream, StreamExt};
use jsonrpsee::server::{HttpBody, HttpResponse};

use crate::format::StreamEvent;

/// One server-sent event: its type when it has one, and each line of its data.
pub fn frame(e: &StreamEvent) -> Bytes {
    let mut out = String::new();
    if let Some(t) = &e.event {
        out.push_str("event: ");
        out.push_str(t);
        out.push('\n');
    }
    for line in e.data.split('\n') {
        out.push_str("data: ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// A `200 text/event-stream` answer sending `frames` as they come.
pub fn response(frames: impl Stream<Item = Bytes> + Send + 'static) -> HttpResponse {
    let frames = frames.map(|f| Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(f)));
    let mut r = HttpResponse::new(HttpBody::new(http_body_util::StreamBody::new(frames)));
    let headers = r.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_is_one_frame_with_each_data_line_prefixed() {
        let plain = frame(&StreamEvent::data("{\"a\":1}"));
        assert_eq!(&plain[..], b"data: {\"a\":1}\n\n");
        let typed = frame(&StreamEvent {
            event: Some("genai.progress".into()),
            data: "one\ntwo".into(),
        });
        assert_eq!(
            &typed[..],
            b"event: genai.progress\ndata: one\ndata: two\n\n"
        );
    }
}
