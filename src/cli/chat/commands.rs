//! The chat's input lines: a prompt, or a slash command (`/model NAME`, `/file PATH`...). This
//! only parses; the chat loop (`chat/mod.rs`) carries commands out.

/// A slash command of `genai chat`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Show the model, or hand the conversation over to another.
    Model(Option<String>),
    /// Show the system prompt, or set it.
    System(Option<String>),
    /// An image for the next prompt.
    Attach(String),
    /// A text file for the next prompt.
    File(String),
    /// List the tools the model may call, or turn them on or off.
    Tools(Option<bool>),
    /// Show the model's parameters, or set some (`NAME=VALUE`).
    Params(Vec<String>),
    History,
    /// Send the conversation's earlier turns as a summary from now on.
    Compact,
    /// Put back the files the last turn of this conversation changed (`/undo force` also
    /// those changed since).
    Undo {
        force: bool,
    },
    New,
    Copy,
    Help,
    Exit,
    /// Any other name: a command file, a built-in command or an MCP server's prompt, with the
    /// rest of the line (refused when there is none of that name).
    Run {
        name: String,
        rest: String,
    },
}

/// What one input line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Text for the model (a line starting `//` sends its text from the second `/`).
    Prompt(String),
    Command(Command),
    /// A slash command that does not exist, or is used wrongly: the line to print.
    Refused(String),
    /// Nothing to do.
    Empty,
}

/// Every command with its arguments and what it does, for `/help`.
pub const HELP: &[(&str, &str)] = &[
    (
        "/model [NAME]",
        "show the model, or hand the conversation to NAME",
    ),
    ("/system [TEXT]", "show the system prompt, or set it"),
    ("/attach PATH|URL", "an image for the next prompt"),
    ("/file PATH", "a text file for the next prompt"),
    (
        "/tools [on|off]",
        "list the tools the model may call, or turn them on or off",
    ),
    (
        "/params [NAME=VALUE...]",
        "show the model's parameters, or set some",
    ),
    ("/history", "show this conversation's messages"),
    (
        "/compact",
        "send the earlier turns as a summary from now on (the history keeps them)",
    ),
    (
        "/undo [force]",
        "put back the files this conversation's last turn changed",
    ),
    ("/new", "start a new conversation"),
    ("/copy", "copy the last reply to the clipboard (OSC 52)"),
    ("/NAME [ARGS...]", "run a command (listed below)"),
    ("/help", "this list"),
    ("/exit", "leave (Ctrl-D too)"),
];

/// The text of the input (reedline's, or a piped line): a line ending in `\` goes on with the
/// next one; those backslashes go.
pub fn joined(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let last = lines.len() - 1;
    let kept: Vec<&str> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let line = line.strip_suffix('\r').unwrap_or(line);
            match line.trim_end_matches([' ', '\t']).strip_suffix('\\') {
                Some(before) if i < last => before,
                _ => line,
            }
        })
        .collect();
    kept.join("\n")
}

/// Whether the input so far waits for another line (it ends with a backslash).
pub fn continues(text: &str) -> bool {
    text.trim_end_matches([' ', '\t']).ends_with('\\')
}

