//! The gateway benchmark's upstream: an OpenAI Chat Completions server on loopback, on hyper
//! with keep-alive, that answers every `POST` at once with the same short reply, whole (one
//! `chat.completion`) or streamed (a role chunk, three content chunks, the finish chunk, the
//! usage chunk and `data: [DONE]`, each its own frame) when the body says `"stream":true`. It
//! runs on its own thread and runtime so that its time is not the load generator's. It only
//! answers: it never reads the request beyond the `stream` flag, so it costs next to nothing
//! and the difference between going to it directly and through a gateway is the gateway's.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;

/// The model the upstream names in its answers.
pub const MODEL: &str = "gpt-bench";

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// Starts the upstream on a free loopback port with `threads` runtime threads; it serves until
/// the program ends.
pub fn start(threads: usize) -> Result<SocketAddr, String> {
    let listener =
        std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| format!("upstream bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads.max(1))
        .thread_name("upstream")
        .enable_all()
        .build()
        .map_err(|e| format!("upstream runtime: {e}"))?;
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
            loop {
                let Ok((socket, _)) = listener.accept().await else {
                    continue;
                };
                let _ = socket.set_nodelay(true);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(answer);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(socket), service)
                        .await;
                });
            }
        });
    });
    Ok(addr)
}

async fn answer(
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Body>, Infallible> {
    // A collector's OTLP export: taken whole, answered with an empty (protobuf) success.
    let traces = req.uri().path() == "/v1/traces";
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    if traces {
        let taken = hyper::Response::builder()
            .header("content-type", "application/x-protobuf")
            .body(Full::new(Bytes::new()).boxed());
        return Ok(taken.expect("a valid response"));
    }
    let stream = memchr(&body, b"\"stream\":true") || memchr(&body, b"\"stream\": true");
    let response = if stream {
        let frames = streamed_frames()
            .into_iter()
            .map(|f| Ok::<_, Infallible>(Frame::data(f)));
        hyper::Response::builder()
            .header("content-type", "text/event-stream")
            .body(StreamBody::new(futures::stream::iter(frames)).boxed())
    } else {
        hyper::Response::builder()
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(whole())).boxed())
    };
    Ok(response.expect("a valid response"))
}

fn memchr(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn whole() -> String {
    serde_json::json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1_700_000_000u64, "model": MODEL,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hello from the bench upstream."},
                     "finish_reason": "stop", "logprobs": null}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}
    })
    .to_string()
}

fn streamed_frames() -> Vec<Bytes> {
    let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
        serde_json::json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000u64,
            "model": MODEL, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut events = vec![chunk(
        serde_json::json!({"role": "assistant", "content": ""}),
        serde_json::Value::Null,
    )];
    for piece in ["Hello ", "from the ", "bench upstream."] {
        events.push(chunk(
            serde_json::json!({"content": piece}),
            serde_json::Value::Null,
        ));
    }
    events.push(chunk(serde_json::json!({}), serde_json::json!("stop")));
    events.push(serde_json::json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_700_000_000u64,
        "model": MODEL, "choices": [], "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}}));
    let mut frames: Vec<Bytes> = events
        .into_iter()
        .map(|e| Bytes::from(format!("data: {e}\n\n")))
        .collect();
    frames.push(Bytes::from_static(b"data: [DONE]\n\n"));
    frames
}
