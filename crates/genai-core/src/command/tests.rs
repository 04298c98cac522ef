use std::collections::BTreeMap;
use std::path::Path;

use serde_json::json;

use super::file::parse_text;
use super::*;

fn genai(text: &str) -> std::result::Result<Command, String> {
    parse_text(
        "t",
        text,
        Dialect::Genai,
        Place::Project,
        Some(Path::new("/p/.genai/commands/t.md")),
    )
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

fn run(c: &Command, line: &str, input: Option<&str>) -> Result<String> {
    let mut inv = split_words(c, &words(line))?;
    inv.input = input.map(str::to_string);
    Ok(c.prepare(&inv)?.text)
}

const FULL: &str = "---
description: Translate the text
model: openai:gpt-4o-mini
system: You translate.
parameters:
  temperature: 0.2
schema:
  type: object
tools: workspace
allow: [\"read_file(src/**)\"]
mode: read-only
files: [NOTES.md]
arguments:
  - name: lang
    description: The language
    default: French
  - name: tone
  - name: n
    default: 3
apply: replace
---
Translate into {{lang}} ({{ tone }}, {{n}} tries), literal \\{{lang}}:

{{input}}
";

#[test]
fn a_genai_file_carries_every_field() {
    let c = genai(FULL).unwrap();
    assert!(c.places_input());
    assert!(genai("Say {{ input }}.").unwrap().places_input());
    assert!(!genai("Say \\{{input}} and {{args}}.")
        .unwrap()
        .places_input());
    assert_eq!(c.description, "Translate the text");
    assert_eq!(c.settings.model.as_deref(), Some("openai:gpt-4o-mini"));
    assert_eq!(c.settings.system.as_deref(), Some("You translate."));
    assert_eq!(c.settings.parameters["temperature"], json!(0.2));
    assert_eq!(c.settings.schema, Some(json!({"type": "object"})));
    assert_eq!(c.settings.tools, Some(vec!["workspace".to_string()]));
    assert_eq!(c.settings.allow, ["read_file(src/**)"]);
    assert_eq!(c.settings.mode, Some(crate::permission::Mode::ReadOnly));
    assert_eq!(c.settings.files, ["NOTES.md"]);
    assert_eq!(c.apply, ApplyMode::Replace);
    let names: Vec<_> = c.arguments.iter().map(|a| a.name.as_str()).collect();
    assert_eq!(names, ["lang", "tone", "n"]);
    assert_eq!(c.arguments[2].default.as_deref(), Some("3"));
    assert_eq!(c.required().count(), 1);
}

#[test]
fn placeholders_take_arguments_defaults_and_the_input() {
    let c = genai(FULL).unwrap();
    let text = run(&c, "tone=dry lang=German", Some("Hallo")).unwrap();
    assert_eq!(
        text,
        "Translate into German (dry, 3 tries), literal {{lang}}:\n\nHallo"
    );
    // Free text with no input fills {{input}}.
    let text = run(&c, "tone=dry good morning", None).unwrap();
    assert!(text.starts_with("Translate into French"), "{text}");
    assert!(text.ends_with(":\n\ngood morning"), "{text}");
}

#[test]
fn a_missing_or_unknown_argument_names_itself() {
    let c = genai(FULL).unwrap();
    let e = run(&c, "hello", None).unwrap_err();
    assert_eq!(
        e.message,
        "command `t` needs its argument `tone`: give tone=VALUE"
    );
    let e = run(&c, "tnoe=dry hello", None).unwrap_err();
    assert_eq!(
        e.message,
        "command `t` has no argument `tnoe` (it takes lang, tone, n)"
    );
}

#[test]
fn text_and_input_a_prompt_does_not_place_follow_it() {
    let c = genai("Write the commit message.\n").unwrap();
    assert_eq!(c.description, "Write the commit message.");
    let text = run(&c, "focus on the API", Some("diff --git a b\n")).unwrap();
    assert_eq!(
        text,
        "Write the commit message.\n\nfocus on the API\n\ndiff --git a b\n"
    );
    // Words with `=` are text for a command without arguments.
    assert_eq!(
        run(&c, "x=1", None).unwrap(),
        "Write the commit message.\n\nx=1"
    );
}

#[test]
fn bad_files_name_their_path_line_and_field() {
    let e = genai("---\ndescription: x\nmodle: y\n---\nbody\n").unwrap_err();
    assert!(
        e.starts_with("/p/.genai/commands/t.md:3: front matter: unknown field `modle`"),
        "{e}"
    );
    let e = genai("---\ndescription: x\n\nmode: sometimes\n---\nbody\n").unwrap_err();
    assert!(e.starts_with("/p/.genai/commands/t.md:4: "), "{e}");
    assert!(e.contains("sometimes"), "{e}");
    let e = genai("---\nallow: [\"run_command(\"]\n---\nbody\n").unwrap_err();
    assert!(e.starts_with("/p/.genai/commands/t.md:2: allow: "), "{e}");
    let e = genai("---\ndescription: x\n---\nline one\nuse {{lang}} here\n").unwrap_err();
    assert!(
        e.starts_with("/p/.genai/commands/t.md:5: {{lang}} is not an argument"),
        "{e}"
    );
    let e = genai("---\ndescription: x\nbody\n").unwrap_err();
    assert!(
        e.contains(":1: the front matter opened by `---` is never closed"),
        "{e}"
    );
    let e = genai("---\nfiles: [/etc/passwd]\n---\nx\n").unwrap_err();
    assert!(
        e.contains(":2: files: `/etc/passwd` is not relative"),
        "{e}"
    );
    let e = genai("---\narguments: [input]\n---\nx\n").unwrap_err();
    assert!(
        e.contains(":2: arguments: `input` cannot name an argument"),
        "{e}"
    );
}

#[test]
fn claude_code_files_take_arguments_and_keep_their_fields() {
    let c = parse_text(
        "one",
        "---\nargument-hint: [pr]\n---\nx",
        Dialect::ClaudeCode,
        Place::ClaudeUser,
        None,
    )
    .unwrap();
    assert_eq!(c.argument_hint.as_deref(), Some("[pr]"));
    let text = "---\nallowed-tools: Bash(git status:*)\nargument-hint: [pr] [priority]\ndescription: Review a PR\nmodel: haiku\n---\nReview PR #$1 at priority $2. All: $ARGUMENTS. Cost: $5 stays.\n";
    let c = parse_text(
        "review",
        text,
        Dialect::ClaudeCode,
        Place::ClaudeProject,
        None,
    )
    .unwrap();
    assert_eq!(c.description, "Review a PR");
    assert_eq!(c.argument_hint.as_deref(), Some("[pr] [priority]"));
    assert_eq!(c.settings, Settings::default());
    assert_eq!(
        c.unused,
        ["allowed-tools: Bash(git status:*)", "model: haiku"]
    );
    let inv = split_words(&c, &words("456 high x=1")).unwrap();
    assert!(inv.arguments.is_empty());
    assert_eq!(
        c.prepare(&inv).unwrap().text,
        "Review PR #456 at priority high. All: 456 high x=1. Cost:  stays."
    );
    // Without placeholders the words follow the prompt.
    let c = parse_text(
        "plain",
        "Summarize.",
        Dialect::ClaudeCode,
        Place::ClaudeUser,
        None,
    )
    .unwrap();
    assert_eq!(
        run(&c, "the README", None).unwrap(),
        "Summarize.\n\nthe README"
    );
}

#[test]
fn codex_prompts_take_named_and_positional_arguments() {
    let text = "---\ndescription: Draft a PR\nargument-hint: FILES=<paths>\n---\nDraft a PR for $FILES ($1), costs $$5.\n";
    let c = parse_text("draftpr", text, Dialect::Codex, Place::Codex, None).unwrap();
    let inv = split_words(&c, &words("FILES=src/a.rs \"two words\"")).unwrap();
    assert_eq!(inv.arguments["FILES"], "src/a.rs");
    assert_eq!(
        c.prepare(&inv).unwrap().text,
        "Draft a PR for src/a.rs (two words), costs $5."
    );
    let e = c.prepare(&Invocation::default()).unwrap_err();
    assert_eq!(e.message, "command `draftpr` needs FILES: give FILES=VALUE");
}

#[test]
fn the_builtin_commands_parse() {
    let names: Vec<String> = builtin().into_iter().map(|c| c.name).collect();
    assert_eq!(names, ["explain", "improve", "document", "test", "fix"]);
    assert_eq!(
        builtin().iter().find(|c| c.name == "test").unwrap().apply,
        ApplyMode::InsertBelow
    );
}

#[test]
fn the_nearest_file_wins_and_a_bad_one_is_not_passed_over() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("repo");
    let sub = project.join("crates/a");
    std::fs::create_dir_all(&sub).unwrap();
    let config = root.path().join("config");
    let write = |dir: &Path, name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    write(&project, ".genai/commands/review.md", "project review");
    write(&sub, ".genai/commands/review.md", "nearer review");
    write(&config, "commands/review.md", "user review");
    write(&config, "commands/explain.md", "my explain");
    write(&config, "commands/git/commit.md", "commit it");
    write(&project, ".claude/commands/cc.md", "claude $ARGUMENTS");
    write(
        &project,
        ".genai/commands/broken.md",
        "---\nmodle: x\n---\n",
    );
    write(&config, "commands/broken.md", "fine");
    write(&config, "commands/two words.md", "spaced");
    let mut actions = BTreeMap::new();
    actions.insert(
        "rust2py".to_string(),
        crate::config::lsp::LspActionConfig {
            title: "To Python".into(),
            prompt: "Translate to Python".into(),
            apply: ApplyMode::InsertBelow,
        },
    );
    let all = Commands::load(&sub, Some(&config), &actions);
    assert_eq!(all.find("review").unwrap().body, "nearer review");
    assert_eq!(all.find("explain").unwrap().place, Place::User);
    assert_eq!(all.find("/git:commit").unwrap().body, "commit it");
    assert_eq!(all.find("cc").unwrap().dialect, Dialect::ClaudeCode);
    assert_eq!(all.find("rust2py").unwrap().place, Place::Config);
    assert_eq!(all.find("fix").unwrap().place, Place::Builtin);
    let e = all.find("broken").unwrap_err();
    assert!(
        e.message
            .contains("broken.md:2: front matter: unknown field `modle`"),
        "{e:?}"
    );
    assert_eq!(all.bad().count(), 2);
    let e = all.find("two words").unwrap_err();
    assert!(
        e.message.contains("`two words` cannot name a command"),
        "{e:?}"
    );
    let inv = all
        .invocation("/srv.review", &words("code=x rest of it"))
        .unwrap();
    assert_eq!(
        (inv.arguments["code"].as_str(), inv.text.as_str()),
        ("x", "rest of it")
    );
    assert!(all
        .invocation("broken", &[])
        .unwrap_err()
        .message
        .contains("modle"));
    assert!(all.invocation("nope", &[]).is_err());
    let e = all.find("nope").unwrap_err();
    assert!(
        e.message.starts_with("no command `nope`: there are "),
        "{e:?}"
    );
    let before = fingerprint(&sub, Some(&config));
    write(&config, "commands/new.md", "new");
    assert_ne!(fingerprint(&sub, Some(&config)), before);
}
