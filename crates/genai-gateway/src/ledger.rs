//! Who made a gateway request and what it cost: the [`Caller`] the gate admitted (a virtual
//! key or the serve token, its client), filled in as the request runs (the model asked, the
//! model that served it, the reply's usage), and written as one row of the history when the
//! answer is whole, when a stream ends, or when the request is dropped before (`cancelled`). Rows go
//! through a channel to a background writer that stores them in batches (those that came
//! within [`GATHER`] of the first), one transaction each, so a request never waits on
//! SQLite; what a row cost is added to its key's spending as it is queued, so budgets are
//! checked against memory. On a shared store ([`SharedState`]) the rows go there with their
//! costs charged in the same transaction, and a served answer's end waits until its row is
//! stored (the writer then gathers nothing more): a replica killed at any moment loses no
//! answered request's row or charge, and every replica's next check sees the charge. Each
//! recorded request is counted for `/metrics` as its row is queued (`metrics.rs`), and counted
//! in flight from its start until then.
//!
//! It owns the recording. It must never store a key (only a key's name), never store bodies
//! but for a key kept with them, and never store half of a reply: a stream the client dropped
//! is recorded without its reply.

use std::sync::Arc;
use std::time::Instant;

use crate::HttpResponse;
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot, Notify};

use super::keys::Key;
use super::metrics::{self, InFlight};
use super::routing::Routes;
use super::shared::SharedState;
use super::ApiError;
use genai_core::error::Result;
use genai_core::format::ModelReply;
use genai_core::pricing::Price;
use genai_core::session::RequestModel;
use genai_core::store::{now_ms, GatewayRequest, Store};

/// The key name of requests made with the serve token.
pub const SERVE_TOKEN: &str = "serve-token";

/// Rows waiting for the writer; past this a row is dropped (and said in the log) rather than
/// make a request wait.
const QUEUED: usize = 16_384;

/// The most rows written in one transaction.
const BATCH: usize = 512;

/// The name under which each recorded route's requests are stored.
pub(crate) fn api_of(route: &str) -> Option<&'static str> {
    match route {
        "/v1/chat/completions" => Some("openai-chat"),
        "/v1/messages" => Some("anthropic-messages"),
        "/v1/responses" => Some("openai-responses"),
        "/v1/embeddings" => Some("openai-embeddings"),
        _ => None,
    }
}

/// What the writer is sent. Rows are the common message and move once into the channel's
/// slots: boxing them would add an allocation to every request for nothing.
#[allow(clippy::large_enum_variant)]
enum Message {
    Row(GatewayRequest),
    /// A row whose answer ends once it is stored.
    Stored(GatewayRequest, oneshot::Sender<()>),
    Flush(oneshot::Sender<()>),
}

/// Where the rows are stored.
#[derive(Clone)]
enum Sink {
    /// The SQLite history.
    Local(Arc<Store>),
    /// The replicas' shared store.
    Shared(Arc<dyn SharedState>),
}

impl Sink {
    async fn store(&self, rows: Vec<GatewayRequest>) -> Result<()> {
        match self {
            Sink::Local(store) => {
                let store = store.clone();
                tokio::task::spawn_blocking(move || store.record_gateway_requests(&rows))
                    .await
                    .map_err(|e| genai_core::error::Error::internal(e.to_string()))?
            }
            Sink::Shared(state) => state.record(rows).await.inspect_err(|_| {
                metrics::database_failed();
            }),
        }
    }
}

/// The queue of rows to the background writer.
#[derive(Clone)]
pub(crate) struct Ledger {
    tx: mpsc::Sender<Message>,
    /// Whether a served answer waits for its row (on the shared store).
    durable: bool,
    /// Ends the writer's gathering early: a flush is waiting, or a batch is full.
    hurry: Arc<Notify>,
}

impl Ledger {
    /// Starts the writer of `store`'s rows.
    pub(crate) fn start(store: Arc<Store>) -> Ledger {
        Ledger::to(Sink::Local(store), false)
    }

    /// Starts the writer of rows to the shared store, which charges their costs too.
    pub(crate) fn start_shared(state: Arc<dyn SharedState>) -> Ledger {
        Ledger::to(Sink::Shared(state), true)
    }

    fn to(sink: Sink, durable: bool) -> Ledger {
        let (tx, rx) = mpsc::channel(QUEUED);
        let hurry = Arc::new(Notify::new());
        tokio::spawn(write(sink, rx, hurry.clone()));
        Ledger { tx, durable, hurry }
    }

