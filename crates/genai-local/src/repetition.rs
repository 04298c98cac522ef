//! Notices when a reply has fallen into a loop: the same run of tokens over and over at its
//! end ("The sea of life,\nThe sea of life,\n..."). Small models do this, greedy or sampled,
//! and would otherwise run until the context is full (minutes on a small machine) with
//! nothing more to say.
//!
//! A reply loops when its last tokens are one run of `PERIOD_MIN..=PERIOD_MAX` tokens repeated
//! at least `COPIES` times back to back and covering at least `SPAN_MIN` tokens. This module
//! only looks at token ids; it must never sample, decode or change the reply (the engine stops
//! generating and says why).

/// The shortest repeated run considered (shorter ones are rows like `----` or `!!!!`).
const PERIOD_MIN: usize = 2;
/// The longest repeated run considered.
const PERIOD_MAX: usize = 128;
/// How many back-to-back copies make a loop.
const COPIES: usize = 4;
/// The fewest tokens the copies must cover together.
const SPAN_MIN: usize = 48;

/// The length of the repeated run the reply `tokens` ends with, when it loops.
pub(crate) fn loop_period(tokens: &[i32]) -> Option<usize> {
    let n = tokens.len();
    (PERIOD_MIN..=PERIOD_MAX).find(|&p| {
        let copies = COPIES.max(SPAN_MIN.div_ceil(p));
        let span = copies * p;
        span <= n && (n - span + p..n).all(|i| tokens[i] == tokens[i - p])
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repeat(run: &[i32], times: usize) -> Vec<i32> {
        run.iter()
            .copied()
            .cycle()
            .take(run.len() * times)
            .collect()
    }

    #[test]
    fn a_run_repeated_at_the_end_is_a_loop() {
        let mut reply = vec![100, 101, 102, 103];
        reply.extend(repeat(&[1, 2, 3, 4, 5, 6, 7, 8], 6));
        assert_eq!(loop_period(&reply), Some(8));
        // Long runs need only four copies.
        let mut reply = vec![9];
        reply.extend(repeat(&(0..40).collect::<Vec<_>>(), 4));
        assert_eq!(loop_period(&reply), Some(40));
    }

    #[test]
    fn too_few_copies_or_too_short_a_span_is_not_a_loop() {
        assert_eq!(loop_period(&repeat(&[1, 2, 3, 4, 5, 6, 7, 8], 5)), None);
        assert_eq!(loop_period(&repeat(&(0..40).collect::<Vec<_>>(), 3)), None);
        assert_eq!(
            loop_period(&repeat(&[7], 40)),
            None,
            "a short row of one token"
        );
        assert_eq!(loop_period(&[]), None);
    }

    #[test]
    fn text_that_only_resembles_itself_is_not_a_loop() {
        // Counting: every line differs.
        let counting: Vec<i32> = (0..300).flat_map(|i| [10, 1000 + i, 11]).collect();
        assert_eq!(loop_period(&counting), None);
        // A loop earlier in the reply that has since ended.
        let mut reply = repeat(&[1, 2, 3, 4, 5, 6, 7, 8], 10);
        reply.extend([50, 51, 52]);
        assert_eq!(loop_period(&reply), None);
    }
}
