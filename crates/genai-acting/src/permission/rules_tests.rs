//! Tests of one rule: its shapes, path globs, command patterns and chains, fetch hosts, and
//! bad rules named.

use super::*;

const READ: Kind = Kind::Read;

fn rule(text: &str) -> Rule {
    match Rule::parse(text) {
        Ok(r) => r,
        Err(e) => panic!("{text}: {}", e.message),
    }
}

fn read(r: &str, path: &str) -> bool {
    rule(r).matches("workspace.read_file", READ, Some(path))
}

fn run(r: &str, command: &str) -> bool {
    rule(r).matches("workspace.run_command", Kind::Execute, Some(command))
}

fn fetch(r: &str, url: &str) -> bool {
    rule(r).matches("workspace.fetch", Kind::Fetch, Some(url))
}

#[test]
fn tool_shapes() {
    let full = rule("workspace.run_command");
    assert!(full.names_tool("workspace.run_command"));
    assert!(!full.names_tool("workspace.read_file"));
    let source = rule("github");
    assert!(source.names_tool("github.create_issue"));
    assert!(!source.names_tool("githubx.create_issue"));
    assert!(!source.names_tool("github"));
    let star = rule("github.*");
    assert!(star.names_tool("github.list_issues"));
    assert!(!star.names_tool("gitlab.list_issues"));
    for short in WORKSPACE_TOOLS {
        let r = rule(short);
        assert!(r.names_tool(&format!("workspace.{short}")), "{short}");
        assert!(!r.names_tool(&format!("other.{short}")), "{short}");
    }
    assert!(rule("workspace").names_tool("workspace.fetch"));
    assert!(rule("mod.fn.with.dots").names_tool("mod.fn.with.dots"));
}

#[test]
fn path_globs() {
    assert!(read("read_file(src/**)", "src/a/b.rs"));
    assert!(!read("read_file(src/**)", "lib/src/a.rs"));
    assert!(read("read_file(*.md)", "README.md"));
    assert!(read("read_file(*.md)", "docs/guide/intro.md"));
    assert!(!read("read_file(src/*.rs)", "src/a/b.rs"));
    assert!(read("read_file(src/*.rs)", "src/main.rs"));
    assert!(read("read_file(**/.env*)", ".env"));
    assert!(read("read_file(**/.env*)", "app/.env.local"));
    assert!(read("read_file(/Cargo.toml)", "Cargo.toml"));
    assert!(!read("read_file(/Cargo.toml)", "sub/Cargo.toml"));
    // A folder name covers its contents, as in gitignore.
    assert!(read(
        "read_file(node_modules)",
        "web/node_modules/x/index.js"
    ));
    assert!(read("read_file(target/)", "target/debug/genai"));
    assert!(read("read_file(**)", "."));
    assert!(read("read_file(src/**)", "./src\\main.rs"));
    assert!(!read("read_file(src/**)", "src/../Cargo.toml"));
    assert!(read("read_file(/Cargo.toml)", "src/./../Cargo.toml"));
}

#[test]
fn a_pattern_never_matches_a_call_without_subject() {
    assert!(!rule("github(x)").matches("github.create_issue", Kind::Read, None));
    assert!(!rule("read_file(**)").matches("workspace.read_file", READ, None));
    assert!(rule("read_file").matches("workspace.read_file", READ, None));
    let other = Kind::Other { read_only: false };
    assert!(!rule("github(x)").matches("github.create_issue", other, Some("x")));
}

#[test]
fn command_patterns() {
    assert!(run("run_command(git status*)", "git status"));
    assert!(run("run_command(git status*)", "git status --short"));
    assert!(run("run_command(cargo test *)", "cargo test --lib foo"));
    assert!(run("run_command(cargo test *)", "  cargo test  "));
    assert!(run("run_command(cargo test *)", "cargo   test --lib"));
    assert!(!run("run_command(cargo test *)", "cargo testing"));
    assert!(!run("run_command(cargo test *)", "cargo build"));
    assert!(run("run_command(ls)", "ls"));
    assert!(!run("run_command(ls)", "ls -la"));
    assert!(run("run_command(npm run *:ci)", "npm run test:ci"));
    assert!(run("run_command(echo a.b)", "echo a.b"));
    assert!(!run("run_command(echo a.b)", "echo axb"));
}

