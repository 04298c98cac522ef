//! Where `genai chat` reads what the user types: reedline on a terminal (multi-line input with
//! Alt-Enter or a trailing backslash, bracketed paste, Emacs keys, history kept in a file of
//! the data folder), or stdin line by line when it is not a terminal (a script drives the
//! chat). It only reads input; it never sends anything anywhere.

use std::borrow::Cow;
use std::path::Path;

use reedline::{
    default_emacs_keybindings, Emacs, FileBackedHistory, KeyCode, KeyModifiers, Prompt,
    PromptEditMode, PromptHistorySearch, PromptHistorySearchStatus, Reedline, ReedlineEvent,
    Signal, ValidationResult, Validator,
};
use tokio::io::{AsyncBufReadExt, BufReader, Lines, Stdin};

use super::commands;
use genai_core::error::Error;

/// How many entries the input history keeps.
const HISTORY_SIZE: usize = 1000;

/// What the user did.
pub enum Read {
    /// A whole input (its continuation backslashes gone).
    Text(String),
    /// Ctrl-C at the prompt: the line was cleared.
    Cleared,
    /// Ctrl-D, `/exit`'s twin, or the end of piped input.
    End,
}

/// The chat's prompt: the model's name, then `> ` (`. ` on the lines after the first).
pub struct ChatPrompt {
    pub model: String,
}

impl Prompt for ChatPrompt {
    fn render_prompt_left(&self) -> Cow<'_, str> {
        Cow::Borrowed(&self.model)
    }

    fn render_prompt_right(&self) -> Cow<'_, str> {
        Cow::Borrowed("")
    }

    fn render_prompt_indicator(&self, _: PromptEditMode) -> Cow<'_, str> {
        Cow::Borrowed("> ")
    }

    fn render_prompt_multiline_indicator(&self) -> Cow<'_, str> {
        Cow::Borrowed(". ")
    }

    fn render_prompt_history_search_indicator(&self, search: PromptHistorySearch) -> Cow<'_, str> {
        let failing = match search.status {
            PromptHistorySearchStatus::Passing => "",
            PromptHistorySearchStatus::Failing => "failing ",
        };
        Cow::Owned(format!("({failing}search: {}) ", search.term))
    }
}

/// A line that ends with a backslash waits for the next one.
struct Backslash;

impl Validator for Backslash {
    fn validate(&self, line: &str) -> ValidationResult {
        if commands::continues(line) {
            ValidationResult::Incomplete
        } else {
            ValidationResult::Complete
        }
    }
}

/// The user's input.
pub enum Input {
    Editor(Box<Reedline>, ChatPrompt),
    Piped(Lines<BufReader<Stdin>>),
}

impl Input {
    /// The line editor, its history in `history_file` (colours off when `colour` is false).
    pub fn editor(history_file: &Path, model: String, colour: bool) -> Result<Input, Error> {
        let history = FileBackedHistory::with_file(HISTORY_SIZE, history_file.to_path_buf())
            .map_err(|e| {
                Error::internal(format!(
                    "cannot open the input history {}: {e}",
                    history_file.display()
                ))
            })?;
        let mut keys = default_emacs_keybindings();
        keys.add_binding(
            KeyModifiers::ALT,
            KeyCode::Enter,
            ReedlineEvent::Edit(vec![reedline::EditCommand::InsertNewline]),
        );
        let editor = Reedline::create()
            .with_history(Box::new(history))
            .with_edit_mode(Box::new(Emacs::new(keys)))
            .with_validator(Box::new(Backslash))
            .with_ansi_colors(colour)
            .use_bracketed_paste(true);
        Ok(Input::Editor(Box::new(editor), ChatPrompt { model }))
    }

    /// Stdin read line by line.
    pub fn piped() -> Input {
        Input::Piped(BufReader::new(tokio::io::stdin()).lines())
    }

    pub fn is_editor(&self) -> bool {
        matches!(self, Input::Editor(..))
    }

    /// Shows `model` in the prompt from now on.
    pub fn set_model(&mut self, model: &str) {
        if let Input::Editor(_, prompt) = self {
            prompt.model = model.to_string();
        }
    }

    /// The next input.
    pub async fn read(&mut self) -> Result<Read, Error> {
        match self {
            Input::Editor(editor, prompt) => {
                let signal = tokio::task::block_in_place(|| editor.read_line(&*prompt))
                    .map_err(|e| Error::internal(format!("reading the terminal failed: {e}")))?;
                Ok(match signal {
                    Signal::Success(text) => Read::Text(commands::joined(&text)),
                    Signal::CtrlC => Read::Cleared,
                    _ => Read::End,
                })
            }
            Input::Piped(lines) => {
                let mut text = String::new();
                loop {
                    let line = lines
                        .next_line()
                        .await
                        .map_err(|e| Error::internal(format!("reading stdin failed: {e}")))?;
                    let Some(line) = line else {
                        return Ok(if text.is_empty() {
                            Read::End
                        } else {
                            Read::Text(commands::joined(&text))
                        });
                    };
                    text.push_str(&line);
                    if !commands::continues(&line) {
                        return Ok(Read::Text(commands::joined(&text)));
                    }
                    text.push('\n');
                }
            }
        }
    }
}
