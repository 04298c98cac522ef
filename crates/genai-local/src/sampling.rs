//! A request's token sampler: its chain (penalties, then greedy or temperature and the rest)
//! and, for structured output and tool calls, its grammar, asked the way llama-server asks it
//! (`common_sampler_sample`): the chain picks a token from the whole vocabulary, the grammar
//! is asked about that one token, and only when it refuses is the grammar applied to the whole
//! vocabulary and the chain run again on what it allows.
//!
//! Checking one token rather than every token of the vocabulary at every step is what keeps a
//! constrained reply at the speed of a free one. A greedy run picks the same tokens as applying
//! the grammar first would: when the grammar allows the best token it is also the best allowed
//! one. A greedy run goes one step further than llama-server when the grammar refuses: it asks
//! the grammar about the next best tokens of the same pass, one at a time, best first, and the
//! first allowed is the token the full pass would pick (the greedy sampler keeps the highest
//! logit, the lower id on a tie); only when none of the [`SHORTLIST`] is allowed does it pay the
//! pass over the whole vocabulary (Gemma's is 262,144 tokens). A sampled run always pays it:
//! its pick must be drawn from the allowed tokens' own distribution.
//!
//! llama-cpp-2 has no such sampler, so this is written on its lowest-level calls (`apply` and
//! `accept` on a token array); it owns no grammar and no sampling setting.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

/// How many of a greedy pass's best tokens are asked about, one at a time, when the grammar
/// refuses the best, before the grammar is applied to the whole vocabulary. Measured on Gemma
/// 3 270M with a schema: a pass over its vocabulary takes 25-70 ms, this shortlist 1.3-1.8 ms
/// (most of it choosing the best 1,024 of 262,144); it found the allowed token for 6 of the
/// reply's 8 refusals (64 found 4; the other two were ranked 9,176th and 47,737th).
const SHORTLIST: usize = 1024;

pub(crate) struct TokenSampler {
    chain: LlamaSampler,
    grammar: Option<LlamaSampler>,
    /// Whether the chain ends in the greedy sampler (the highest logit wins).
    greedy: bool,
    /// The candidates of the last full pass, kept to be filled again without allocating.
    buffer: Vec<LlamaTokenData>,
    /// The best (logit, token) of the last pass, when the grammar refused its pick.
    shortlist: Vec<(f32, i32)>,
    /// How many picks the grammar refused, and how many of those cost a pass over the whole
    /// vocabulary (the others were found in the shortlist).
    refusals: u32,
    full_passes: u32,
}

impl TokenSampler {
    /// `chain` picks tokens (`greedy`: it ends in the greedy sampler); `grammar`, when given,
    /// must allow them.
    pub(crate) fn new(
        chain: LlamaSampler,
        grammar: Option<LlamaSampler>,
        greedy: bool,
    ) -> TokenSampler {
        TokenSampler {
            chain,
            grammar,
            greedy,
            buffer: Vec::new(),
            shortlist: Vec::new(),
            refusals: 0,
            full_passes: 0,
        }
    }

    /// How many of the chain's picks the grammar refused so far, and how many of those cost a
    /// grammar pass over the whole vocabulary (for the engine's log).
    pub(crate) fn refusals(&self) -> (u32, u32) {
        (self.refusals, self.full_passes)
    }

    /// Samples and accepts the next token from the `idx`-th logits of the last decode.
    pub(crate) fn sample(&mut self, ctx: &LlamaContext<'_>, idx: i32) -> LlamaToken {
        let Some(mut grammar) = self.grammar.take() else {
            return self.chain.sample(ctx, idx);
        };
        let first = self.pick(ctx, idx, None);
        let token = match allows(&mut grammar, first) {
            true => first,
            false => {
                self.refusals += 1;
                let best = match self.greedy {
                    true => self.best_allowed(&mut grammar),
                    false => None,
                };
                best.unwrap_or_else(|| {
                    self.full_passes += 1;
                    self.pick(ctx, idx, Some(&mut grammar))
                })
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

    /// For a greedy chain whose pick was refused: the allowed token of highest logit among the
    /// [`SHORTLIST`] best of the last pass (its logits after the chain's penalties and biases,
    /// which do not depend on the grammar), asked about one at a time, best first; ties go to
    /// the lower id, as in llama.cpp's greedy sampler. None when the grammar refuses them all.
    fn best_allowed(&mut self, grammar: &mut LlamaSampler) -> Option<LlamaToken> {
        let best = &mut self.shortlist;
        best.clear();
        best.extend(
            self.buffer
                .iter()
                .filter(|t| t.logit().is_finite())
                .map(|t| (t.logit(), t.id().0)),
        );
        let order = |a: &(f32, i32), b: &(f32, i32)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        let n = SHORTLIST.min(best.len());
        if n < best.len() {
            best.select_nth_unstable_by(n, order);
            best.truncate(n);
        }
        best.sort_unstable_by(order);
        best.iter()
            .map(|&(_, id)| LlamaToken(id))
            .find(|&token| allows(grammar, token))
    }
}

/// Whether the grammar, in its present state, allows `token` (it sets a refused token's logit
/// to minus infinity).
fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 1.0, 0.0)], false);
    grammar.apply(&mut one);
    one.data.first().is_some_and(|t| t.logit().is_finite())
}
