//! Model names as the gateway's clients send them: `[serve.models]` aliases (so Claude Code's
//! or Codex's own model names map to an agent, a `PROVIDER:MODEL` or deployments) and the `*` patterns that
//! aliases and a virtual key's `--models` are written in.
//!
//! It owns matching names only. It must never choose a provider or check that a model exists:
//! what an alias names is resolved by the core as `genai ask -m` resolves it.

use std::collections::BTreeMap;

/// Whether `name` matches `pattern`, where `*` stands for any run of characters (none too)
/// and every other character for itself.
pub(crate) fn glob(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    // Where the last `*` was, and where in the name its run ends so far.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ni));
            pi += 1;
        } else if pi < p.len() && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if let Some((sp, sn)) = star {
            // Let the last `*` take one more character and try again from there.
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|b| *b == b'*')
}

/// The entry `model` matches, with its name: that of this exact name, else that of the longest
/// pattern matching it, else `None` (the name is used as it is).
pub(crate) fn resolve<'a, T>(
    aliases: &'a BTreeMap<String, T>,
    model: &str,
) -> Option<(&'a str, &'a T)> {
    if let Some((from, to)) = aliases.get_key_value(model) {
        return Some((from, to));
    }
    aliases
        .iter()
        .filter(|(from, _)| from.contains('*') && glob(from, model))
        .max_by_key(|(from, _)| from.len())
        .map(|(from, to)| (from.as_str(), to))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_star_stands_for_any_run_of_characters() {
        assert!(glob("claude-*", "claude-sonnet-4-5"));
        assert!(glob("claude-*", "claude-"));
        assert!(!glob("claude-*", "claude"));
        assert!(glob("*", ""));
        assert!(glob("*", "anything"));
        assert!(glob("ollama:*", "ollama:qwen3"));
        assert!(!glob("ollama:*", "openai:gpt-4o"));
        assert!(glob("*sonnet*", "claude-sonnet-4-5"));
        assert!(glob("a*b*c", "axxbyyc"));
        assert!(glob("a*b*c", "abbc"));
        assert!(!glob("a*b*c", "axxbyy"));
        assert!(glob("gpt-4o", "gpt-4o"));
        assert!(!glob("gpt-4o", "gpt-4o-mini"));
        assert!(!glob("", "x"));
        assert!(glob("**x", "x"));
    }

    #[test]
    fn an_exact_alias_wins_over_patterns_and_a_longer_pattern_over_a_shorter() {
        let aliases: BTreeMap<String, String> = [
            ("claude-*", "fast"),
            ("claude-sonnet-*", "smart"),
            ("claude-sonnet-4-5", "local"),
            ("gpt-4o", "ollama:qwen3"),
        ]
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let to = |model| resolve(&aliases, model).map(|(_, to)| to.as_str());
        assert_eq!(to("claude-sonnet-4-5"), Some("local"));
        assert_eq!(to("claude-sonnet-4-6"), Some("smart"));
        assert_eq!(to("claude-haiku-4-5"), Some("fast"));
        assert_eq!(to("gpt-4o"), Some("ollama:qwen3"));
        assert_eq!(to("gpt-4o-mini"), None);
        assert_eq!(
            resolve(&aliases, "claude-opus-4"),
            Some(("claude-*", &"fast".to_string()))
        );
    }
}
