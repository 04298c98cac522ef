//! The one secret redactor: every error message, log line and daemon frame passes through
//! `redact` before it leaves the process.
//!
//! It owns the process-wide list of known secrets (every key genai has used or read from its
//! config: provider keys, plugin keys, MCP server environment values, key commands' output)
//! and the shapes of keys providers echo back (OpenAI's 401 repeats `sk-...`, Gemini's
//! `?key=AIza...`, `Bearer ...`). It must never log, print or return a secret itself, and it
//! must stay linear in the text it scans: it runs on every outgoing line.

use std::borrow::Cow;
use std::sync::RwLock;

/// What a secret is replaced with.
pub(crate) const MASK: &str = "********";

/// Secrets shorter than this are not remembered: replacing two or three characters everywhere
/// would garble every message, and such a value is no real key.
const MIN_SECRET_LEN: usize = 6;

/// Prefixes of the keys providers hand out; a token starting with one and followed by at least
/// [`MIN_TAIL`] key characters is masked even when genai never saw the key (a provider may
/// echo a key it received from somewhere else, such as a proxy).
const KEY_PREFIXES: &[&str] = &[
    "sk-",
    "sk_",
    "rk_",
    "pk_",
    "xai-",
    "gsk_",
    "AIza",
    "AKIA",
    "ASIA",
    "ghp_",
    "gho_",
    "github_pat_",
    "hf_",
    "pplx-",
    "csk-",
    "nvapi-",
    "r8_",
];

/// Key characters after a prefix before a token counts as a key.
const MIN_TAIL: usize = 12;

/// Words after which the next token is a credential whatever it looks like.
const CREDENTIAL_LEADS: &[&str] = &["bearer ", "key=", "api_key=", "token=", "x-api-key: "];

static KNOWN: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Remembers a secret so that `redact` masks it from now on. Cheap when already known.
pub fn remember(secret: &str) {
    let secret = secret.trim();
    if secret.len() < MIN_SECRET_LEN {
        return;
    }
    if KNOWN
        .read()
        .map(|k| k.iter().any(|s| s == secret))
        .unwrap_or(true)
    {
        return;
    }
    if let Ok(mut known) = KNOWN.write() {
        if !known.iter().any(|s| s == secret) {
            known.push(secret.to_string());
            // Longest first, so a key that contains another is masked whole.
            known.sort_by_key(|s| std::cmp::Reverse(s.len()));
        }
    }
}

/// `text` with every known secret and every key-shaped token replaced by [`MASK`].
pub fn redact(text: &str) -> Cow<'_, str> {
    let known = redact_known(text);
    match redact_shapes(&known) {
        Cow::Borrowed(_) => known,
        Cow::Owned(s) => Cow::Owned(s),
    }
}

/// `text` with every known secret replaced (not key shapes: for model text, where an `sk-...`
/// the model wrote is content, but the user's own key never is).
pub fn redact_known(text: &str) -> Cow<'_, str> {
    match KNOWN.read() {
        Ok(known) => replace_known(&known, text),
        Err(_) => Cow::Borrowed(text),
    }
}

/// [`redact_known`] of `text`, in place; whether it changed.
pub fn mask_known(text: &mut String) -> bool {
    match redact_known(text) {
        Cow::Owned(masked) => {
            *text = masked;
            true
        }
        Cow::Borrowed(_) => false,
    }
}

/// `text` with each of `known` (longest first) replaced by [`MASK`].
fn replace_known<'t>(known: &[String], text: &'t str) -> Cow<'t, str> {
    let mut out = Cow::Borrowed(text);
    for secret in known {
        if out.contains(secret.as_str()) {
            out = Cow::Owned(out.replace(secret.as_str(), MASK));
        }
    }
    out
}

/// The length of the longest end of `text` that is the start (not the whole) of a known
/// secret: for each secret, the first place in its reach where the text's end begins it.
fn partial_end(known: &[String], text: &str) -> usize {
    let bytes = text.as_bytes();
    known
        .iter()
        .filter_map(|s| {
            let s = s.as_bytes();
            let from = bytes.len().saturating_sub(s.len() - 1);
            (from..bytes.len())
                .find(|&i| bytes[i] == s[0] && s.starts_with(&bytes[i..]))
                .map(|i| bytes.len() - i)
        })
        .max()
        .unwrap_or(0)
}

/// Masks the known secrets of a text that comes in pieces (a streamed reply): the end of
/// what came that may begin a known secret is held back until the next piece, or
/// [`StreamMask::finish`], tells. What it lets out, put together, is [`redact_known`] of the
/// whole text.
#[derive(Debug, Default)]
pub struct StreamMask {
    held: String,
}

