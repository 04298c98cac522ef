//! "Did you mean ...?": the one place that picks, among the names something accepts, the one a
//! mistyped name was probably meant to be (a parameter given with `-p`, a JSON-RPC method).
//!
//! It only compares names; each caller says what the names are and words its own error.

/// The name of `known` that `given` most likely meant: the same but for case, else the
/// closest within a few edits (Damerau-Levenshtein on lowercase, so a swapped pair of letters
/// is one edit; at most 1 edit for names up to 5 characters, 2 up to 11, 3 beyond). `None`
/// when `given` is itself known, or nothing is close.
pub(crate) fn closest<'a>(
    given: &str,
    known: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let lower = given.to_lowercase();
    let allowed = match given.chars().count() {
        0..=5 => 1,
        6..=11 => 2,
        _ => 3,
    };
    known
        .into_iter()
        .filter(|k| *k != given)
        .map(|k| (strsim::damerau_levenshtein(&lower, &k.to_lowercase()), k))
        .filter(|(d, _)| *d <= allowed)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// `" (did you mean `NAME`?)"` for the `closest` name, or nothing: ready to be put in an
/// error message.
pub fn did_you_mean<'a>(given: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(given, known)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARAMS: &[&str] = &["temperature", "top_p", "top_k", "max_tokens", "stop"];

    #[test]
    fn a_near_miss_gets_the_name_it_meant() {
        assert_eq!(
            closest("tempreature", PARAMS.iter().copied()),
            Some("temperature")
        );
        assert_eq!(
            closest("max_token", PARAMS.iter().copied()),
            Some("max_tokens")
        );
        assert_eq!(closest("TOP_P", PARAMS.iter().copied()), Some("top_p"));
        let methods = ["Initialize", "Shutdown", "ListConversations"];
        assert_eq!(closest("initialize", methods), Some("Initialize"));
        assert_eq!(
            closest("listconversation", methods),
            Some("ListConversations")
        );
        assert_eq!(
            did_you_mean("Shutdwn", methods),
            " (did you mean `Shutdown`?)"
        );
    }

    #[test]
    fn a_known_name_or_a_far_one_gets_nothing() {
        assert_eq!(closest("temperature", PARAMS.iter().copied()), None);
        assert_eq!(closest("temp", PARAMS.iter().copied()), None);
        assert_eq!(closest("seed", PARAMS.iter().copied()), None);
        assert_eq!(did_you_mean("", PARAMS.iter().copied()), "");
    }
}
