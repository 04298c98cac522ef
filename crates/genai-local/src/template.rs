//! Turns chat messages into the prompt text the model was trained on. In order:
//!
//! 1. the model's own chat template from its GGUF metadata (`tokenizer.chat_template`),
//!    applied by llama.cpp's `llama_chat_apply_template`, which recognises the common
//!    template families;
//! 2. when the model has none: it is a base model (many converted ones are, such as the Gemma 3
//!    270M of the demo), never trained on turn markers, so a plain transcript it can continue:
//!    the system text, then `Question: ...` / `Answer: ...` lines, ending with `Answer:`, and
//!    `\nQuestion:` as a stop string (with Gemma 3 270M this turns the chat template's echoes
//!    into "Paris" for "What is the capital of France?");
//! 3. when llama.cpp cannot apply the model's template: llama.cpp's built-in template of the
//!    model's architecture family (`general.architecture`: `gemma*` → `gemma`, `phi3` → `phi3`,
//!    ...);
//! 4. else ChatML, the documented last resort, because it is what most instruction-tuned GGUF
//!    models expect. With it, `<|im_end|>` and `<|im_start|>` become stop strings so the model
//!    cannot run on into a new turn.
//!
//! This module owns that choice and the ChatML rendering; it must never tokenize or evaluate
//! anything (that is the engine's job), so the fallbacks are tested without a model.

/// One message as the template sees it: a role (`system`, `user`, `assistant`) and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ChatMessage {
    pub(crate) role: String,
    pub(crate) content: String,
}

impl ChatMessage {
    pub(crate) fn new(role: &str, content: &str) -> ChatMessage {
        ChatMessage {
            role: role.to_string(),
            content: content.to_string(),
        }
    }
}

/// What `apply` answers for `Template::Model` when the GGUF has no chat template.
pub(crate) const NO_TEMPLATE: &str = "the model has no chat template";

/// The stop strings of the plain transcript of base models: a new question, or the model
/// answering again (a base model loops that way).
pub(crate) const TRANSCRIPT_STOPS: [&str; 2] = ["\nQuestion:", "\nAnswer:"];

/// The longest reply of the plain transcript when the request sets no `max_tokens`: a base
/// model may ramble until the context is full, which takes minutes on a small machine.
pub(crate) const TRANSCRIPT_MAX_TOKENS: u32 = 512;

/// The stop strings the ChatML fallback adds.
pub(crate) const CHATML_STOPS: [&str; 2] = ["<|im_end|>", "<|im_start|>"];

/// A rendered prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rendered {
    pub(crate) prompt: String,
    /// Stop strings the template needs on top of the request's own.
    pub(crate) extra_stops: Vec<String>,
    /// Why the fallback was used, when it was.
    pub(crate) fallback: Option<String>,
    /// The reply's length limit when the request sets none.
    pub(crate) max_tokens: Option<u32>,
}

/// Which template llama.cpp should apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Template {
    /// The one in the model's metadata.
    Model,
    /// One of llama.cpp's built-in templates, by name (`gemma`, `phi3`, ...).
    Builtin(&'static str),
}

/// llama.cpp's built-in template for a model architecture (`general.architecture`), when the
/// family has one chat format.
pub(crate) fn builtin_for_architecture(architecture: &str) -> Option<&'static str> {
    let a = architecture.to_ascii_lowercase();
    Some(match a.as_str() {
        a if a.starts_with("gemma") => "gemma",
        "phi3" => "phi3",
        "phi4" => "phi4",
        "command-r" | "cohere2" => "command-r",
        "exaone" => "exaone3",
        "granite" => "granite",
        a if a.starts_with("qwen") => "chatml",
        _ => return None,
    })
}

/// Renders `messages` for a model of `architecture`: `apply` applies a template through
/// llama.cpp (it returns the prompt, or why it cannot). The prompt ends with the opening of an
/// assistant turn.
pub(crate) fn render(
    messages: &[ChatMessage],
    architecture: Option<&str>,
    mut apply: impl FnMut(Template, &[ChatMessage]) -> std::result::Result<String, String>,
) -> Rendered {
    let why = match apply(Template::Model, messages) {
        Ok(prompt) if !prompt.is_empty() => {
            return Rendered {
                prompt,
                extra_stops: Vec::new(),
                fallback: None,
                max_tokens: None,
            }
        }
        Ok(_) => "the model's chat template produced nothing".to_string(),
        Err(why) if why == NO_TEMPLATE => {
            return Rendered {
                prompt: transcript(messages),
                extra_stops: TRANSCRIPT_STOPS.iter().map(|s| s.to_string()).collect(),
                fallback: Some(format!(
                    "{NO_TEMPLATE}; using a plain Question/Answer transcript"
                )),
                max_tokens: Some(TRANSCRIPT_MAX_TOKENS),
            }
        }
        Err(why) => why,
    };
    if let Some(name) = architecture.and_then(builtin_for_architecture) {
        match apply(Template::Builtin(name), messages) {
            Ok(prompt) if !prompt.is_empty() => {
                return Rendered {
                    prompt,
                    extra_stops: Vec::new(),
                    fallback: Some(format!("{why}; using llama.cpp's `{name}` template")),
                    max_tokens: None,
                }
            }
            Ok(_) => {}
            Err(e) => tracing::debug!("llama.cpp's `{name}` template failed: {e}"),
        }
    }
    chatml_rendered(messages, format!("{why}; using ChatML"))
}