    /// Queues a row, adding its cost to its key's spending. On the shared store a served
    /// request's row is stored at once, and the answer it gives back ends when it is.
    fn record(&self, row: GatewayRequest, key: Option<&Key>) -> Option<oneshot::Receiver<()>> {
        if let Some(key) = key {
            key.used(row.input_tokens.unwrap_or(0) + row.output_tokens.unwrap_or(0));
        }
        if let (Some(key), Some(cost)) = (key, row.cost) {
            key.spend(cost);
        }
        let (message, stored) = if self.durable && row.status == "200" {
            let (done, stored) = oneshot::channel();
            (Message::Stored(row, done), Some(stored))
        } else {
            (Message::Row(row), None)
        };
        if self.tx.try_send(message).is_err() {
            tracing::warn!("the gateway's request log is behind: a request's row is dropped");
            return None;
        }
        if stored.is_some() || QUEUED - self.tx.capacity() >= BATCH {
            self.hurry.notify_one();
        }
        stored
    }

    /// Waits until every row queued so far is stored.
    pub(crate) async fn flush(&self) {
        let (done, wait) = oneshot::channel();
        if self.tx.send(Message::Flush(done)).await.is_ok() {
            self.hurry.notify_one();
            let _ = wait.await;
        }
    }
}

/// How long the writer gathers rows after the first of a batch before it stores them: one
/// transaction (and one wake of a blocking thread) per this much time under load, instead of
/// one per request, which took a tenth of `genai serve`'s CPU. Meanwhile the rows wait in the
/// channel without waking the writer (waking it for each took a task wake and a timer per
/// request). A flush, a full batch, or a row whose answer waits for it ends the gathering at
/// once (on the shared store, rows that come while a batch is written form the next one).
const GATHER: std::time::Duration = std::time::Duration::from_millis(100);

async fn write(sink: Sink, mut rx: mpsc::Receiver<Message>, hurry: Arc<Notify>) {
    let mut inbox = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut inbox, BATCH).await > 0 {
        let flushing = |inbox: &[Message]| {
            inbox
                .iter()
                .any(|m| matches!(m, Message::Flush(_) | Message::Stored(..)))
        };
        if inbox.len() < BATCH && !flushing(&inbox) {
            tokio::select! {
                () = tokio::time::sleep(GATHER) => {}
                () = hurry.notified() => {}
            }
            // The channel keeps order: the rows queued before a flush are in hand.
            while inbox.len() < BATCH {
                match rx.try_recv() {
                    Ok(m) => inbox.push(m),
                    Err(_) => break,
                }
            }
        }
        let (mut rows, mut flushed) = (Vec::new(), Vec::new());
        for m in inbox.drain(..) {
            match m {
                Message::Row(r) => rows.push(r),
                Message::Stored(r, done) => {
                    rows.push(r);
                    flushed.push(done);
                }
                Message::Flush(done) => flushed.push(done),
            }
        }
        if !rows.is_empty() {
            let n = rows.len();
            if let Err(e) = sink.store(rows).await {
                tracing::warn!("cannot store {n} gateway requests: {}", e.message);
            }
        }
        flushed.into_iter().for_each(|done| {
            let _ = done.send(());
        });
    }
}

/// One admitted request: who makes it, then what it asked and what answered, until its row is
/// recorded.
pub struct Caller {
    key: Option<Arc<Key>>,
    ledger: Ledger,
    started: Instant,
    row: GatewayRequest,
    price: Option<Price>,
    /// Whether its row went to a stream's [`Tally`] (or is not to be recorded).
    handed_over: bool,
    /// The serve's routers, which choose among a name's deployments.
    routes: Arc<Routes>,
    /// The API it is recorded under (empty: not recorded).
    api: &'static str,
    /// Whether the model asked for was resolved (so it may be a metric's label).
    chosen: bool,
    /// When a stream's first token went out, after the request came.
    first_token: Option<std::time::Duration>,
    /// Counts it in flight until it is recorded or dropped.
    in_flight: Option<InFlight>,
}

impl Caller {
    /// A request admitted with `key` (`None`: the serve token) from `client` (its User-Agent),
    /// to be routed by `routes`.
    pub(crate) fn new(
        key: Option<Arc<Key>>,
        ledger: Ledger,
        routes: &Arc<Routes>,
        client: Option<&str>,
    ) -> Caller {
        let row = GatewayRequest {
            created_at: now_ms(),
            key_name: key
                .as_ref()
                .map_or(SERVE_TOKEN, |k| k.row.name.as_str())
                .to_string(),
            client: client.map(|c| c.chars().take(200).collect()),
            ..GatewayRequest::default()
        };
        genai_core::telemetry::spans::caller(&row.key_name);
        Caller {
            key,
            ledger,
            started: Instant::now(),
            row,
            price: None,
            handed_over: true,
            routes: routes.clone(),
            api: "",
            chosen: false,
            first_token: None,
            in_flight: None,
        }
    }

    /// The serve's routers.
    pub(super) fn routes(&self) -> &Routes {
        &self.routes
    }

