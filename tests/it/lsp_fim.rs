//! Completion in `genai lsp` on a real local model (`GENAI_TEST_MODEL`, SmolLM2-135M-Instruct):
//! a model whose vocabulary has FIM tokens gets the raw fill-in-the-middle prompt (checked on
//! the token ids the engine logs: PRE, the text before the cursor, SUF, the text after it,
//! MID), a model without them a chat prompt.
//!
//! SmolLM2 has no FIM tokens, and no small FIM-trained GGUF is at hand, so the FIM model is a
//! copy of it whose vocabulary names three unused special tokens (`<issue_closed>`,
//! `<jupyter_text>`, `<jupyter_code>`) as Qwen's `<|fim_prefix|>`, `<|fim_suffix|>` and
//! `<|fim_middle|>` (same lengths, so only those bytes change); llama.cpp finds them by their
//! text as it does in real FIM models. The model was not trained on them, so the test checks
//! the prompt and that text comes back, not what the text says. Without the model the tests fail
//! when `CI` is set and are skipped, saying why, otherwise.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::rpc_client::{Daemon, DaemonConfig, Framing};

/// Model load and a short generation on a busy CI machine.
const WAIT: Duration = Duration::from_secs(180);
const URI: &str = "file:///work/project/src/calc.py";
const TEXT: &str = "import numpy as np\n\nvalues = np.array([1, 2, 3])\nprint(np.)\n";
/// The cursor: after `print(np.`.
const LINE: u32 = 3;
const CHARACTER: u32 = 9;

fn test_model() -> Option<PathBuf> {
    match std::env::var_os("GENAI_TEST_MODEL").filter(|p| !p.is_empty()) {
        Some(p) => Some(PathBuf::from(p)),
        None if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) => {
            panic!("GENAI_TEST_MODEL is not set (scripts/test.sh installs the demo model)")
        }
        None => {
            eprintln!("skipping: set GENAI_TEST_MODEL to SmolLM2-135M-Instruct's GGUF (scripts/install-demo-model.sh)");
            None
        }
    }
}

/// A copy of `model` in `dir` whose three unused special tokens are named as FIM tokens.
fn with_fim_tokens(model: &Path, dir: &Path) -> PathBuf {
    let mut bytes = std::fs::read(model).unwrap();
    // The vocabulary is in the metadata, at the start of the file.
    let head = bytes.len().min(16 << 20);
    for (old, new) in [
        ("<issue_closed>", "<|fim_prefix|>"),
        ("<jupyter_text>", "<|fim_suffix|>"),
        // Code cells of notebooks follow it in the model's training text: it goes on with code.
        ("<jupyter_code>", "<|fim_middle|>"),
    ] {
        assert_eq!(old.len(), new.len());
        // A GGUF string: its length as a little-endian u64, then its bytes.
        let mut needle = (old.len() as u64).to_le_bytes().to_vec();
        needle.extend_from_slice(old.as_bytes());
        let found: Vec<usize> = bytes[..head]
            .windows(needle.len())
            .enumerate()
            .filter(|(_, w)| *w == needle.as_slice())
            .map(|(i, _)| i)
            .collect();
        assert_eq!(
            found.len(),
            1,
            "{old} is not once in the vocabulary of {}: GENAI_TEST_MODEL must be SmolLM2-135M-Instruct",
            model.display()
        );
        let at = found[0] + 8;
        bytes[at..at + new.len()].copy_from_slice(new.as_bytes());
    }
    let path = dir.join("smollm2-fim.gguf");
    std::fs::write(&path, bytes).unwrap();
    path
}

/// `genai lsp` with completion on a local provider running `model`, the document open.
fn start(root: &Path, model: &Path) -> Daemon {
    let cfg =
        DaemonConfig::in_dir(root, Framing::ContentLength, "lsp").env("GENAI_LOG", "genai=trace");
    let model = Value::String(model.display().to_string());
    cfg.write_config(&format!(
        "[service_providers.coder]\nkind = \"local\"\nmodel = {model}\ncontext_size = 512\nslots = 1\n\n\
         [lsp]\nmodel = \"coder\"\n\n[lsp.completion]\nenabled = true\ndebounce_ms = 0\nmax_tokens = 12\n"
    ));
    let mut lsp = Daemon::spawn_command(&cfg, &["lsp"]);
    let init = lsp.call(
        "initialize",
        json!({"processId": null, "rootUri": "file:///work/project", "capabilities": {}}),
    );
    assert!(
        init["capabilities"]["completionProvider"].is_object(),
        "{init}"
    );
    lsp.notify("initialized", json!({}));
    lsp.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": URI, "languageId": "python", "version": 1, "text": TEXT}}),
    );
    lsp
}

