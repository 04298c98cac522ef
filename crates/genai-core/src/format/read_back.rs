//! What genai reads of an openai-chat answer, for the tests of a crate that writes one (the
//! local engine, `genai-local`): a stream's text deltas and reply, and a whole body's reply
//! with the note on a reply cut short, as the agent takes them.
//!
//! It owns nothing but these two readings, through the openai-chat decoder unchanged. Built
//! for tests only (the `testing` feature): it must never be used to read an answer in genai.

use super::openai_chat::OpenAiChat;
use super::{ModelConfiguration, ModelReply, StreamEvent};
use crate::error::Result;

/// The text deltas of these events' data, in order, and the reply they end in.
pub fn openai_chat_stream(model: &str, events: &[String]) -> Result<(Vec<String>, ModelReply)> {
    let mut decoder = ModelConfiguration::new(&OpenAiChat, model).decoder();
    let mut deltas = Vec::new();
    for data in events {
        deltas.extend(decoder.feed(&StreamEvent::data(data.as_str()))?);
    }
    Ok((deltas, decoder.finish()?))
}

/// The reply of a whole body and, when it was cut short, the note the agent adds (its finish
/// reason then the one clients know, `length`).
pub fn openai_chat_body(model: &str, body: &[u8]) -> Result<(ModelReply, Option<String>)> {
    let mut reply = ModelConfiguration::new(&OpenAiChat, model).extract(body)?;
    let note = reply.cut_short();
    Ok((reply, note))
}
