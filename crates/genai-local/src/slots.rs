//! The sequences of one engine's context, as llama-server's slots: each is a sequence id in
//! the context's KV cache plus the tokens it holds there. A request claims the free sequence
//! whose tokens share the longest prefix with its prompt, so a conversation's next turn evaluates
//! only what is new; an idle sequence is given to another conversation least recently used
//! first. A prefix another sequence already holds (a shared system prompt) can be copied
//! rather than evaluated again ([`SequenceTable::donor`]).
//!
//! This module owns the choice of a sequence and the bookkeeping of which is busy and which
//! tokens each holds. It must never call llama.cpp (so the policy is tested without a model).

/// Token ids as llama.cpp numbers them.
pub(crate) type TokenId = i32;

struct Entry {
    busy: bool,
    /// The tokens in this sequence's KV cells, in order from position 0.
    tokens: Vec<TokenId>,
    last_used: u64,
}

/// A sequence claimed for a request; give it back with [`SequenceTable::release`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Claim {
    /// The sequence id.
    pub(crate) index: usize,
    /// How many leading prompt tokens the sequence already holds.
    pub(crate) common: usize,
}

/// Up to `capacity` sequences, made on demand.
pub(crate) struct SequenceTable {
    entries: Vec<Entry>,
    capacity: usize,
    clock: u64,
}

