//! One turn shown on a terminal, shared by `genai ask` and `genai chat`: the terminal as the
//! core's client port (`Terminal`: confirmations asked on the terminal), and [`show_turn`],
//! which follows a turn's `TurnStream`, prints its reply as it streams (Markdown drawn when
//! asked, each line as it ends, the unfinished one shown as written meanwhile; the reasoning
//! dimmed on stderr) and cancels it on Ctrl-C.
//!
//! It prints what a turn brings and nothing else; it must never decide what a turn is (the
//! front-ends do) nor reach past the core's public calls.

use std::io::{IsTerminal, Write};

use async_trait::async_trait;
use genai_core::error::Error;
use genai_core::feature::port::{
    ClientPort, Confirmation, HostedTurn, PermissionAnswer, PermissionAsk, PromptEvent, PromptRef,
    TurnEvent, TurnRef,
};
use genai_core::feature::TurnOutcome;
use genai_core::session::TurnStream;

/// The terminal as the core's client: confirmations are asked on the terminal (the turns'
/// events reach [`show_turn`] through their stream).
pub struct Terminal {
    streaming: bool,
    yes: bool,
}

impl Terminal {
    /// A port that wants streamed pieces when `streaming` says so. `yes` confirms what tools
    /// ask without asking.
    pub fn new(streaming: bool, yes: bool) -> Terminal {
        Terminal { streaming, yes }
    }
}

#[async_trait]
impl ClientPort for Terminal {
    fn streaming(&self) -> bool {
        self.streaming
    }

    // `show_turn` follows the turn through its stream.
    fn turn_event(&self, _: &TurnRef, _: TurnEvent) {}

    // The terminal sends no prompts to agents and hosts no feature.
    fn prompt_event(&self, _: &PromptRef, _: PromptEvent) {}

    fn hosted_turn(&self, _: HostedTurn) {}

    async fn confirm(&self, c: Confirmation) -> Result<bool, Error> {
        let yes = self.yes;
        tokio::task::spawn_blocking(move || confirm_on_tty(&c.tool, &c.text, yes))
            .await
            .map_err(|e| Error::internal(format!("asking on the terminal failed: {e}")))
    }

    async fn ask_permission(&self, ask: PermissionAsk) -> Result<PermissionAnswer, Error> {
        let yes = self.yes;
        tokio::task::spawn_blocking(move || permission_on_tty(&ask, yes))
            .await
            .map_err(|e| Error::internal(format!("asking on the terminal failed: {e}")))?
    }
}

/// Asks on the terminal whether a tool call may run: `--yes` allows it once; without a
/// terminal nobody can answer (an error: the call is refused and the model told so).
fn permission_on_tty(ask: &PermissionAsk, yes: bool) -> Result<PermissionAnswer, Error> {
    let colour = colour();
    if yes {
        eprintln!("genai: {} (allowed by --yes)", ask.title);
        let colour = colour && std::io::stderr().is_terminal();
        if let Some(preview) = super::changes::preview(ask, colour) {
            eprintln!("{preview}");
        }
        return Ok(PermissionAnswer::AllowOnce);
    }
    // What the call would do, before the question: the diff, or the whole command.
    let preview = super::changes::preview(ask, colour)
        .map(|p| format!("{p}\n"))
        .unwrap_or_default();
    let question = format!(
        "\n{} ({})\n{preview}Allow? [y]es, [n]o, [a]lways ({}): ",
        ask.title, ask.reason, ask.always_rule
    );
    let Some(line) = ask_tty(&question) else {
        // In CI: the rule that would allow it, said once however often the model asks.
        static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
        let first = SAID.lock().is_ok_and(|mut said| {
            let first = !said.contains(&ask.always_rule);
            if first {
                said.push(ask.always_rule.clone());
            }
            first
        });
        if first {
            eprintln!(
                "genai: {} refused: no terminal to ask on; --allow '{}' allows it (--yes allows every ask)",
                ask.title, ask.always_rule
            );
        }
        return Err(Error::new(
            genai_core::error::ErrorKind::FeatureError,
            "no terminal to ask on",
        ));
    };
    Ok(match line.as_str() {
        "y" | "yes" => PermissionAnswer::AllowOnce,
        "a" | "always" => PermissionAnswer::AllowAlways,
        _ => PermissionAnswer::RejectOnce,
    })
}