#[test]
fn command_chains_split() {
    assert_eq!(
        command_parts("a; b && c || d | e"),
        ["a", "b", "c", "d", "e"]
    );
    assert_eq!(command_parts("a\nb & c"), ["a", "b", "c"]);
    assert_eq!(command_parts("echo `rm x`"), ["echo", "rm x"]);
    assert_eq!(command_parts("echo $(rm x)"), ["echo", "rm x)"]);
    assert_eq!(command_parts("diff <(a) >(b)"), ["diff", "a)", "b)"]);
    assert_eq!(command_parts("cargo test 2>&1"), ["cargo test 2>&1"]);
    assert_eq!(command_parts("cargo test &> log"), ["cargo test &> log"]);
    assert_eq!(command_parts("  "), [""]);
    assert_eq!(command_parts("a;;"), ["a"]);
}

#[test]
fn fetch_patterns() {
    assert!(fetch("fetch(domain:docs.rs)", "https://docs.rs/globset"));
    assert!(fetch("fetch(domain:docs.rs)", "https://api.docs.rs/x"));
    assert!(fetch("fetch(domain:docs.rs)", "https://DOCS.RS./x"));
    assert!(!fetch(
        "fetch(domain:docs.rs)",
        "https://docs.rs.evil.com/x"
    ));
    assert!(!fetch("fetch(domain:docs.rs)", "https://evildocs.rs/x"));
    assert!(!fetch(
        "fetch(domain:docs.rs)",
        "https://docs.rs@evil.com/x"
    ));
    assert!(!fetch("fetch(domain:docs.rs)", "not a url"));
    assert!(fetch(
        "fetch(https://example.com/api/*)",
        "https://example.com/api/v1/x"
    ));
    assert!(!fetch(
        "fetch(https://example.com/api/*)",
        "https://example.com/other"
    ));
}

#[test]
fn source_rules_read_the_pattern_by_the_kind_of_call() {
    let r = rule("workspace(src/**)");
    assert!(r.matches("workspace.edit_file", Kind::Edit, Some("src/a.rs")));
    assert!(!r.matches("workspace.edit_file", Kind::Edit, Some("lib/a.rs")));
    let r = rule("workspace(domain:docs.rs)");
    assert!(r.matches("workspace.fetch", Kind::Fetch, Some("https://docs.rs/")));
    let r = rule("workspace.*(cargo *)");
    assert!(r.matches("workspace.run_command", Kind::Execute, Some("cargo build")));
}

#[test]
fn naming_a_file() {
    let env = Some(".env");
    for r in ["read_file(.env)", "read_file(**/.env*)", "read_file(*.env)"] {
        assert!(rule(r).names_file("workspace.read_file", READ, env), "{r}");
    }
    for r in [
        "read_file",
        "read_file(**)",
        "read_file(*)",
        "workspace(**/*)",
    ] {
        assert!(!rule(r).names_file("workspace.read_file", READ, env), "{r}");
    }
    let key = Some("src/server.key");
    assert!(!rule("read_file(src/**)").names_file("workspace.read_file", READ, key));
}

#[test]
fn bad_rules_are_named_with_the_expected_shape() {
    for bad in [
        "",
        "read_file(",
        "read_file()",
        "read_file(src/**",
        "read_file)",
        "bad tool",
        "workspace.readfile",
        "*",
        "read_file(a/[b)",
        "fetch(domain:)",
        "fetch(domain:docs.rs/x)",
        ".x",
    ] {
        let e = match Rule::parse(bad) {
            Ok(_) => panic!("`{bad}` parsed"),
            Err(e) => e,
        };
        assert!(e.message.contains(&format!("`{bad}`")), "{}", e.message);
        assert!(
            e.message.contains("expected TOOL or TOOL(PATTERN)"),
            "{}",
            e.message
        );
    }
}

#[test]
fn commands_keep_parentheses() {
    assert!(run("run_command(echo (a))", "echo (a)"));
    assert_eq!(rule(" read_file( src/** ) ").text(), "read_file( src/** )");
}

#[test]
fn paths_normalize() {
    assert_eq!(normalize_path("./a//b/./c/"), "a/b/c");
    assert_eq!(normalize_path("a/../../b"), "../b");
    assert_eq!(normalize_path("a\\.."), ".");
    assert_eq!(normalize_path(""), ".");
}

#[test]
fn hosts() {
    assert_eq!(url_host("https://Docs.RS/x").as_deref(), Some("docs.rs"));
    assert_eq!(url_host("nope"), None);
}
