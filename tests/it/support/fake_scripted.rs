//! A scripted loopback server for the generic `http` provider, whose wire format is the
//! test's to choose: each request is answered by a handler (a closure over the recorded
//! request) or by the next queued reply, as a whole body, a chunked stream of pieces (each its
//! own chunk, optionally cut before the terminating chunk), or a stall. It records every
//! request (method, target, headers, body, arrival time). The HTTP/1.1 server is `server.rs`;
//! one request per connection (`Connection: close`).

use std::time::{Duration, Instant};

use super::server::{Exchange, FakeServer, RecordedRequest, Wire};

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub target: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub at: Instant,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        super::http1::header(&self.headers, name)
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }
}

/// How the body of a reply is sent.
#[derive(Debug, Clone)]
pub enum Body {
    /// With a Content-Length.
    Full(Vec<u8>),
    /// Chunked, one chunk per piece, `delay` before each; `cut` drops the connection before the
    /// terminating chunk.
    Chunks {
        pieces: Vec<Vec<u8>>,
        delay: Duration,
        cut: bool,
    },
    /// Headers never come; the connection is held until the client goes or 20 s pass.
    Stall,
}

#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Body,
}

impl Reply {
    pub fn json(status: u16, body: &serde_json::Value) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type".into(), "application/json".into())],
            body: Body::Full(body.to_string().into_bytes()),
        }
    }

    pub fn raw(status: u16, content_type: &str, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![("Content-Type".into(), content_type.into())],
            body: Body::Full(body.as_bytes().to_vec()),
        }
    }

    /// Server-sent events: each `(event type, data)` in its own chunk.
    pub fn sse(events: &[(Option<&str>, String)], cut: bool) -> Reply {
        let pieces = events
            .iter()
            .map(|(ev, data)| {
                let mut s = String::new();
                if let Some(ev) = ev {
                    s.push_str(&format!("event: {ev}\n"));
                }
                s.push_str(&format!("data: {data}\n\n"));
                s.into_bytes()
            })
            .collect();
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), "text/event-stream".into())],
            body: Body::Chunks {
                pieces,
                delay: Duration::from_millis(5),
                cut,
            },
        }
    }

    /// Newline-delimited JSON, one line per chunk.
    pub fn ndjson(lines: &[serde_json::Value], cut: bool) -> Reply {
        Reply {
            status: 200,
            headers: vec![("Content-Type".into(), "application/x-ndjson".into())],
            body: Body::Chunks {
                pieces: lines
                    .iter()
                    .map(|l| format!("{l}\n").into_bytes())
                    .collect(),
                delay: Duration::from_millis(5),
                cut,
            },
        }
    }

    pub fn with_header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }
}

type Handler = Box<dyn Fn(&Recorded) -> Reply + Send + Sync>;

/// Replies scripted by the test: queued ones first, then the handler's.
pub struct Scripted {
    handler: Handler,
}

/// A running scripted server; dropping it stops it. The server's own methods (requests) are
/// reached through it.
pub struct FakeHttp(FakeServer<Scripted>);

impl std::ops::Deref for FakeHttp {
    type Target = FakeServer<Scripted>;

    fn deref(&self) -> &FakeServer<Scripted> {
        &self.0
    }
}

impl FakeHttp {
    /// Starts on a free loopback port; `handler` answers every request the queue does not.
    pub fn start(handler: impl Fn(&Recorded) -> Reply + Send + Sync + 'static) -> FakeHttp {
        let wire = Scripted {
            handler: Box::new(handler),
        };
        FakeHttp(FakeServer::listen(0, wire, None).expect("start the scripted server"))
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port())
    }

    /// The next request gets this reply instead of the handler's.
    pub fn push(&self, reply: Reply) {
        self.0.push(Some(reply));
    }
}

impl Wire for Scripted {
    /// A queued reply; `None`: the handler answers.
    type Behavior = Option<Reply>;
    type Record = Recorded;
    const NAME: &'static str = "scripted";

    fn inspect(&self, r: &RecordedRequest, _: Option<&str>) -> (Recorded, bool) {
        let record = Recorded {
            method: r.method.clone(),
            target: r.path.clone(),
            headers: r.headers.clone(),
            body: r.raw.clone(),
            at: r.at,
        };
        (record, true)
    }

    async fn answer(mut ex: Exchange<Self>) {
        let reply = match ex.behavior.take().flatten() {
            Some(reply) => reply,
            None => (ex.wire().handler)(&ex.record),
        };
        let mut head = format!("HTTP/1.1 {} X\r\nConnection: close\r\n", reply.status);
        for (k, v) in &reply.headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        match reply.body {
            Body::Full(bytes) => {
                head.push_str(&format!("Content-Length: {}\r\n\r\n", bytes.len()));
                let mut all = head.into_bytes();
                all.extend_from_slice(&bytes);
                if ex.write(&all).await {
                    ex.close().await;
                }
            }
            Body::Chunks { pieces, delay, cut } => {
                head.push_str("Transfer-Encoding: chunked\r\n\r\n");
                if !ex.write(head.as_bytes()).await {
                    return;
                }
                for piece in pieces {
                    tokio::time::sleep(delay).await;
                    if !ex.chunk(&piece).await {
                        return;
                    }
                }
                if !cut {
                    ex.end_chunked().await;
                }
                // Cut: dropping the socket ends the body without its terminating chunk.
            }
            // Held until the client gives up, at most 20 s.
            Body::Stall => {
                let _ = tokio::time::timeout(Duration::from_secs(20), ex.stall()).await;
            }
        }
    }
}
