//! `genai ask -f PATH`: text files given to the model as context, each as a fenced block headed
//! by its path and tagged with its language (from the file name), after the prompt.
//!
//! It owns reading the files within a size cap and refusing what is not text (a NUL byte or
//! invalid UTF-8) with a clear line. It must never send anything: refusals happen before the
//! framework is asked anything. Images go through `-a` (`attach.rs`).

use genai::error::{Error, ErrorKind};

/// The largest file genai reads as context.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

fn refuse(msg: String) -> Error {
    Error::new(ErrorKind::InvalidParams, msg)
}

/// The Markdown language tag of a file name, when it has a known extension.
fn language(path: &str) -> &'static str {
    let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase());
    match ext.as_deref() {
        Some("rs") => "rust",
        Some("py") => "python",
        Some("js" | "mjs" | "cjs") => "javascript",
        Some("ts" | "tsx") => "typescript",
        Some("go") => "go",
        Some("c" | "h") => "c",
        Some("cc" | "cpp" | "hpp" | "cxx") => "cpp",
        Some("java") => "java",
        Some("sh" | "bash") => "bash",
        Some("toml") => "toml",
        Some("json") => "json",
        Some("yaml" | "yml") => "yaml",
        Some("md") => "markdown",
        Some("html" | "htm") => "html",
        Some("css") => "css",
        Some("sql") => "sql",
        _ => "",
    }
}

/// `text` as a fenced block headed by `path`; the fence is longer than any run of backticks in
/// the text, so the block cannot end early.
pub fn fenced(path: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{path}:\n{fence}{}\n{body}\n{fence}", language(path))
}

/// Reads every file, in order, as fenced blocks separated by blank lines.
pub fn load_all(paths: &[String]) -> Result<String, Error> {
    let mut blocks = Vec::with_capacity(paths.len());
    for path in paths {
        let meta =
            std::fs::metadata(path).map_err(|e| refuse(format!("cannot read file {path}: {e}")))?;
        if meta.is_dir() {
            return Err(refuse(format!(
                "{path} is a folder: name the files to send with -f"
            )));
        }
        if meta.len() > MAX_FILE_BYTES {
            return Err(refuse(format!(
                "file {path} is larger than genai's limit of {} KiB ({} KiB)",
                MAX_FILE_BYTES >> 10,
                meta.len() >> 10
            )));
        }
        let bytes =
            std::fs::read(path).map_err(|e| refuse(format!("cannot read file {path}: {e}")))?;
        let binary = || {
            refuse(format!(
                "{path} is a binary file, not text: images go with -a, other binary files cannot be sent"
            ))
        };
        if bytes.contains(&0) {
            return Err(binary());
        }
        let text = String::from_utf8(bytes).map_err(|_| binary())?;
        blocks.push(fenced(path, &text));
    }
    Ok(blocks.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_a_fenced_block_with_its_path_and_language() {
        assert_eq!(
            fenced("src/main.rs", "fn main() {}\n"),
            "src/main.rs:\n```rust\nfn main() {}\n```"
        );
        assert_eq!(fenced("notes", "a"), "notes:\n```\na\n```");
        // A fence in the text gets a longer one around it.
        assert_eq!(
            fenced("README.md", "x\n```sh\nls\n```"),
            "README.md:\n````markdown\nx\n```sh\nls\n```\n````"
        );
    }

    #[test]
    fn folders_binary_and_missing_files_are_refused_clearly() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("a.bin");
        std::fs::write(&bin, [0x89, b'P', 0, 1]).unwrap();
        let latin1 = dir.path().join("b.txt");
        std::fs::write(&latin1, [b'c', 0xe9]).unwrap();
        let d = dir.path().display().to_string();
        for (path, says) in [
            (bin.display().to_string(), "is a binary file"),
            (latin1.display().to_string(), "is a binary file"),
            (d.clone(), "is a folder"),
            (format!("{d}/absent.txt"), "cannot read file"),
        ] {
            let e = load_all(std::slice::from_ref(&path)).unwrap_err();
            assert_eq!(e.kind, ErrorKind::InvalidParams);
            assert!(e.message.contains(says), "{path}: {}", e.message);
        }
        let ok = dir.path().join("c.py");
        std::fs::write(&ok, "print(1)\n").unwrap();
        let text = load_all(&[ok.display().to_string(), ok.display().to_string()]).unwrap();
        assert_eq!(
            text.matches("```python\nprint(1)\n```").count(),
            2,
            "{text}"
        );
    }
}