fn chatml_rendered(messages: &[ChatMessage], why: String) -> Rendered {
    Rendered {
        prompt: chatml(messages),
        extra_stops: CHATML_STOPS.iter().map(|s| s.to_string()).collect(),
        fallback: Some(why),
        max_tokens: None,
    }
}

/// The plain transcript for base models: system text, then `Question:`/`Answer:` lines,
/// ending with `Answer:` for the model to complete.
pub(crate) fn transcript(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        match m.role.as_str() {
            "system" => {
                out.push_str(m.content.trim());
                out.push_str("\n\n");
            }
            "assistant" => {
                out.push_str("Answer: ");
                out.push_str(m.content.trim());
                out.push('\n');
            }
            _ => {
                out.push_str("Question: ");
                out.push_str(m.content.trim());
                out.push('\n');
            }
        }
    }
    out.push_str("Answer:");
    out
}

/// The ChatML rendering: `<|im_start|>ROLE\nTEXT<|im_end|>\n` per message, then
/// `<|im_start|>assistant\n`.
pub(crate) fn chatml(messages: &[ChatMessage]) -> String {
    let mut out = String::new();
    for m in messages {
        out.push_str("<|im_start|>");
        out.push_str(&m.role);
        out.push('\n');
        out.push_str(&m.content);
        out.push_str("<|im_end|>\n");
    }
    out.push_str("<|im_start|>assistant\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conversation() -> Vec<ChatMessage> {
        vec![
            ChatMessage::new("system", "Be brief."),
            ChatMessage::new("user", "Hi"),
            ChatMessage::new("assistant", "Hello!"),
            ChatMessage::new("user", "Name a colour."),
        ]
    }

    #[test]
    fn the_model_template_is_used_when_it_applies() {
        let r = render(&conversation(), Some("gemma3"), |t, m| {
            assert_eq!(t, Template::Model);
            Ok(format!("<{} messages>", m.len()))
        });
        assert_eq!(r.prompt, "<4 messages>");
        assert!(r.extra_stops.is_empty());
        assert_eq!(r.fallback, None);
    }

    #[test]
    fn a_base_model_without_a_template_gets_a_plain_transcript() {
        let r = render(&conversation(), Some("gemma3"), |t, _| {
            assert_eq!(t, Template::Model);
            Err(NO_TEMPLATE.into())
        });
        assert_eq!(
            r.prompt,
            "Be brief.\n\nQuestion: Hi\nAnswer: Hello!\nQuestion: Name a colour.\nAnswer:"
        );
        assert_eq!(r.extra_stops, vec!["\nQuestion:", "\nAnswer:"]);
        assert_eq!(r.max_tokens, Some(TRANSCRIPT_MAX_TOKENS));
        assert!(r.fallback.unwrap().contains("Question/Answer transcript"));
    }

    #[test]
    fn a_template_llama_cpp_cannot_apply_gives_the_family_s_builtin_one() {
        let r = render(&conversation(), Some("gemma3"), |t, _| match t {
            Template::Model => Err("llama.cpp cannot apply this chat template".into()),
            Template::Builtin(name) => Ok(format!("<{name}>")),
        });
        assert_eq!(r.prompt, "<gemma>");
        assert!(r.extra_stops.is_empty());
        assert_eq!(
            r.fallback.as_deref(),
            Some("llama.cpp cannot apply this chat template; using llama.cpp's `gemma` template")
        );
        assert_eq!(builtin_for_architecture("Qwen2"), Some("chatml"));
        assert_eq!(builtin_for_architecture("llama"), None);
    }

    #[test]
    fn chatml_is_the_last_resort() {
        let r = render(&conversation(), Some("llama"), |t, _| {
            assert_eq!(t, Template::Model, "llama has no single family template");
            Err("llama.cpp cannot apply this chat template".into())
        });
        assert_eq!(
            r.prompt,
            "<|im_start|>system\nBe brief.<|im_end|>\n\
             <|im_start|>user\nHi<|im_end|>\n\
             <|im_start|>assistant\nHello!<|im_end|>\n\
             <|im_start|>user\nName a colour.<|im_end|>\n\
             <|im_start|>assistant\n"
        );
        assert_eq!(r.extra_stops, vec!["<|im_end|>", "<|im_start|>"]);
        assert_eq!(
            r.fallback.as_deref(),
            Some("llama.cpp cannot apply this chat template; using ChatML")
        );
    }

    #[test]
    fn empty_or_failed_renderings_fall_back_to_chatml() {
        let r = render(&conversation(), None, |_, _| Ok(String::new()));
        assert!(r.prompt.starts_with("<|im_start|>system\n"));
        assert!(r.fallback.is_some());
        let r = render(&conversation(), Some("gemma"), |_, _| Err("no".into()));
        assert!(r.prompt.starts_with("<|im_start|>system\n"));
        assert_eq!(r.extra_stops.len(), 2);
    }
}