/// Answers a tool's confirmation request: `--yes`, else a question on the terminal, else no.
fn confirm_on_tty(tool: &str, text: &str, yes: bool) -> bool {
    if yes {
        eprintln!("genai: {tool} asks: {text} (confirmed by --yes)");
        return true;
    }
    match ask_tty(&format!("\n{tool} asks: {text}\nConfirm? [y/N] ")) {
        Some(line) => matches!(line.as_str(), "y" | "yes"),
        None => {
            eprintln!(
                "genai: {tool} asks: {text} (refused: no terminal to ask on; --yes confirms)"
            );
            false
        }
    }
}

/// Writes `question` on the controlling terminal and reads the answer line, trimmed and in
/// lower case; `None` when there is no terminal.
fn ask_tty(question: &str) -> Option<String> {
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty")
        .ok()?;
    let _ = write!(tty, "{question}");
    let _ = tty.flush();
    let mut line = String::new();
    let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(tty), &mut line);
    Some(line.trim().to_ascii_lowercase())
}

/// Whether colours are wanted where a terminal shows them: `NO_COLOR` is not set (or empty).
pub fn colour() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Whether a reply is drawn as Markdown: stdout is a terminal and `NO_COLOR` is not set.
pub fn renders_markdown() -> bool {
    std::io::stdout().is_terminal() && colour()
}

/// The model's reasoning, dimmed on stderr, ended by a line break before the answer.
#[derive(Default)]
struct ReasoningPane {
    open: bool,
}

impl ReasoningPane {
    fn show(&mut self, piece: &str) {
        if piece.is_empty() {
            return;
        }
        self.open = true;
        let mut err = std::io::stderr();
        let _ = write!(err, "\x1b[2m{piece}\x1b[0m");
        let _ = err.flush();
    }

    fn close(&mut self) {
        if std::mem::take(&mut self.open) {
            eprintln!();
        }
    }
}

/// The unfinished last line of a reply drawn as written while it streams (Markdown is drawn a
/// whole line at a time), erased when the line is drawn as Markdown. It begins at the start of
/// a terminal row.
#[derive(Default)]
struct Draft {
    /// What the terminal shows of it.
    shown: String,
}

impl Draft {
    /// The escapes that erase what is shown on a terminal `columns` wide, leaving the cursor
    /// where the draft began.
    fn erase(&mut self, columns: usize) -> String {
        if self.shown.is_empty() {
            return String::new();
        }
        let width = unicode_width::UnicodeWidthStr::width(self.shown.as_str());
        // A row filled to its last column keeps the cursor on it.
        let up = width.saturating_sub(1) / columns.max(1);
        self.shown.clear();
        match up {
            0 => "\r\x1b[J".to_string(),
            n => format!("\x1b[{n}A\r\x1b[J"),
        }
    }

    /// What to write so that the terminal shows `pending` (control characters as spaces).
    fn show(&mut self, pending: &str, columns: usize) -> String {
        let text: String = pending
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .collect();
        if let Some(more) = text.strip_prefix(self.shown.as_str()) {
            let more = more.to_string();
            self.shown = text;
            return more;
        }
        let mut out = self.erase(columns);
        out.push_str(&text);
        self.shown = text;
        out
    }
}

/// The terminal's width in columns (80 when it cannot be told, or says 0).
fn columns() -> usize {
    crossterm::terminal::size()
        .ok()
        .map(|(c, _)| usize::from(c))
        .filter(|c| *c > 0)
        .unwrap_or(80)
}