impl StreamMask {
    /// The text that can go out now that `piece` came (maybe empty).
    pub fn push(&mut self, piece: &str) -> String {
        let Ok(known) = KNOWN.read() else {
            return piece.to_string();
        };
        if known.is_empty() && self.held.is_empty() {
            return piece.to_string();
        }
        self.held.push_str(piece);
        let held = std::mem::take(&mut self.held);
        let masked = match replace_known(&known, &held) {
            Cow::Owned(masked) => Some(masked),
            Cow::Borrowed(_) => None,
        };
        let mut text = masked.unwrap_or(held);
        // A secret's first bytes start a character, so the cut is on a character boundary.
        self.held = text.split_off(text.len() - partial_end(&known, &text));
        text
    }

    /// What was held back, at the end of the text (it cannot be a whole secret).
    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'*' | b'.' | b'~' | b'+' | b'/' | b'=')
}

/// Masks tokens that start with a known key prefix (at a word start) and tokens that follow a
/// credential lead such as `Bearer `. One pass over the bytes.
fn redact_shapes(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let at_word_start = i == 0 || !is_key_char(bytes[i - 1]);
        let mut key_start = None;
        if at_word_start {
            if let Some(p) = KEY_PREFIXES
                .iter()
                .find(|p| bytes[i..].starts_with(p.as_bytes()))
            {
                key_start = Some((i, i + p.len(), MIN_TAIL));
            } else if let Some(lead) = CREDENTIAL_LEADS.iter().find(|l| {
                bytes.len() - i >= l.len()
                    && bytes[i..i + l.len()].eq_ignore_ascii_case(l.as_bytes())
            }) {
                key_start = Some((i + lead.len(), i + lead.len(), 8));
            }
        }
        let Some((start, tail_start, min_tail)) = key_start else {
            i += 1;
            continue;
        };
        let mut end = tail_start;
        while end < bytes.len() && is_key_char(bytes[end]) {
            end += 1;
        }
        // A sentence's full stop is not part of the key.
        while end > tail_start && bytes[end - 1] == b'.' {
            end -= 1;
        }
        if end - tail_start >= min_tail && text[start..end] != *MASK {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..start]);
            o.push_str(MASK);
            copied = end;
        }
        i = end.max(i + 1);
    }
    match out {
        None => Cow::Borrowed(text),
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
    }
}

/// A log writer that redacts each line before it reaches stderr.
pub struct RedactingWriter<W: std::io::Write>(pub W);

impl<W: std::io::Write> std::io::Write for RedactingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = String::from_utf8_lossy(buf);
        self.0.write_all(redact(&text).as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_shapes_echoed_by_providers_are_masked() {
        let openai = "Incorrect API key provided: sk-proj-abc123def456ghi789. You can find your API key at https://platform.openai.com/account/api-keys.";
        let r = redact(openai);
        assert!(!r.contains("abc123"), "{r}");
        assert!(r.contains("Incorrect API key provided: ********."), "{r}");
        assert!(r.contains("account/api-keys"), "{r}");
        let starred = redact("Incorrect API key provided: sk-abc12********************wxyz");
        assert!(!starred.contains("wxyz"), "{starred}");
        let gemini =
            redact("GET /v1beta/models?key=AIzaSyA1234567890abcdefghijklmnopqrstuv failed");
        assert!(!gemini.contains("AIzaSy"), "{gemini}");
        let bearer = redact("sent Authorization: Bearer abcdefgh12345678");
        assert!(!bearer.contains("abcdefgh"), "{bearer}");
        // Words that merely start like a key are left alone.
        assert_eq!(redact("ask-me and sk-short"), "ask-me and sk-short");
        assert_eq!(redact("no secret here"), "no secret here");
    }

    #[test]
    fn a_secret_split_across_pieces_is_masked_and_the_rest_goes_out_unchanged() {
        remember("sk-corp-streamed-0123456789");
        let whole = "Your key is sk-corp-streamed-0123456789, and sk-corp is a prefix. é!";
        // Every way of cutting the text in two, and one piece per character.
        for cut in (0..=whole.len()).filter(|&i| whole.is_char_boundary(i)) {
            let mut m = StreamMask::default();
            let mut out = m.push(&whole[..cut]);
            out.push_str(&m.push(&whole[cut..]));
            out.push_str(&m.finish());
            assert_eq!(out, redact_known(whole), "cut at {cut}");
        }
        let mut m = StreamMask::default();
        let mut out = String::new();
        for c in whole.chars() {
            out.push_str(&m.push(&c.to_string()));
        }
        out.push_str(&m.finish());
        assert_eq!(out, "Your key is ********, and sk-corp is a prefix. é!");
        // Text that cannot begin a secret is not held.
        let mut m = StreamMask::default();
        assert_eq!(m.push("plain words "), "plain words ");
        assert_eq!(m.push("then sk-co"), "then ");
        assert_eq!(m.finish(), "sk-co");
    }

    #[test]
    fn remembered_secrets_are_masked_anywhere_even_without_a_key_shape() {
        remember("my own very-secret value");
        let r = redact("the body said: my own very-secret value!");
        assert_eq!(r, "the body said: ********!");
        assert_eq!(redact_known("xmy own very-secret valuex"), "x********x");
        remember("abc");
        assert_eq!(redact("abc"), "abc", "too short to be a key");
    }
}
