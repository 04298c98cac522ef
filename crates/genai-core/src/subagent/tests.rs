use super::*;

const CLAUDE: &str = "---\nname: code-reviewer\ndescription: Reviews code for bugs\ntools: Read, Grep, Glob, Bash, WebSearch\nmodel: sonnet\ncolor: blue\n---\nYou review code.\n";

#[test]
fn claude_codes_file_is_read_unchanged_its_tools_mapped_and_unknown_ones_reported() {
    let d = parse_text("x", CLAUDE, Dialect::ClaudeCode, Place::ClaudeProject, None).unwrap();
    assert_eq!(d.name, "code-reviewer");
    assert_eq!(d.description, "Reviews code for bugs");
    assert_eq!(
        d.tools.as_deref().unwrap(),
        [
            "workspace.read_file",
            "workspace.search",
            "workspace.list",
            "workspace.run_command"
        ]
    );
    assert_eq!(d.unknown_tools, ["WebSearch"]);
    assert_eq!(d.model, ModelChoice::Inherit);
    assert_eq!(d.unused, ["color: blue"]);
    assert_eq!(d.system, "You review code.");
}

#[test]
fn genais_file_checks_its_fields_and_takes_a_list_of_tools_and_a_mode() {
    let text = "---\ndescription: Finds things\ntools: [read_file, workspace.search]\nmodel: corp:gpt-x\nmode: read-only\n---\nFind it.\n";
    let d = parse_text("finder", text, Dialect::Genai, Place::Project, None).unwrap();
    assert_eq!(d.name, "finder");
    assert_eq!(
        d.tools.as_deref().unwrap(),
        ["workspace.read_file", "workspace.search"]
    );
    assert_eq!(d.model, ModelChoice::Named("corp:gpt-x".into()));
    assert_eq!(d.mode, Some(Mode::ReadOnly));

    let unknown = "---\ncolour: red\n---\nx\n";
    let e = parse_text("a", unknown, Dialect::Genai, Place::Project, None).unwrap_err();
    assert!(
        e.starts_with("<a>:2: front matter: unknown field `colour`"),
        "{e}"
    );
    let tool = "---\ndescription: d\ntools: [read_file, paint]\n---\nx\n";
    let e = parse_text("a", tool, Dialect::Genai, Place::Project, None).unwrap_err();
    assert!(
        e.contains("<a>:3: tools: `paint` is not a workspace tool"),
        "{e}"
    );
    let empty = "---\ndescription: d\n---\n\n";
    let e = parse_text("a", empty, Dialect::Genai, Place::Project, None).unwrap_err();
    assert!(e.contains("no system prompt"), "{e}");
}

#[test]
fn a_definition_only_narrows_the_parents_mode() {
    let mut d = parse_text("a", "Do it.", Dialect::Genai, Place::Project, None).unwrap();
    assert_eq!(d.description, "Do it.");
    assert!(d.allows_tool("workspace.edit_file"));
    assert_eq!(d.mode_under(Mode::Edit), Mode::Edit);
    d.mode = Some(Mode::ReadOnly);
    assert_eq!(d.mode_under(Mode::Edit), Mode::ReadOnly);
    d.mode = Some(Mode::Full);
    assert_eq!(d.mode_under(Mode::Ask), Mode::Ask);
    d.tools = Some(vec!["workspace.read_file".into()]);
    assert!(!d.allows_tool("workspace.edit_file"));
}

#[test]
fn the_nearest_definition_wins_and_a_bad_file_is_listed_with_its_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let project = tmp.path().join("project");
    let sub = project.join("sub");
    std::fs::create_dir_all(sub.join(".genai/agents")).unwrap();
    std::fs::create_dir_all(project.join(".genai/agents")).unwrap();
    std::fs::create_dir_all(project.join(".claude/agents")).unwrap();
    let config = tmp.path().join("config");
    std::fs::create_dir_all(config.join("agents")).unwrap();
    let write = |p: PathBuf, t: &str| std::fs::write(p, t).unwrap();
    write(sub.join(".genai/agents/near.md"), "Nearest.");
    write(project.join(".genai/agents/near.md"), "Further.");
    write(project.join(".claude/agents/rev.md"), CLAUDE);
    write(config.join("agents/near.md"), "From the config.");
    write(config.join("agents/mine.md"), "Mine.");
    write(
        project.join(".genai/agents/broken.md"),
        "---\nmode: sideways\n---\nx",
    );

    let defs = Definitions::load(&sub, Some(&config));
    assert_eq!(defs.find("near").unwrap().system, "Nearest.");
    assert_eq!(defs.find("near").unwrap().place, Place::Project);
    assert_eq!(
        defs.find("code-reviewer").unwrap().place,
        Place::ClaudeProject
    );
    assert_eq!(defs.find("mine").unwrap().place, Place::User);
    let bad: Vec<&BadFile> = defs.bad().collect();
    assert_eq!(bad.len(), 1);
    assert!(bad[0].message.contains("broken.md:2"), "{}", bad[0].message);
    assert!(defs.find("broken").is_err());
    let e = defs.find("nobody").unwrap_err();
    assert!(e.message.contains("no subagent `nobody`"), "{}", e.message);
    assert!(e.message.contains("code-reviewer"), "{}", e.message);
}
