//! Completion from a model (`textDocument/completion` and `inlineCompletion`), off unless
//! `[lsp.completion] enabled`: a debounce (a request superseded by a newer one within the
//! delay asks nothing), a token cap, and the text before and after the cursor, as a
//! fill-in-the-middle prompt when the model has one (a local GGUF with FIM tokens), else as a
//! chat prompt. It must never block the editor: the editor's cancel drops the request, and the
//! prompt with it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use std::sync::Arc;

use super::actions::code_block;
use super::port::{self, LspPort};
use genai_core::config::lsp::LspConfig;
use genai_core::error::Result;
use genai_core::provider::Infill;
use genai_core::select::ModelChoice;
use genai_core::session::Framework;

/// Characters of the document before and after the cursor that the prompt shows.
const BEFORE: usize = 3000;
const AFTER: usize = 1000;

pub(crate) struct Completer {
    enabled: bool,
    model: Option<String>,
    debounce: Duration,
    max_tokens: u32,
    /// Numbers the requests, so a request knows when a newer one came.
    latest: AtomicU64,
}

impl Completer {
    pub(crate) fn new(settings: &LspConfig) -> Completer {
        let c = &settings.completion;
        Completer {
            enabled: c.enabled,
            model: c.model.clone(),
            debounce: Duration::from_millis(c.debounce_ms.unwrap_or(300)),
            max_tokens: c.max_tokens.unwrap_or(64),
            latest: AtomicU64::new(0),
        }
    }

    /// The text to insert at `cursor` (a byte offset of `text`), or `None` when completion
    /// is off, a newer request came within the debounce, or the model has nothing to add.
    pub(crate) async fn complete(
        &self,
        fw: &Arc<Framework>,
        port: &Arc<LspPort>,
        default_model: ModelChoice,
        doc: Completing<'_>,
    ) -> Result<Option<Completed>> {
        if !self.enabled {
            return Ok(None);
        }
        let me = self.latest.fetch_add(1, Ordering::SeqCst) + 1;
        tokio::time::sleep(self.debounce).await;
        if self.latest.load(Ordering::SeqCst) != me {
            return Ok(None);
        }
        let before = tail(&doc.text[..doc.cursor], BEFORE);
        let after = head(&doc.text[doc.cursor..], AFTER);
        let model = self.model.clone().map_or(default_model, ModelChoice::Named);
        let infill = Infill {
            prefix: before.to_string(),
            suffix: after.to_string(),
            max_tokens: self.max_tokens,
            // Greedy: the same text around the cursor gives the same completion.
            temperature: Some(0.0),
        };
        if let Some(middle) = fw.fill_in_middle(&model, &infill).await? {
            // The middle goes exactly at the cursor: its leading whitespace is the indent.
            let found = !middle.text.trim().is_empty();
            return Ok(found.then_some(Completed {
                text: middle.text,
                prompt: Prompt::FillInTheMiddle,
            }));
        }
        let prompt = chat_prompt(doc.file_name, doc.language_id, before, after);
        let reply = port::complete(fw, port, &model, self.max_tokens, prompt).await?;
        let insert = code_block(&reply).unwrap_or(reply);
        let insert = insert.trim_end_matches('\n').to_string();
        Ok((!insert.trim().is_empty()).then_some(Completed {
            text: insert,
            prompt: Prompt::Chat,
        }))
    }
}

/// Which prompt a completion came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prompt {
    /// The model's own FIM tokens around the cursor.
    FillInTheMiddle,
    /// A chat prompt asking for the text at the cursor.
    Chat,
}

impl Prompt {
    /// How the completion item names it (its `detail`).
    pub(crate) fn detail(self) -> &'static str {
        match self {
            Prompt::FillInTheMiddle => "genai (fill-in-the-middle)",
            Prompt::Chat => "genai (chat)",
        }
    }
}

/// A completion's text and the prompt it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Completed {
    pub(crate) text: String,
    pub(crate) prompt: Prompt,
}

/// The document a completion is for.
pub(crate) struct Completing<'a> {
    pub(crate) text: &'a str,
    /// The cursor's byte offset in `text`.
    pub(crate) cursor: usize,
    pub(crate) file_name: &'a str,
    pub(crate) language_id: &'a str,
}

/// The last `n` bytes of `s` or fewer, cut at a char boundary.
fn tail(s: &str, n: usize) -> &str {
    &s[s.ceil_char_boundary(s.len().saturating_sub(n))..]
}

/// The first `n` bytes of `s` or fewer, cut at a char boundary.
fn head(s: &str, n: usize) -> &str {
    &s[..s.floor_char_boundary(n)]
}

/// A chat prompt asking for the text at the cursor only.
fn chat_prompt(file_name: &str, language_id: &str, before: &str, after: &str) -> String {
    format!(
        "Complete the code at <CURSOR> in {file_name} (language: {language_id}). Answer with \
         only the text to insert there, without explanation and without repeating what is \
         around it.\n\n{before}<CURSOR>{after}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_has_the_text_around_the_cursor_cut_at_char_boundaries() {
        assert_eq!(tail("héllo", 4), "llo");
        assert_eq!(head("héllo", 2), "h");
        let p = chat_prompt("a.rs", "rust", "fn a() {", "}");
        assert!(p.ends_with("fn a() {<CURSOR>}"), "{p}");
        assert!(p.contains("a.rs (language: rust)"));
    }
}