/// How a turn is shown.
#[derive(Debug, Clone, Copy)]
pub struct View {
    /// Print the reply on stdout (`ask --json` prints only its object).
    pub print: bool,
    /// Draw the reply's Markdown.
    pub markdown: bool,
    /// Show the model's reasoning dimmed on stderr.
    pub reasoning: bool,
}

/// What a turn brought.
pub struct Shown {
    pub outcome: TurnOutcome,
    /// The reply's text as printed (empty when nothing was).
    pub printed: String,
    /// Ctrl-C cancelled the turn.
    pub interrupted: bool,
    /// Writing the reply on stdout failed (its reader went away, such as `| head`), which
    /// cancelled the turn; the front-end ends with [`super::out::give_up`].
    pub stdout_failed: Option<std::io::Error>,
    /// The files the turn's tools changed.
    pub changed: super::changes::Changed,
    /// Tool calls the permission policy (or a hook) refused.
    pub refused: usize,
}

/// Shows the turn of `agent`'s conversation that `turn` follows until its final event: the
/// reply on stdout as it streams (or whole at the end), drawn as Markdown when `view` says so,
/// ended by a line break; the reasoning before it on stderr, and after it a line there when
/// the reply was cut short. Ctrl-C (or a failed write on stdout, such as a closed pipe)
/// cancels the turn, which still ends with one final event; nothing more is written on a
/// failed stdout.
pub async fn show_turn(mut turn: TurnStream, view: View) -> Result<Shown, Error> {
    let mut out = std::io::stdout();
    let mut markdown = (view.print && view.markdown).then(super::markdown::MarkdownStream::new);
    let mut printed = String::new();
    let mut pane = ReasoningPane::default();
    let mut draft = Draft::default();
    let mut reasoning_shown = false;
    let mut interrupted = false;
    let mut stdout_failed = None;
    let mut changed = super::changes::Changed::default();
    let mut refused = 0;
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    let outcome = loop {
        let event = tokio::select! {
            e = turn.next_event() => e,
            _ = &mut ctrl_c, if !interrupted => {
                interrupted = true;
                turn.cancel();
                continue;
            }
        };
        let Some(event) = event else {
            return Err(Error::internal("the turn ended twice"));
        };
        match event {
            TurnEvent::Reasoning(delta) if view.reasoning => {
                reasoning_shown = true;
                pane.show(&delta);
            }
            TurnEvent::Chunk(delta) if view.print && stdout_failed.is_none() => {
                pane.close();
                printed.push_str(&delta);
                let shown = match &mut markdown {
                    Some(md) => {
                        let lines = md.push(&delta);
                        let mut shown = String::new();
                        if !lines.is_empty() {
                            shown.push_str(&draft.erase(columns()));
                            shown.push_str(&lines);
                        }
                        shown.push_str(&draft.show(md.pending(), columns()));
                        shown
                    }
                    None => delta,
                };
                if let Err(e) = out.write_all(shown.as_bytes()).and_then(|_| out.flush()) {
                    // Nobody reads the reply any more: the model stops generating it.
                    stdout_failed = Some(e);
                    turn.cancel();
                }
            }
            TurnEvent::ToolCall(c) => {
                pane.close();
                // Progress for a person watching; scripts read stdout only.
                if let Some(name) = c.name.filter(|_| std::io::stderr().is_terminal()) {
                    let _ = out.write_all(draft.erase(columns()).as_bytes());
                    let _ = out.flush();
                    eprintln!("[calling {name}]");
                    if let Some(md) = &markdown {
                        let _ = out.write_all(draft.show(md.pending(), columns()).as_bytes());
                    }
                }
            }
            TurnEvent::ToolFinished {
                edit: Some(edit),
                is_error: false,
                ..
            } => changed.add(edit),
            TurnEvent::Decision(d) => refused += usize::from(d.decision != "allow"),
            event @ (TurnEvent::Compacted(_)
            | TurnEvent::Plan { .. }
            | TurnEvent::Subagent { .. }) => {
                let said = match event {
                    TurnEvent::Compacted(c) => format!("genai: {}\n", c.describe()),
                    TurnEvent::Plan { entries } => super::plan::checklist(&entries),
                    TurnEvent::Subagent { agent, event, .. } => {
                        match &*event {
                            TurnEvent::ToolFinished {
                                edit: Some(edit),
                                is_error: false,
                                ..
                            } => changed.add(edit.clone()),
                            TurnEvent::Decision(d) => refused += usize::from(d.decision != "allow"),
                            _ => {}
                        }
                        match std::io::stderr().is_terminal() {
                            true => nested(&agent, &event),
                            false => String::new(),
                        }
                    }
                    _ => String::new(),
                };
                if said.is_empty() {
                    continue;
                }
                pane.close();
                let _ = out.write_all(draft.erase(columns()).as_bytes());
                let _ = out.flush();
                eprint!("{said}");
                if let Some(md) = &markdown {
                    let _ = out.write_all(draft.show(md.pending(), columns()).as_bytes());
                }
            }
            TurnEvent::Done(outcome) => break outcome,
            _ => {}
        }
    };
    if view.reasoning && !reasoning_shown && outcome.error.is_none() {
        // Not streamed: the reasoning comes whole, before the answer.
        pane.show(&outcome.reasoning);
    }
    pane.close();
    if view.print && stdout_failed.is_none() {
        if printed.is_empty() && outcome.error.is_none() {
            printed = outcome.summary.clone();
            let shown = match &mut markdown {
                Some(md) => md.push(&printed),
                None => printed.clone(),
            };
            let _ = out.write_all(shown.as_bytes());
        }
        if let Some(md) = &mut markdown {
            let _ = out.write_all(draft.erase(columns()).as_bytes());
            let _ = out.write_all(md.finish().as_bytes());
        }
        if !printed.is_empty() && !printed.ends_with('\n') {
            let _ = writeln!(out);
        }
        let _ = out.flush();
    }
    if let Some(cut) = outcome.cut().filter(|_| outcome.error.is_none()) {
        eprintln!("genai: {cut}");
    }
    Ok(Shown {
        outcome,
        printed,
        interrupted,
        stdout_failed,
        changed,
        refused,
    })
}