    /// Records the request under `api` when it ends ([`Caller::finish`]).
    pub(super) fn recorded_as(&mut self, api: &'static str) {
        self.row.api = api.to_string();
        self.handed_over = false;
        self.api = api;
        self.in_flight = Some(InFlight::start(api));
    }

    /// Whether its request and reply bodies are kept (a key created with `--keep-bodies`).
    fn keeps_bodies(&self) -> bool {
        self.key.as_ref().is_some_and(|k| k.row.keep_bodies)
    }

    /// Keeps the request's body with its row, when its key says so; gives it back.
    pub(super) fn keep(&mut self, body: Bytes) -> Bytes {
        if self.keeps_bodies() {
            self.row.request_body = Some(String::from_utf8_lossy(&body).into_owned());
        }
        body
    }

    /// The key the request was admitted with (`None`: the serve token).
    pub(super) fn key(&self) -> Option<&Key> {
        self.key.as_deref()
    }

    /// Notes the model the request asked for.
    pub(super) fn asked_for(&mut self, model: &str) {
        self.row.model = Some(model.to_string());
    }

    /// Notes the model chosen for the request; who answered, and at what price, is noted
    /// once the turn knows ([`Caller::served`]).
    pub(super) fn chose(&mut self, model: &RequestModel) {
        let (provider, id) = (&model.provider.name, &model.configuration().model);
        self.row.served_by = Some(super::turn::served_name(provider, id));
        self.chosen = true;
    }

    /// Notes who answered (a fallback of the agent asked for, maybe), and prices the reply at
    /// its model's price.
    pub(super) fn served(&mut self, served: &super::turn::Served) {
        if !served.model.is_empty() {
            self.row.served_by = Some(served.model.clone());
            self.price = served.price;
        }
    }

    /// Notes a whole reply and its answer's body.
    pub(super) fn whole(&mut self, reply: &ModelReply, body: &[u8]) {
        self.usage_of(reply);
        if self.keeps_bodies() {
            self.row.reply_body = Some(String::from_utf8_lossy(body).into_owned());
        }
    }

    /// Notes an embeddings answer: who answered, its input tokens and cost, its body when kept.
    pub(super) fn embedded(&mut self, e: &genai_core::session::Embedded, body: &[u8]) {
        self.row.served_by = Some(super::turn::served_name(&e.provider, &e.model));
        self.row.input_tokens = e.embeddings.input_tokens;
        self.row.output_tokens = e.embeddings.input_tokens.map(|_| 0);
        self.row.cost = e.cost;
        if self.keeps_bodies() {
            self.row.reply_body = Some(String::from_utf8_lossy(body).into_owned());
        }
    }

    fn usage_of(&mut self, reply: &ModelReply) {
        if let Some(u) = &reply.usage {
            self.row.input_tokens = Some(u.input_tokens);
            self.row.output_tokens = Some(u.output_tokens);
            self.row.cost = self.price.map(|p| p.cost(u));
        }
    }

    /// Hands the row over to a stream, which records it when it ends or is dropped; its
    /// first byte goes out now.
    pub(super) fn stream(&mut self) -> Tally {
        let recorded = !self.handed_over;
        self.handed_over = true;
        let mut row = std::mem::take(&mut self.row);
        let first_token = self.started.elapsed();
        row.first_byte_ms = Some(first_token.as_millis() as u64);
        Tally {
            caller: Caller {
                key: self.key.clone(),
                ledger: self.ledger.clone(),
                started: self.started,
                row,
                price: self.price,
                handed_over: !recorded,
                routes: self.routes.clone(),
                api: self.api,
                chosen: self.chosen,
                first_token: Some(first_token),
                in_flight: self.in_flight.take(),
            },
        }
    }

    /// Records the request with the answer's status (unless a stream took it) and gives the
    /// answer back.
    pub(crate) fn finish(mut self, response: HttpResponse) -> HttpResponse {
        if self.handed_over {
            return response;
        }
        self.row.first_byte_ms = Some(self.started.elapsed().as_millis() as u64);
        match self.record(response.status().as_str().to_string()) {
            Some(stored) => response.map(|body| ended_by(stored, body)),
            None => response,
        }
    }

    /// Records the row; when its answer is to wait for it, what says it is stored.
    fn record(&mut self, status: String) -> Option<oneshot::Receiver<()>> {
        self.handed_over = true;
        let mut row = std::mem::take(&mut self.row);
        row.status = status;
        let took = self.started.elapsed();
        row.latency_ms = took.as_millis() as u64;
        let model = row.model.as_deref().filter(|_| self.chosen);
        metrics::recorded(self.api, model, &row, took, self.first_token);
        self.in_flight = None;
        self.ledger.record(row, self.key.as_deref())
    }
}

