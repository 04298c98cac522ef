//! A request's token sampler: its chain (penalties, then greedy or temperature and the rest)
//! and, for structured output and tool calls, its grammar, asked the way llama-server asks it
//! (`common_sampler_sample`): the chain picks a token from the whole vocabulary, the grammar
//! is asked about that one token, and only when it refuses is the grammar applied to the whole
//! vocabulary and the chain run again on what it allows.
//!
//! Checking one token rather than every token of the vocabulary at every step is what keeps a
//! constrained reply at the speed of a free one. A greedy run picks the same tokens as applying
//! the grammar first would: when the grammar allows the best token it is also the best allowed
//! one. llama-cpp-2 has no such sampler, so this is written on its lowest-level calls
//! (`apply` and `accept` on a token array); it owns no grammar and no sampling setting.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

pub struct TokenSampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
    /// The candidates of the last full pass, kept to be filled again without allocating.
    buffer: Vec<LlamaTokenData>,
    /// How many picks the grammar refused (each cost a pass over the whole vocabulary).
    refusals: u32,
}

impl TokenSampler {
    /// `chain` picks tokens; `grammar`, when given, must allow them.
    pub fn new(chain: LlamaSampler, grammar: Option<LlamaSampler>) -> TokenSampler {
        TokenSampler {
            chain,
            grammar,
            buffer: Vec::new(),
            refusals: 0,
        }
    }

    /// How many of the chain's picks the grammar refused so far (for the engine's log: each
    /// refusal is a pass over the whole vocabulary).
    pub fn refusals(&self) -> u32 {
        self.refusals
    }

    /// Samples and accepts the next token from the `idx`-th logits of the last decode.
    pub fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> LlamaToken {
        let Some(mut grammar) = self.grammar.take() else {
            return self.chain.sample(ctx, idx);
        };
        let first = self.pick(ctx, idx, None);
        let token = match allows(&mut grammar, first) {
            true => first,
            false => {
                self.refusals += 1;
                self.pick(ctx, idx, Some(&mut grammar))
            }
        };
        grammar.accept(token);
        self.chain.accept(token);
        self.grammar = Some(grammar);
        token
    }

    /// The chain's pick over the whole vocabulary, after the grammar when given (not
    /// accepted: [`TokenSampler::sample`] accepts the token it keeps).
    fn pick(
        &mut self,
        ctx: &LlamaContext<'_>,
        idx: i32,
        grammar: Option<&mut LlamaSampler>,
    ) -> LlamaToken {
        let mut data = std::mem::take(&mut self.buffer);
        data.clear();
        data.extend(ctx.candidates_ith(idx));
        let mut candidates = LlamaTokenDataArray::new(data, false);
        if let Some(grammar) = grammar {
            grammar.apply(&mut candidates);
        }
        self.chain.apply(&mut candidates);
        // Every chain ends with a sampler that selects (greedy or dist); the best logit
        // otherwise.
        let token = candidates.selected_token().unwrap_or_else(|| {
            candidates
                .data
                .iter()
                .max_by(|a, b| a.logit().total_cmp(&b.logit()))
                .map_or(LlamaToken(0), LlamaTokenData::id)
        });
        self.buffer = candidates.data;
        token
    }
}

/// Whether the grammar, in its present state, allows `token` (it sets a refused token's logit
/// to minus infinity).
fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    grammar.apply(&mut one);
    one.data.first().is_some_and(|t| t.logit().is_finite())
}
