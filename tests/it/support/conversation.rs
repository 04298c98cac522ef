//! The daemon's conversation protocol as the tests drive it, on top of the JSON-RPC client:
//! `Initialize`, `CreateConversation`, a message and its turn, the chunks and final answer a
//! turn sends, `Cancel` and the stored history. These steps only send and read; what a test
//! expects of the answers stays in the test (bar the few checks named on each step).

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::rpc_client::Daemon;

impl Daemon {
    /// `Initialize` as the client `client_name`, streaming or not; the daemon's answer.
    pub fn initialize(&mut self, client_name: &str, streaming: bool) -> Value {
        self.call(
            "Initialize",
            json!({"clientInfo": {"name": client_name, "version": "0"}, "capabilities": {"streaming": streaming}}),
        )
    }

    /// `CreateConversation` with `params`: the new conversation's id and the whole answer.
    pub fn create_conversation(&mut self, params: Value) -> (String, Value) {
        let conv = self.call("CreateConversation", params);
        let id = conv["conversationId"]
            .as_str()
            .unwrap_or_else(|| panic!("no conversationId in {conv}"))
            .to_string();
        (id, conv)
    }

    /// Sends `message` (a text or a message object) to a conversation with `OnNewMessage`; the
    /// turn id of the answer.
    pub fn send_message(
        &mut self,
        conversation_id: &str,
        message: impl serde::Serialize,
    ) -> String {
        let r = self.call(
            "OnNewMessage",
            json!({"conversationId": conversation_id, "message": message}),
        );
        r["turnId"]
            .as_str()
            .unwrap_or_else(|| panic!("no turnId in {r}"))
            .to_string()
    }

    /// Sends `message` and waits for the end of its turn: the turn id and the params of the
    /// final `OnFeatureResponse`.
    pub fn turn(
        &mut self,
        conversation_id: &str,
        message: impl serde::Serialize,
        timeout: Duration,
    ) -> (String, Value) {
        let turn_id = self.send_message(conversation_id, message);
        let fin = self.wait_final(&turn_id, timeout)["params"].clone();
        (turn_id, fin)
    }

    /// The stored messages of a conversation (`GetConversationHistory`, one page of 100).
    pub fn history(&mut self, conversation_id: &str) -> Vec<Value> {
        let r = self.call(
            "GetConversationHistory",
            json!({"conversationId": conversation_id, "pageSize": 100}),
        );
        r["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("no messages in {r}"))
            .clone()
    }

    /// Waits for the first `OnFeatureResponseChunk` of a turn.
    pub fn wait_first_chunk(&mut self, turn_id: &str, timeout: Duration) -> Value {
        self.wait_notification(
            |m| m["method"] == "OnFeatureResponseChunk" && m["params"]["turnId"] == turn_id,
            timeout,
        )
    }

    /// The `delta` of every `OnFeatureResponseChunk` of a turn received so far, in order; each
    /// chunk must carry one.
    pub fn streamed(&self, turn_id: &str) -> Vec<String> {
        self.log()
            .iter()
            .filter(|m| m["method"] == "OnFeatureResponseChunk" && m["params"]["turnId"] == turn_id)
            .map(|m| {
                m["params"]["delta"]
                    .as_str()
                    .unwrap_or_else(|| panic!("a chunk without a delta: {m}"))
                    .to_string()
            })
            .collect()
    }

    /// Indices in [`Daemon::log`] of the chunk notifications of a turn (with their deltas, ""
    /// when one has none) and of its final responses.
    pub fn turn_events(&self, turn_id: &str) -> (Vec<(usize, String)>, Vec<usize>) {
        let mut chunks = Vec::new();
        let mut finals = Vec::new();
        for (i, m) in self.log().iter().enumerate() {
            if m["params"]["turnId"] != turn_id {
                continue;
            }
            match m["method"].as_str() {
                Some("OnFeatureResponseChunk") => {
                    chunks.push((i, m["params"]["delta"].as_str().unwrap_or("").to_string()))
                }
                Some("OnFeatureResponse") if m["params"]["final"] == true => finals.push(i),
                _ => {}
            }
        }
        (chunks, finals)
    }

    /// `Cancel` of a conversation's running turn, which must say it cancelled one; its final
    /// `OnFeatureResponse` params and how long they took to come after the request.
    pub fn cancel_turn(
        &mut self,
        conversation_id: &str,
        turn_id: &str,
        timeout: Duration,
    ) -> (Value, Duration) {
        let asked = Instant::now();
        let r = self.call("Cancel", json!({"conversationId": conversation_id}));
        assert_eq!(r["cancelled"], true, "{r}");
        let fin = self.wait_final(turn_id, timeout)["params"].clone();
        (fin, asked.elapsed())
    }
}
