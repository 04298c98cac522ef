//! A file given to a model as context, rendered once into the text the model reads: a fenced
//! block headed by the file's name and tagged with its language. `genai ask -f` and the
//! protocol's `file` message part both come here, so a model sees a file the same way whoever
//! sent it.
//!
//! It owns the rendering and the language guess (from the name, else the media type). It must
//! never read a file, fetch a URL or decide what may be sent: front-ends do that.

use schemars::JsonSchema;
use serde::Deserialize;

/// A file as a client sends it in a message (`{"type":"file", ...}`): it becomes a text part.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FileInput {
    /// Always `file`.
    #[serde(rename = "type")]
    pub kind: FileTag,
    /// The file's path or name, shown above its text.
    pub(crate) name: String,
    /// The Markdown language tag of the text (`rust`, `python`...); guessed from the name's
    /// extension, then from `mimeType`, when absent.
    #[serde(default)]
    pub(crate) language: Option<String>,
    /// The media type of the text (`text/markdown`...), used for the language when the name
    /// says nothing.
    #[serde(default)]
    pub(crate) mime_type: Option<String>,
    /// The file's text.
    pub(crate) text: String,
}

/// The tag of a [`FileInput`].
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub enum FileTag {
    #[serde(rename = "file")]
    File,
}

impl FileInput {
    /// The text the model reads for this file.
    pub(crate) fn render(&self) -> String {
        let lang = match self.language.as_deref().map(str::trim) {
            Some(l) if !l.is_empty() => l.to_string(),
            _ => {
                let by_name = language(&self.name);
                if by_name.is_empty() {
                    self.mime_type
                        .as_deref()
                        .map(language_of_mime)
                        .unwrap_or_default()
                        .to_string()
                } else {
                    by_name.to_string()
                }
            }
        };
        fenced_as(&self.name, &lang, &self.text)
    }
}

/// The Markdown language tag of a file name, when it has a known extension.
pub(crate) fn language(path: &str) -> &'static str {
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

/// The Markdown language tag of a media type (parameters such as `; charset=` ignored).
pub(crate) fn language_of_mime(mime: &str) -> &'static str {
    let essence = mime.split(';').next().unwrap_or("").trim();
    match essence.to_ascii_lowercase().as_str() {
        "text/markdown" | "text/x-markdown" => "markdown",
        "application/json" => "json",
        "text/html" => "html",
        "text/css" => "css",
        "text/javascript" | "application/javascript" => "javascript",
        "application/toml" => "toml",
        "application/yaml" | "text/yaml" => "yaml",
        "text/x-rust" => "rust",
        "text/x-python" => "python",
        _ => "",
    }
}

/// `text` as a fenced block headed by `path`, its language guessed from the name.
pub(crate) fn fenced(path: &str, text: &str) -> String {
    fenced_as(path, language(path), text)
}

/// `text` as a fenced block headed by `name` and tagged `lang`; the fence is longer than any
/// run of backticks in the text, so the block cannot end early.
pub(crate) fn fenced_as(name: &str, lang: &str, text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = text.strip_suffix('\n').unwrap_or(text);
    // A language tag never carries a fence or a line break into the block's first line.
    let lang: String = lang
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '_' | '#' | '.'))
        .collect();
    format!("{name}:\n{fence}{lang}\n{body}\n{fence}")
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
    fn a_file_part_takes_its_language_from_the_part_the_name_then_the_media_type() {
        let part = |name: &str, language: Option<&str>, mime: Option<&str>| FileInput {
            kind: FileTag::File,
            name: name.into(),
            language: language.map(Into::into),
            mime_type: mime.map(Into::into),
            text: "x\n".into(),
        };
        assert_eq!(
            part("a.py", None, None).render(),
            "a.py:\n```python\nx\n```"
        );
        assert_eq!(
            part("a.py", Some("text"), None).render(),
            "a.py:\n```text\nx\n```"
        );
        assert_eq!(
            part("notes", None, Some("text/markdown; charset=utf-8")).render(),
            "notes:\n```markdown\nx\n```"
        );
        assert_eq!(
            part("n", Some("a\n```b"), None).render(),
            "n:\n```ab\nx\n```"
        );
    }
}
