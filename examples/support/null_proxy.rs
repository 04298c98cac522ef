//! The gateway benchmark's floor: a proxy that only forwards. Each request's body goes to the
//! upstream as it came (same path, same headers that matter), and the upstream's answer comes
//! back as its bytes arrive, on the parts genai's gateway stands on (hyper's HTTP/1.1 server,
//! reqwest's pooled client, a multi-threaded tokio runtime). It reads nothing and decides
//! nothing, so what it adds over the direct cell is what one more loopback hop on these parts
//! costs on this machine; what genai adds beyond it is genai's own work.
//!
//! It runs in a process of its own, as genai and LiteLLM do (the bench starts itself again
//! with `--null-proxy UPSTREAM`), and prints `listening on ADDR` once it serves.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use futures::TryStreamExt;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::TokioIo;

type Body = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// Serves until the process is killed.
pub async fn serve(upstream: SocketAddr) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| format!("null proxy bind: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .map_err(|e| e.to_string())?;
    println!("listening on {addr}");
    loop {
        let Ok((socket, _)) = listener.accept().await else {
            continue;
        };
        let _ = socket.set_nodelay(true);
        let client = client.clone();
        tokio::spawn(async move {
            let service =
                hyper::service::service_fn(move |req| forward(req, upstream, client.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(socket), service)
                .await;
        });
    }
}

async fn forward(
    req: hyper::Request<hyper::body::Incoming>,
    upstream: SocketAddr,
    client: reqwest::Client,
) -> Result<hyper::Response<Body>, Infallible> {
    let (head, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes()) else {
        return Ok(status(http::StatusCode::BAD_REQUEST));
    };
    let url = format!("http://{upstream}{}", head.uri.path());
    let mut out = client.post(url).body(body);
    for name in [http::header::CONTENT_TYPE, http::header::AUTHORIZATION] {
        if let Some(v) = head.headers.get(&name) {
            out = out.header(name, v.clone());
        }
    }
    let Ok(answer) = out.send().await else {
        return Ok(status(http::StatusCode::BAD_GATEWAY));
    };
    let mut response = hyper::Response::builder().status(answer.status());
    if let Some(v) = answer.headers().get(http::header::CONTENT_TYPE) {
        response = response.header(http::header::CONTENT_TYPE, v.clone());
    }
    let frames = answer
        .bytes_stream()
        .map_ok(Frame::data)
        .map_err(std::io::Error::other);
    Ok(response
        .body(StreamBody::new(frames).boxed())
        .unwrap_or_else(|_| status(http::StatusCode::BAD_GATEWAY)))
}

fn status(code: http::StatusCode) -> hyper::Response<Body> {
    let mut r = hyper::Response::new(
        http_body_util::Empty::new()
            .map_err(|never: Infallible| match never {})
            .boxed(),
    );
    *r.status_mut() = code;
    r
}
