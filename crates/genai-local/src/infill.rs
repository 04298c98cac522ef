//! Fill-in-the-middle prompts for models whose vocabulary has FIM tokens (llama.cpp finds them
//! in the GGUF's metadata or by their text: `<fim_prefix>`, `<|fim_prefix|>`, `<PRE>`, ...):
//! the raw prompt `[BOS] PRE prefix SUF suffix MID` in token ids, no chat template, cut to fit
//! the context (the end of the prefix and the start of the suffix are kept). The engine then
//! generates as for a chat prompt, keeping the reply's leading whitespace.
//!
//! This module owns that prompt's layout. It must never evaluate or sample (the engine does),
//! and the layout itself is pure so that it is tested without a model.

use llama_cpp_2::token::LlamaToken;

use super::engine::{Engine, Prepared};
use super::slots::TokenId;
use super::wire::GenerationSettings;
use genai_core::error::{Error, ErrorKind, Result};
use genai_core::provider::Infill;

/// The three tokens of a FIM prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FimTokens {
    pub(crate) prefix: TokenId,
    pub(crate) suffix: TokenId,
    pub(crate) middle: TokenId,
}

/// The prompt's token ids: `bos`, PRE, the last of `prefix`, SUF, the first of `suffix`, MID,
/// at most `budget` tokens in all. The suffix gets at most a quarter of the room (the text
/// just before the cursor matters most); the prefix gets the rest.
pub(crate) fn layout(
    fim: FimTokens,
    bos: Option<TokenId>,
    prefix: &[TokenId],
    suffix: &[TokenId],
    budget: usize,
) -> Vec<TokenId> {
    let fixed = 3 + usize::from(bos.is_some());
    let room = budget.saturating_sub(fixed);
    let suffix_take = suffix.len().min(room / 4);
    let prefix_take = prefix.len().min(room - suffix_take);
    let mut tokens = Vec::with_capacity(fixed + prefix_take + suffix_take);
    tokens.extend(bos);
    tokens.push(fim.prefix);
    tokens.extend_from_slice(&prefix[prefix.len() - prefix_take..]);
    tokens.push(fim.suffix);
    tokens.extend_from_slice(&suffix[..suffix_take]);
    tokens.push(fim.middle);
    tokens
}

impl Engine {
    /// The model's FIM tokens, or `None` when its vocabulary has not all three.
    pub(crate) fn fim_tokens(&self) -> Option<FimTokens> {
        let vocab = self.model.vocab();
        let (prefix, suffix, middle) = (vocab.fim_pre().0, vocab.fim_suf().0, vocab.fim_mid().0);
        // llama.cpp answers LLAMA_TOKEN_NULL (-1) for a token the vocabulary lacks.
        (prefix >= 0 && suffix >= 0 && middle >= 0).then_some(FimTokens {
            prefix,
            suffix,
            middle,
        })
    }

    /// The FIM prompt for `request`, ready for [`Engine::generate`]; `None` when the model has
    /// no FIM tokens.
    pub(crate) fn prepare_infill(
        &self,
        request: &Infill,
        provider: &str,
    ) -> Result<Option<Prepared>> {
        let Some(fim) = self.fim_tokens() else {
            return Ok(None);
        };
        let vocab = self.model.vocab();
        // The document's text is text: a `<fim_prefix>` typed in it is not the token.
        let ids = |text: &str| -> Vec<TokenId> {
            vocab
                .tokenize(text.replace('\0', "").as_bytes(), false, false)
                .iter()
                .map(|t| t.0)
                .collect()
        };
        let max_tokens = request.max_tokens.max(1);
        let budget = (self.n_ctx as usize).saturating_sub(max_tokens as usize);
        if budget < 8 {
            return Err(Error::new(
                ErrorKind::InvalidParams,
                format!(
                    "{provider}: a completion of {max_tokens} tokens leaves no room for its prompt in a context of {} tokens",
                    self.n_ctx
                ),
            ));
        }
        let bos = vocab.should_add_bos().then(|| vocab.bos().0);
        let tokens = layout(
            fim,
            bos,
            &ids(&request.prefix),
            &ids(&request.suffix),
            budget,
        );
        tracing::debug!(model = %self.name, prompt_tokens = tokens.len(), ?fim, "fill-in-the-middle prompt");
        tracing::trace!(model = %self.name, ?tokens, "fill-in-the-middle prompt tokens");
        Ok(Some(Prepared {
            tokens: tokens.into_iter().map(LlamaToken).collect(),
            stops: Vec::new(),
            settings: GenerationSettings {
                max_tokens: Some(max_tokens),
                temperature: request.temperature,
                raw: true,
                ..Default::default()
            },
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIM: FimTokens = FimTokens {
        prefix: 100,
        suffix: 101,
        middle: 102,
    };

    #[test]
    fn the_prompt_is_pre_prefix_suf_suffix_mid() {
        let t = layout(FIM, Some(1), &[10, 11], &[20, 21], 64);
        assert_eq!(t, vec![1, 100, 10, 11, 101, 20, 21, 102]);
        let t = layout(FIM, None, &[], &[], 64);
        assert_eq!(t, vec![100, 101, 102]);
    }

    #[test]
    fn a_long_document_keeps_the_text_nearest_the_cursor() {
        let prefix: Vec<TokenId> = (0..100).collect();
        let suffix: Vec<TokenId> = (200..300).collect();
        // 3 FIM tokens + 17 of room: 4 for the suffix (a quarter), 13 for the prefix.
        let t = layout(FIM, None, &prefix, &suffix, 20);
        assert_eq!(t.len(), 20);
        assert_eq!(t[0], 100);
        assert_eq!(&t[1..14], &prefix[87..]);
        assert_eq!(t[14], 101);
        assert_eq!(&t[15..19], &suffix[..4]);
        assert_eq!(t[19], 102);
        // A short suffix leaves its unused room to the prefix.
        let t = layout(FIM, None, &prefix, &[200], 20);
        assert_eq!(t.len(), 20);
        assert_eq!((t[17], t[18]), (101, 200));
    }
}