/// Completion at the cursor: the one item, its text edit at the cursor and not blank.
fn complete(lsp: &mut Daemon) -> Value {
    let id = lsp.send_request(
        "textDocument/completion",
        json!({"textDocument": {"uri": URI}, "position": {"line": LINE, "character": CHARACTER}}),
    );
    let response = lsp.wait_response(&json!(id), WAIT);
    let items = response["result"]
        .as_array()
        .unwrap_or_else(|| panic!("no completion: {response}\n{}", lsp.stderr_text()));
    assert_eq!(items.len(), 1, "{response}");
    let item = items[0].clone();
    let edit = &item["textEdit"];
    assert_eq!(
        edit["range"]["start"],
        json!({"line": LINE, "character": CHARACTER})
    );
    assert!(
        !edit["newText"].as_str().unwrap().trim().is_empty(),
        "{item}"
    );
    item
}

/// The log without its colours (ANSI `ESC [ ... m`).
fn plain(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

/// The numbers in a logged field such as `tokens=[1, 2, 3]`.
fn logged_ids(line: &str, field: &str) -> Vec<i64> {
    let start = line.find(&format!("{field}=[")).unwrap() + field.len() + 2;
    let end = start + line[start..].find(']').unwrap();
    line[start..end]
        .split(',')
        .map(|n| n.trim().parse().unwrap())
        .collect()
}

/// The value of `name: N` in a logged `FimTokens { prefix: 1, ... }`.
fn logged_id(line: &str, name: &str) -> i64 {
    let start = line.find(&format!("{name}: ")).unwrap() + name.len() + 2;
    let digits: String = line[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

#[test]
fn a_model_with_fim_tokens_completes_from_the_fill_in_the_middle_prompt() {
    let Some(model) = test_model() else { return };
    let root = tempfile::tempdir().unwrap();
    let fim_model = with_fim_tokens(&model, root.path());
    let mut lsp = start(root.path(), &fim_model);
    let item = complete(&mut lsp);
    assert_eq!(item["detail"], "genai (fill-in-the-middle)", "{item}");

    // The prompt the engine evaluated: [BOS] PRE <before the cursor> SUF <after it> MID.
    let log = plain(&lsp.stderr_text());
    let fim = log
        .lines()
        .find(|l| l.contains("fill-in-the-middle prompt") && l.contains("FimTokens"))
        .unwrap_or_else(|| panic!("no FIM prompt logged:\n{log}"));
    let (pre, suf, mid) = (
        logged_id(fim, "prefix"),
        logged_id(fim, "suffix"),
        logged_id(fim, "middle"),
    );
    let tokens = log
        .lines()
        .find(|l| l.contains("fill-in-the-middle prompt tokens"))
        .map(|l| logged_ids(l, "tokens"))
        .unwrap_or_else(|| panic!("no FIM tokens logged:\n{log}"));
    let at = |id: i64| tokens.iter().position(|t| *t == id);
    let (p, s, m) = (at(pre).unwrap(), at(suf).unwrap(), at(mid).unwrap());
    assert!(p <= 1 && p + 1 < s && s + 1 < m, "{tokens:?}");
    assert_eq!(m, tokens.len() - 1, "MID ends the prompt: {tokens:?}");
    // No chat template: ChatML's `<|im_start|>` (id 1 in SmolLM2) is nowhere in it.
    assert!(!tokens.contains(&1), "{tokens:?}");
    assert!(
        !log.contains("rendered prompt"),
        "a chat prompt was rendered:\n{log}"
    );
}

#[test]
fn a_model_without_fim_tokens_completes_from_a_chat_prompt() {
    let Some(model) = test_model() else { return };
    let root = tempfile::tempdir().unwrap();
    let mut lsp = start(root.path(), &model);
    let item = complete(&mut lsp);
    assert_eq!(item["detail"], "genai (chat)", "{item}");
    let log = lsp.stderr_text();
    assert!(!log.contains("fill-in-the-middle prompt"), "{log}");
    assert!(log.contains("rendered prompt"), "{log}");
}