/// A subagent's event as the terminal shows it under its task call: indented, with the
/// subagent's name (its text is not shown: its answer is the call's result).
fn nested(agent: &str, event: &TurnEvent) -> String {
    match (event, event.progress_line()) {
        (TurnEvent::Plan { entries }, _) => super::plan::checklist(entries)
            .lines()
            .map(|l| format!("  [{agent}] {l}\n"))
            .collect(),
        (_, Some(line)) => format!("  [{agent}] {line}\n"),
        (_, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::Draft;

    #[test]
    fn a_draft_grows_in_place_and_is_erased_over_the_rows_it_took() {
        let mut d = Draft::default();
        assert_eq!(d.erase(80), "");
        assert_eq!(d.show("Hello **wo", 10), "Hello **wo");
        assert_eq!(d.show("Hello **wor\tld", 10), "r ld");
        // 15 columns on a 10-column terminal: the cursor is one row down.
        assert_eq!(d.erase(10), "\x1b[1A\r\x1b[J");
        assert_eq!(d.erase(10), "");
        // Exactly one full row keeps the cursor on it; wide characters count twice.
        d.show("0123456789", 10);
        assert_eq!(d.erase(10), "\r\x1b[J");
        d.show("日本語日本語", 10);
        assert_eq!(d.erase(10), "\x1b[1A\r\x1b[J");
        // A draft that is not a continuation is redrawn.
        d.show("abc", 10);
        assert_eq!(d.show("xyz", 10), "\r\x1b[Jxyz");
    }
}