/// The length of the common prefix of two token sequences.
pub(crate) fn common_prefix(a: &[TokenId], b: &[TokenId]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl SequenceTable {
    pub(crate) fn new(capacity: usize) -> SequenceTable {
        SequenceTable {
            entries: Vec::new(),
            capacity: capacity.max(1),
            clock: 0,
        }
    }

    /// Whether a request could claim a sequence now.
    pub(crate) fn has_free(&self) -> bool {
        self.free() > 0
    }

    /// How many requests could claim a sequence now.
    pub(crate) fn free(&self) -> usize {
        self.capacity - self.entries.len() + self.entries.iter().filter(|e| !e.busy).count()
    }

    /// Claims the best sequence for `prompt`, or `None` when every one is busy.
    ///
    /// The free sequence with the longest common prefix wins when it keeps at least half of
    /// what it holds (a continuation of its conversation). Otherwise a new sequence is made
    /// while there is room, so that another conversation's cache survives; when there is none,
    /// the longest prefix wins, the least recently used sequence on a tie (eviction).
    pub(crate) fn claim(&mut self, prompt: &[TokenId]) -> Option<Claim> {
        let best = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !e.busy)
            .map(|(i, e)| (i, common_prefix(&e.tokens, prompt), e.last_used))
            .max_by(|a, b| a.1.cmp(&b.1).then(b.2.cmp(&a.2)));
        let reuse = match best {
            Some((i, common, _)) if common > 0 && common * 2 >= self.entries[i].tokens.len() => {
                Some((i, common))
            }
            _ if self.entries.len() < self.capacity => None,
            Some((i, common, _)) => Some((i, common)),
            None => return None,
        };
        self.clock += 1;
        let (index, common) = reuse.unwrap_or_else(|| {
            self.entries.push(Entry {
                busy: false,
                tokens: Vec::new(),
                last_used: 0,
            });
            (self.entries.len() - 1, 0)
        });
        let e = &mut self.entries[index];
        e.busy = true;
        e.last_used = self.clock;
        Some(Claim { index, common })
    }

    /// Another sequence holding a longer prefix of `prompt` than `index` holds: its index and
    /// how many tokens it shares (at most `limit`).
    pub(crate) fn donor(
        &self,
        index: usize,
        prompt: &[TokenId],
        limit: usize,
    ) -> Option<(usize, usize)> {
        let own = common_prefix(self.tokens(index), prompt).min(limit);
        self.entries
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != index)
            .map(|(i, e)| (i, common_prefix(&e.tokens, prompt).min(limit)))
            .filter(|(_, n)| *n > own)
            .max_by_key(|(_, n)| *n)
    }

    /// The tokens a sequence holds.
    pub(crate) fn tokens(&self, index: usize) -> &[TokenId] {
        self.entries.get(index).map_or(&[], |e| &e.tokens)
    }

    /// The tokens a sequence holds, to keep in step with its KV cells.
    pub(crate) fn tokens_mut(&mut self, index: usize) -> &mut Vec<TokenId> {
        &mut self.entries[index].tokens
    }

    /// Gives a sequence back; its tokens stay for the next turn.
    pub(crate) fn release(&mut self, index: usize) {
        if let Some(e) = self.entries.get_mut(index) {
            e.busy = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim_and_hold(t: &mut SequenceTable, prompt: &[TokenId], held: &[TokenId]) -> Claim {
        let c = t.claim(prompt).unwrap();
        *t.tokens_mut(c.index) = held.to_vec();
        t.release(c.index);
        c
    }

    #[test]
    fn a_conversation_gets_its_own_sequence_back() {
        let mut t = SequenceTable::new(2);
        let a = claim_and_hold(&mut t, &[1, 2, 3], &[1, 2, 3, 10, 11]);
        assert_eq!(
            a,
            Claim {
                index: 0,
                common: 0
            }
        );
        // Another conversation shares only the first token: it gets a new sequence.
        let b = claim_and_hold(&mut t, &[1, 7, 8], &[1, 7, 8, 20]);
        assert_eq!(
            b,
            Claim {
                index: 1,
                common: 0
            }
        );
        // The first conversation's next turn extends its cached tokens.
        let a2 = t.claim(&[1, 2, 3, 10, 11, 4, 5]).unwrap();
        assert_eq!(
            a2,
            Claim {
                index: 0,
                common: 5
            }
        );
        assert_eq!(t.tokens(0), &[1, 2, 3, 10, 11]);
        t.release(0);
        let b2 = t.claim(&[1, 7, 8, 20, 9]).unwrap();
        assert_eq!(
            b2,
            Claim {
                index: 1,
                common: 4
            }
        );
    }

    #[test]
    fn a_full_table_reuses_the_longest_prefix_then_the_least_recently_used() {
        let mut t = SequenceTable::new(2);
        for (i, toks) in [vec![1, 2, 3, 4], vec![5, 6, 7, 8]].into_iter().enumerate() {
            assert_eq!(claim_and_hold(&mut t, &toks, &toks).index, i);
        }
        let c = claim_and_hold(&mut t, &[5, 6, 9], &[5, 6, 9]);
        assert_eq!(
            c,
            Claim {
                index: 1,
                common: 2
            }
        );
        // Nothing in common: the least recently used sequence (0) is evicted.
        let c = t.claim(&[42]).unwrap();
        assert_eq!(
            c,
            Claim {
                index: 0,
                common: 0
            }
        );
    }

    #[test]
    fn busy_sequences_are_not_claimed() {
        let mut t = SequenceTable::new(1);
        let c = t.claim(&[1]).unwrap();
        assert!(!t.has_free());
        assert!(t.claim(&[1]).is_none());
        t.release(c.index);
        assert!(t.has_free());
        assert!(t.claim(&[1]).is_some());
    }

    #[test]
    fn free_counts_new_and_idle_sequences() {
        let mut t = SequenceTable::new(3);
        assert_eq!(t.free(), 3);
        let a = t.claim(&[1]).unwrap();
        let _b = t.claim(&[2]).unwrap();
        assert_eq!(t.free(), 1);
        t.release(a.index);
        assert_eq!(t.free(), 2);
    }

    #[test]
    fn a_shared_prefix_is_found_in_another_sequence_busy_or_not() {
        let mut t = SequenceTable::new(3);
        let system = [1, 2, 3, 4, 5, 6];
        let a = t.claim(&system).unwrap();
        t.tokens_mut(a.index).extend([1, 2, 3, 4, 5, 6, 7]);
        // Still busy: its cells can be copied all the same.
        let b = t.claim(&[1, 2, 3, 4, 5, 6, 9]).unwrap();
        assert_eq!(b.index, 1);
        assert_eq!(t.donor(b.index, &[1, 2, 3, 4, 5, 6, 9], 6), Some((0, 6)));
        // At most `limit` (one token is always evaluated for logits).
        assert_eq!(t.donor(b.index, &[1, 2, 3, 4, 5, 6, 9], 4), Some((0, 4)));
        // Nothing better than what the sequence holds itself: no donor.
        t.tokens_mut(b.index).extend([1, 2, 3, 4, 5, 6]);
        assert_eq!(t.donor(b.index, &[1, 2, 3, 4, 5, 6, 9], 6), None);
    }
}