/// Reads one input line.
pub fn parse(input: &str) -> Line {
    let text = input.trim();
    if text.is_empty() {
        return Line::Empty;
    }
    if let Some(escaped) = text.strip_prefix("//") {
        return Line::Prompt(format!("/{escaped}"));
    }
    let Some(command) = text.strip_prefix('/') else {
        return Line::Prompt(input.trim_end().to_string());
    };
    let (name, rest) = match command.split_once(char::is_whitespace) {
        Some((n, r)) => (n, r.trim()),
        None => (command, ""),
    };
    let arg = (!rest.is_empty()).then(|| rest.to_string());
    let needs = |what: &str| Line::Refused(format!("/{name} takes {what}"));
    let bare = |c: Command| match &arg {
        Some(_) => Line::Refused(format!("/{name} takes nothing after it")),
        None => Line::Command(c),
    };
    match name {
        "model" => Line::Command(Command::Model(arg)),
        "system" => Line::Command(Command::System(arg)),
        "attach" => arg.map_or_else(
            || needs("a PATH or URL"),
            |a| Line::Command(Command::Attach(a)),
        ),
        "file" => arg.map_or_else(|| needs("a PATH"), |a| Line::Command(Command::File(a))),
        "tools" => match arg.as_deref() {
            None => Line::Command(Command::Tools(None)),
            Some("on") => Line::Command(Command::Tools(Some(true))),
            Some("off") => Line::Command(Command::Tools(Some(false))),
            Some(_) => needs("nothing, `on` or `off`"),
        },
        "params" => Line::Command(Command::Params(
            rest.split_whitespace().map(str::to_string).collect(),
        )),
        "history" => bare(Command::History),
        "compact" => bare(Command::Compact),
        "undo" => match arg.as_deref() {
            None => Line::Command(Command::Undo { force: false }),
            Some("force") => Line::Command(Command::Undo { force: true }),
            Some(_) => needs("nothing or `force`"),
        },
        "new" => bare(Command::New),
        "copy" => bare(Command::Copy),
        "help" | "?" => bare(Command::Help),
        "exit" | "quit" => bare(Command::Exit),
        _ => Line::Command(Command::Run {
            name: name.to_string(),
            rest: rest.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(s: &str) -> Command {
        match parse(s) {
            Line::Command(c) => c,
            other => panic!("{s:?} gave {other:?}"),
        }
    }

    fn refused(s: &str) -> String {
        match parse(s) {
            Line::Refused(m) => m,
            other => panic!("{s:?} gave {other:?}"),
        }
    }

    #[test]
    fn commands_take_their_arguments() {
        assert_eq!(command("/model"), Command::Model(None));
        assert_eq!(
            command("  /model  openai:gpt-4o "),
            Command::Model(Some("openai:gpt-4o".into()))
        );
        assert_eq!(
            command("/system Be terse.  Very."),
            Command::System(Some("Be terse.  Very.".into()))
        );
        assert_eq!(
            command("/file src/a b.rs"),
            Command::File("src/a b.rs".into())
        );
        assert_eq!(command("/attach x.png"), Command::Attach("x.png".into()));
        assert_eq!(command("/tools"), Command::Tools(None));
        assert_eq!(command("/tools off"), Command::Tools(Some(false)));
        assert_eq!(
            command("/params temperature=0.2 top_p=1"),
            Command::Params(vec!["temperature=0.2".into(), "top_p=1".into()])
        );
        assert_eq!(command("/params"), Command::Params(vec![]));
        for (line, c) in [
            ("/history", Command::History),
            ("/undo", Command::Undo { force: false }),
            ("/undo force", Command::Undo { force: true }),
            ("/new", Command::New),
            ("/copy", Command::Copy),
            ("/help", Command::Help),
            ("/exit", Command::Exit),
            ("/quit", Command::Exit),
        ] {
            assert_eq!(command(line), c);
        }
    }

    #[test]
    fn wrong_commands_get_a_line_that_says_why() {
        assert_eq!(
            command("/review 42  high"),
            Command::Run {
                name: "review".into(),
                rest: "42  high".into()
            }
        );
        assert_eq!(refused("/file"), "/file takes a PATH");
        assert_eq!(refused("/attach  "), "/attach takes a PATH or URL");
        assert_eq!(
            refused("/tools maybe"),
            "/tools takes nothing, `on` or `off`"
        );
        assert_eq!(refused("/new now"), "/new takes nothing after it");
    }

    #[test]
    fn prompts_empty_lines_and_escaped_slashes() {
        assert_eq!(parse("   "), Line::Empty);
        assert_eq!(parse("hello\nthere  "), Line::Prompt("hello\nthere".into()));
        assert_eq!(
            parse("//usr/bin is a folder"),
            Line::Prompt("/usr/bin is a folder".into())
        );
    }

    #[test]
    fn a_trailing_backslash_continues_the_line() {
        assert!(continues("first \\"));
        assert!(continues("first \\  "));
        assert!(!continues("first"));
        assert_eq!(joined("one\\\ntwo\\\r\nthree"), "one\ntwo\nthree");
        assert_eq!(joined("a \\ b"), "a \\ b");
        assert_eq!(joined("one \\  \ntwo\\"), "one \ntwo\\");
    }
}
