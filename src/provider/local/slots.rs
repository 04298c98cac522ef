//! The pool of slots of one engine, as in llama-server: a slot is a llama.cpp context (its KV
//! cache) plus the token sequence that cache holds. A request takes the free slot whose tokens
//! share the longest prefix with its prompt, so a conversation's next turn evaluates only
//! what is new.
//!
//! This module owns the choice of a slot and the bookkeeping of which slot is busy. It is
//! generic over the context type and must never call llama.cpp (so the policy is tested
//! without a model).

/// Token ids as llama.cpp numbers them.
pub type TokenId = i32;

struct Entry<C> {
    /// `None` while a request holds the slot (or before its context is made).
    context: Option<C>,
    busy: bool,
    /// The tokens in this slot's KV cache, in order from position 0.
    tokens: Vec<TokenId>,
    last_used: u64,
}

/// A slot taken from the pool; give it back with [`SlotPool::put_back`].
pub struct Taken<C> {
    pub index: usize,
    /// `None` for a new slot: the caller makes the context.
    pub context: Option<C>,
    /// The tokens in the KV cache.
    pub tokens: Vec<TokenId>,
    /// How many leading prompt tokens the cache already holds.
    pub common: usize,
}

/// Up to `capacity` slots, made on demand.
pub struct SlotPool<C> {
    entries: Vec<Entry<C>>,
    capacity: usize,
    clock: u64,
}

/// The length of the common prefix of two token sequences.
pub fn common_prefix(a: &[TokenId], b: &[TokenId]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

impl<C> SlotPool<C> {
    pub fn new(capacity: usize) -> SlotPool<C> {
        SlotPool {
            entries: Vec::new(),
            capacity: capacity.max(1),
            clock: 0,
        }
    }

    /// Takes the best slot for `prompt`, or `None` when every slot is busy.
    ///
    /// The free slot with the longest common prefix wins when it keeps at least half of what
    /// it caches (a continuation of its conversation). Otherwise a new slot is made while the
    /// pool has room, so that another conversation's cache survives; when it has none, the
    /// longest prefix wins, the least recently used slot on a tie.
    pub fn take(&mut self, prompt: &[TokenId]) -> Option<Taken<C>> {
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
        let (index, common) = match reuse {
            Some(x) => x,
            None => {
                self.entries.push(Entry {
                    context: None,
                    busy: false,
                    tokens: Vec::new(),
                    last_used: 0,
                });
                (self.entries.len() - 1, 0)
            }
        };
        let e = &mut self.entries[index];
        e.busy = true;
        e.last_used = self.clock;
        Some(Taken {
            index,
            context: e.context.take(),
            tokens: std::mem::take(&mut e.tokens),
            common,
        })
    }

    /// Gives a slot back with its context (`None` if it could not be made or was lost) and the
    /// tokens its KV cache now holds.
    pub fn put_back(&mut self, index: usize, context: Option<C>, tokens: Vec<TokenId>) {
        if let Some(e) = self.entries.get_mut(index) {
            e.busy = false;
            e.tokens = if context.is_some() {
                tokens
            } else {
                Vec::new()
            };
            e.context = context;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_gets_its_own_slot_back() {
        let mut pool: SlotPool<&str> = SlotPool::new(2);
        let a = pool.take(&[1, 2, 3]).unwrap();
        assert_eq!((a.index, a.common, a.context), (0, 0, None));
        pool.put_back(0, Some("ctx-a"), vec![1, 2, 3, 10, 11]);
        // Another conversation shares only the first token: it gets a new slot.
        let b = pool.take(&[1, 7, 8]).unwrap();
        assert_eq!((b.index, b.common), (1, 0));
        pool.put_back(1, Some("ctx-b"), vec![1, 7, 8, 20]);
        // The first conversation's next turn extends its cached tokens.
        let a2 = pool.take(&[1, 2, 3, 10, 11, 4, 5]).unwrap();
        assert_eq!((a2.index, a2.common, a2.context), (0, 5, Some("ctx-a")));
        assert_eq!(a2.tokens, vec![1, 2, 3, 10, 11]);
        pool.put_back(0, a2.context, vec![1, 2, 3, 10, 11, 4, 5, 12]);
        let b2 = pool.take(&[1, 7, 8, 20, 9]).unwrap();
        assert_eq!((b2.index, b2.common), (1, 4));
    }

    #[test]
    fn a_full_pool_reuses_the_longest_prefix_then_the_least_recently_used() {
        let mut pool: SlotPool<u8> = SlotPool::new(2);
        for (i, toks) in [vec![1, 2, 3, 4], vec![5, 6, 7, 8]].into_iter().enumerate() {
            let t = pool.take(&toks).unwrap();
            assert_eq!(t.index, i);
            pool.put_back(t.index, Some(i as u8), toks);
        }
        let t = pool.take(&[5, 6, 9]).unwrap();
        assert_eq!((t.index, t.common), (1, 2));
        pool.put_back(1, t.context, vec![5, 6, 9]);
        // Nothing in common: the least recently used slot (0) is taken.
        let t = pool.take(&[42]).unwrap();
        assert_eq!((t.index, t.common), (0, 0));
    }

    #[test]
    fn busy_slots_are_not_taken() {
        let mut pool: SlotPool<u8> = SlotPool::new(1);
        let t = pool.take(&[1]).unwrap();
        assert!(pool.take(&[1]).is_none());
        pool.put_back(t.index, Some(0), vec![1]);
        assert!(pool.take(&[1]).is_some());
    }

    #[test]
    fn a_slot_without_a_context_forgets_its_tokens() {
        let mut pool: SlotPool<u8> = SlotPool::new(1);
        let t = pool.take(&[1, 2]).unwrap();
        pool.put_back(t.index, None, vec![1, 2]);
        let t = pool.take(&[1, 2]).unwrap();
        assert_eq!((t.common, t.context), (0, None));
    }
}