/// `body`, whose frames follow once `stored` says its row is stored (or the writer gave up).
fn ended_by(stored: oneshot::Receiver<()>, body: crate::body::Body) -> crate::body::Body {
    use futures::StreamExt;
    use http_body_util::BodyExt;
    let wait = futures::stream::once(async move {
        let _ = stored.await;
    })
    .filter_map(|()| async { None });
    let frames = wait.chain(http_body_util::BodyStream::new(body));
    http_body_util::StreamBody::new(frames).boxed_unsync()
}

/// The row of a streamed answer, recorded when the stream ends or, `cancelled`, when it is
/// dropped before (its [`Caller`]'s drop).
pub(crate) struct Tally {
    caller: Caller,
}

impl Tally {
    /// Whether the reply is to be kept with the row.
    pub(crate) fn keeps_bodies(&self) -> bool {
        self.caller.keeps_bodies()
    }

    /// Records the end of the stream: the whole reply (and `body`, the reply as one answer,
    /// when kept), or the error that ended it. When the stream's last pieces are to wait for
    /// the row, what says it is stored.
    pub(crate) fn done(
        &mut self,
        result: &Result<ModelReply>,
        body: Option<Bytes>,
    ) -> Option<oneshot::Receiver<()>> {
        if self.caller.handed_over {
            return None;
        }
        match result {
            Ok(reply) => {
                self.caller.usage_of(reply);
                self.caller.row.reply_body = body.map(|b| String::from_utf8_lossy(&b).into_owned());
                self.caller.record("200".into())
            }
            Err(e) => {
                let status = ApiError::of(e, None).status;
                self.caller.record(status.as_str().to_string())
            }
        }
    }
}

impl Drop for Caller {
    /// A request dropped before its end (its client left, or the serve stopped past its
    /// grace) is recorded `cancelled`, without its reply.
    fn drop(&mut self) {
        if !self.handed_over {
            self.row.reply_body = None;
            let _ = self.record("cancelled".into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    async fn rows(store: &Store, ledger: &Ledger) -> Vec<GatewayRequest> {
        ledger.flush().await;
        let mut rows = store.gateway_requests(None, 100).unwrap();
        rows.reverse();
        rows
    }

    #[tokio::test]
    async fn a_whole_answer_a_finished_stream_and_dropped_ones_are_one_row_each() {
        let store = Arc::new(Store::in_memory().unwrap());
        let ledger = Ledger::start(store.clone());

        let mut whole = Caller::new(None, ledger.clone(), &Arc::default(), Some("sdk/1.0"));
        whole.recorded_as("openai-chat");
        whole.row.model = Some("m".into());
        let answer = super::super::json_response(http::StatusCode::OK, &Value::Null);
        assert_eq!(whole.finish(answer).status(), http::StatusCode::OK);

        let mut streamed = Caller::new(None, ledger.clone(), &Arc::default(), None);
        streamed.recorded_as("anthropic-messages");
        let mut tally = streamed.stream();
        let reply = ModelReply::assistant(
            Vec::new(),
            Some(genai_core::message::Usage {
                input_tokens: 7,
                output_tokens: 3,
                ..Default::default()
            }),
            None,
            None,
        );
        tally.done(&Ok(reply), None);
        drop(tally);
        // The route's own `finish` after a stream took the row records nothing more.
        let _ = streamed.finish(super::super::json_response(
            http::StatusCode::OK,
            &Value::Null,
        ));

        let mut dropped = Caller::new(None, ledger.clone(), &Arc::default(), None);
        dropped.recorded_as("openai-chat");
        drop(dropped.stream());

        let mut left = Caller::new(None, ledger.clone(), &Arc::default(), None);
        left.recorded_as("openai-responses");
        drop(left);

        let mut unrecorded = Caller::new(None, ledger.clone(), &Arc::default(), None);
        let _ = unrecorded.stream();
        let _ = unrecorded.finish(super::super::json_response(
            http::StatusCode::OK,
            &Value::Null,
        ));

        let rows = rows(&store, &ledger).await;
        let seen: Vec<_> = rows
            .iter()
            .map(|r| (r.api.as_str(), r.status.as_str(), r.key_name.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("openai-chat", "200", SERVE_TOKEN),
                ("anthropic-messages", "200", SERVE_TOKEN),
                ("openai-chat", "cancelled", SERVE_TOKEN),
                ("openai-responses", "cancelled", SERVE_TOKEN),
            ]
        );
        assert_eq!(rows[0].client.as_deref(), Some("sdk/1.0"));
        assert_eq!(rows[1].input_tokens, Some(7));
        assert!(rows[1].first_byte_ms.is_some());
        assert_eq!(rows[2].input_tokens, None);
        assert!(rows.iter().all(|r| r.request_body.is_none()));
    }
}
