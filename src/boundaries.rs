//! Tests of the source layout's boundaries, read from the source files themselves. Test-only;
//! it never runs in the product.
//!
//! * **The core imports no front-end.** The front-ends are `rpc`, `acp`, `lsp` and `cli` (the
//!   binary's: `main.rs` and `cli/`); the core is every other top-level module of `lib.rs`.
//! * **A front-end imports no other front-end**, except the command line starting one
//!   ([`LAUNCHES`]) and the few imports [`ALLOWED`] lists, each with its reason. What several
//!   share is core-side: the core, or plumbing such as the JSON-RPC peer ([`SHARED`]).
//! * **No import loop**, between files nor between modules or folders at any depth (collapsing
//!   every file to its folder at depth 1, 2, ...: `feature -> agent -> middleware -> feature`
//!   is a loop even when no two files loop).
//!
//! An import is a `crate::`, `super::`, `self::` or `genai::` path (the binary names the
//! library `genai::`) anywhere in a file's code, comments and string literals blanked. Only
//! test modules are left out: `#[cfg(test)] mod NAME { ... }`, and `#[cfg(test)] mod NAME;`
//! with the files of that module.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules that are front-ends (`cli` is the binary's, with `main.rs`).
const FRONT_ENDS: &[&str] = &["rpc", "acp", "lsp", "cli"];

/// Plumbing the front-ends share: core-side (it imports no front-end, as any core module), and
/// each front-end listed with it stands on it (`peer`: the one JSON-RPC peer of `rpc` and `acp`;
/// `gateway`: other vendors' HTTP APIs over the core, which `genai serve` mounts).
const SHARED: &[(&str, &[&str])] = &[("peer", &["rpc", "acp"]), ("gateway", &["rpc"])];

/// The command line starts each front-end: these files may use that front-end's entry
/// (importing file, imported file).
const LAUNCHES: &[(&str, &str)] = &[
    // `genai daemon`: the daemon on stdio, or `--connect` relayed to a shared `genai serve`
    // with the token file it wrote.
    ("cli/daemon.rs", "rpc/server.rs"),
    ("cli/daemon.rs", "rpc/ws/bridge.rs"),
    ("cli/daemon.rs", "rpc/ws/auth.rs"),
    // `genai serve`: the daemon over WebSocket, its token file and origins, the file that
    // says it runs (which `ask` and `chat` read to use its warm local model), and the folders
    // its conversations may work in (`[serve] roots`, resolved at its start).
    ("cli/serve.rs", "rpc/ws/mod.rs"),
    ("cli/serve.rs", "rpc/ws/auth.rs"),
    ("cli/serve.rs", "rpc/ws/presence.rs"),
    ("cli/serve.rs", "rpc/ws/roots.rs"),
    ("cli/acp.rs", "acp/mod.rs"),
    ("cli/lsp.rs", "lsp/mod.rs"),
];

/// Imports across front-ends that are not launches, each with its reason (importing file,
/// imported file). Empty is the goal; add a row only with the issue item that removes it.
const ALLOWED: &[(&str, &str)] = &[
    // `genai schema` prints the daemon's protocol schemas, which the daemon's wire types
    // generate: the schemas are the daemon's to publish, the command only prints them.
    ("cli/schema.rs", "rpc/schema.rs"),
];

/// Every `.rs` file under `src/`, by its path relative to `src/`.
fn sources() -> BTreeMap<String, String> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, root, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.insert(rel, std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = BTreeMap::new();
    walk(&root, &root, &mut out);
    // This file names every front-end in its rules and tests.
    out.remove("boundaries.rs");
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `text` with its comments and the contents of its string and character literals turned into
/// spaces (line breaks kept), so that only code is left to read.
fn blank(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let space = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    let mut i = 0;
    while i < c.len() {
        let prev_ident = i > 0 && is_ident(c[i - 1]);
        if c[i] == '/' && c.get(i + 1) == Some(&'/') {
            while i < c.len() && c[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    space(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if !prev_ident && (c[i] == 'r' || (c[i] == 'b' && c.get(i + 1) == Some(&'r'))) && {
            // A raw string: `r"..."`, `r#"..."#`, `br#"..."#`.
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            c.get(j) == Some(&'"')
        } {
            let mut j = i + if c[i] == 'b' { 2 } else { 1 };
            let mut hashes = 0;
            while c[j] == '#' {
                hashes += 1;
                j += 1;
            }
            out.extend(&c[i..=j]);
            i = j + 1;
            while i < c.len() {
                if c[i] == '"' && (1..=hashes).all(|k| c.get(i + k) == Some(&'#')) {
                    out.extend(&c[i..=i + hashes]);
                    i += hashes + 1;
                    break;
                }
                space(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '"' {
            out.push('"');
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < c.len() {
                    space(&mut out, c[i]);
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c[i] == '\'' && (c.get(i + 1) == Some(&'\\') || c.get(i + 2) == Some(&'\'')) {
            // A character literal (`'x'`, `'\n'`, `'\u{7f}'`), not a lifetime or a label.
            out.push('\'');
            i += 1;
            while i < c.len() && c[i] != '\'' {
                if c[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                out.push(' ');
                i += 1;
            }
            out.push('\'');
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// The end (exclusive) of the test module starting at `at` (just after `#[cfg(test)]`), with
/// its name and whether its code is in another file (`mod NAME;`); none if no module follows.
fn test_module(code: &str, at: usize) -> Option<(usize, String, bool)> {
    let mut rest = code[at..].trim_start();
    // Further attributes, then a visibility.
    while rest.starts_with("#[") {
        rest = rest[rest.find(']')? + 1..].trim_start();
    }
    if let Some(r) = rest.strip_prefix("pub") {
        rest = r.trim_start();
        if rest.starts_with('(') {
            rest = rest[rest.find(')')? + 1..].trim_start();
        }
    }
    rest = rest.strip_prefix("mod")?;
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    rest = rest.trim_start();
    let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
    rest = rest[name.len()..].trim_start();
    let start = code.len() - rest.len();
    if rest.starts_with(';') {
        return Some((start + 1, name, true));
    }
    if !rest.starts_with('{') {
        return None;
    }
    let mut depth = 0;
    for (i, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some((start + i + 1, name, false));
                }
            }
            _ => {}
        }
    }
    Some((code.len(), name, false))
}

/// A file's code without comments, literals and test modules, and the names of the test
/// modules it declares with `mod NAME;`.
fn code(text: &str) -> (String, Vec<String>) {
    let mut code = blank(text);
    let mut test_files = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("#[cfg(test)]") {
        let at = from + found;
        let after = at + "#[cfg(test)]".len();
        match test_module(&code, after) {
            Some((end, name, in_file)) => {
                if in_file {
                    test_files.push(name);
                }
                code.replace_range(at..end, &" ".repeat(end - at));
                from = end;
            }
            None => from = after,
        }
    }
    (code, test_files)
}

/// The module path of a file (`feature/mod.rs` -> `feature`, `rpc/port.rs` -> `rpc::port`;
/// `lib.rs` and the binary's `main.rs` are the root).
fn module_of(file: &str) -> String {
    let m = file.trim_end_matches(".rs").trim_end_matches("/mod");
    if m == "lib" || m == "main" {
        String::new()
    } else {
        m.replace('/', "::")
    }
}

/// The top-level module a file belongs to (`main.rs` is the command line's).
fn top_of(file: &str) -> &str {
    if file == "main.rs" {
        return "cli";
    }
    file.split(['/', '.']).next().unwrap_or("")
}

/// The file that holds the longest prefix of `path` (a module path) that is a file.
fn file_of(path: &[&str], modules: &BTreeMap<String, String>) -> Option<String> {
    (1..=path.len())
        .rev()
        .find_map(|n| modules.get(&path[..n].join("::")).cloned())
}

/// The paths written at the start of `text`: one, or one per item of a `{...}` group
/// (`super::{a, b::{c, d}}` gives `super::a`, `super::b::c`, `super::b::d`).
fn paths_at(text: &str) -> Vec<String> {
    let head: String = text
        .chars()
        .take_while(|c| is_ident(*c) || *c == ':')
        .collect();
    let rest = &text[head.len()..];
    if !(head.ends_with("::") && rest.starts_with('{')) {
        return vec![head];
    }
    let mut depth = 0;
    let mut items = Vec::new();
    let mut item_start = 1;
    for (i, c) in rest.char_indices() {
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                items.push(&rest[item_start..i]);
                item_start = i + 1;
                if c == '}' {
                    break;
                }
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
    items
        .into_iter()
        .map(str::trim)
        .filter(|i| !i.is_empty() && *i != "self")
        .flat_map(|i| {
            paths_at(i)
                .into_iter()
                .map(|p| format!("{head}{p}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// For each file of the product (test modules' files left out), the files of the product its
/// paths name.
fn imports(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeMap<String, String> = files
        .keys()
        .map(|f| (module_of(f), f.clone()))
        .filter(|(m, _)| !m.is_empty())
        .collect();
    let mut codes = BTreeMap::new();
    let mut test_modules = Vec::new();
    for (file, text) in files {
        let (code, tests) = code(text);
        let own = module_of(file);
        // `mod NAME;` in `a/b.rs` is `a/b/NAME.rs`: the module `a::b::NAME`.
        test_modules.extend(tests.into_iter().map(|n| {
            if own.is_empty() {
                n
            } else {
                format!("{own}::{n}")
            }
        }));
        codes.insert(file.clone(), code);
    }
    let is_test = |file: &str| {
        let m = module_of(file);
        test_modules
            .iter()
            .any(|t| m == *t || m.starts_with(&format!("{t}::")))
    };
    let mut graph = BTreeMap::new();
    for (file, code) in codes.iter().filter(|(f, _)| !is_test(f)) {
        let own: Vec<String> = module_of(file)
            .split("::")
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect();
        let mut to = BTreeSet::new();
        let starts = ["crate::", "super::", "self::", "genai::"]
            .into_iter()
            .flat_map(|p| code.match_indices(p));
        for (at, _) in starts {
            // The inner `super::` of `super::super::` is part of a path already read.
            // A name ending in one of these words (`my_crate::`) is no such path.
            let before = &code[..at];
            if before.ends_with("::") || before.ends_with(is_ident) {
                continue;
            }
            for path in paths_at(&code[at..]) {
                let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
                let mut base = Vec::new();
                if matches!(parts.first(), Some(&"crate") | Some(&"genai")) {
                    parts.remove(0);
                } else {
                    base = own.clone();
                    if parts.first() == Some(&"self") {
                        parts.remove(0);
                    }
                    while parts.first() == Some(&"super") {
                        parts.remove(0);
                        base.pop();
                    }
                }
                let full: Vec<&str> = base.iter().map(String::as_str).chain(parts).collect();
                if let Some(target) = file_of(&full, &modules).filter(|t| t != file) {
                    if !is_test(&target) {
                        to.insert(target);
                    }
                }
            }
        }
        graph.insert(file.clone(), to);
    }
    graph
}

/// Each import of a core file into a front-end, as `from -> to`.
fn core_imports_of_front_ends(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    edges(graph)
        .filter(|(from, to)| {
            !FRONT_ENDS.contains(&top_of(from)) && FRONT_ENDS.contains(&top_of(to))
        })
        .map(|(from, to)| format!("{from} -> {to}"))
        .collect()
}

/// Each import of one front-end into another that is neither a launch nor allowed.
fn front_end_imports_of_others(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    edges(graph)
        .filter(|(from, to)| {
            let (a, b) = (top_of(from), top_of(to));
            a != b && FRONT_ENDS.contains(&a) && FRONT_ENDS.contains(&b)
        })
        .filter(|&(from, to)| {
            !LAUNCHES
                .iter()
                .chain(ALLOWED)
                .any(|&(f, t)| f == from && t == to)
        })
        .map(|(from, to)| format!("{from} -> {to}"))
        .collect()
}

fn edges(graph: &BTreeMap<String, BTreeSet<String>>) -> impl Iterator<Item = (&str, &str)> {
    graph
        .iter()
        .flat_map(|(from, to)| to.iter().map(move |t| (from.as_str(), t.as_str())))
}

/// The import loops: between files, then between modules at each depth (every file taken as
/// its module path cut to that many parts), each shown with one import per arrow.
fn import_loops(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut found = loops_of(graph, |f| f.to_string());
    let deepest = graph
        .keys()
        .map(|f| module_of(f).split("::").count())
        .max()
        .unwrap_or(0);
    for depth in 1..deepest {
        let node = |f: &str| {
            let m = module_of(f);
            m.split("::").take(depth).collect::<Vec<_>>().join("::")
        };
        found.extend(
            loops_of(graph, node)
                .into_iter()
                .map(|l| format!("modules at depth {depth}: {l}")),
        );
    }
    found
}

/// The loops of `graph` once each file is taken as `node(file)`, each with the file import
/// that makes each arrow; one loop per node it passes through at most.
fn loops_of(
    graph: &BTreeMap<String, BTreeSet<String>>,
    node: impl Fn(&str) -> String,
) -> Vec<String> {
    // node -> next node -> the first file import that makes that arrow.
    let mut nodes: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (from, to) in edges(graph) {
        let (a, b) = (node(from), node(to));
        if a != b && !a.is_empty() {
            nodes
                .entry(a)
                .or_default()
                .entry(b)
                .or_insert_with(|| format!("{from} -> {to}"));
        }
    }
    let mut loops = Vec::new();
    let mut in_a_loop = BTreeSet::new();
    for start in nodes.keys() {
        if in_a_loop.contains(start) {
            continue;
        }
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        'search: while let Some((at, path)) = stack.pop() {
            for next in nodes.get(&at).into_iter().flat_map(BTreeMap::keys) {
                let mut p = path.clone();
                p.push(next.clone());
                if next == start {
                    let shown: Vec<String> = p
                        .windows(2)
                        .map(|w| format!("{} -> {} ({})", w[0], w[1], nodes[&w[0]][&w[1]]))
                        .collect();
                    loops.push(shown.join(", "));
                    in_a_loop.extend(path);
                    break 'search;
                } else if seen.insert(next.clone()) {
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    loops
}

#[test]
fn the_core_imports_no_front_end() {
    let found = core_imports_of_front_ends(&imports(&sources()));
    assert!(
        found.is_empty(),
        "core files import front-ends:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_front_end_imports_another() {
    let found = front_end_imports_of_others(&imports(&sources()));
    assert!(
        found.is_empty(),
        "front-ends import each other:\n{}",
        found.join("\n")
    );
}

#[test]
fn nothing_imports_itself_through_a_loop_of_files_modules_or_folders() {
    let found = import_loops(&imports(&sources()));
    assert!(found.is_empty(), "import loops:\n{}", found.join("\n"));
}

#[test]
fn shared_plumbing_imports_no_front_end_and_its_front_ends_use_it() {
    let graph = imports(&sources());
    for (shared, users) in SHARED {
        assert!(!FRONT_ENDS.contains(shared), "{shared} is not a front-end");
        let files: Vec<&String> = graph.keys().filter(|f| top_of(f) == *shared).collect();
        assert!(!files.is_empty(), "no module {shared}: remove its row");
        for file in files {
            for to in &graph[file] {
                assert!(
                    !FRONT_ENDS.contains(&top_of(to)),
                    "{file} imports the front-end file {to}"
                );
            }
        }
        for user in *users {
            assert!(
                edges(&graph).any(|(from, to)| top_of(from) == *user && top_of(to) == *shared),
                "{user} no longer uses {shared}: remove it from the row"
            );
        }
    }
}

#[test]
fn every_allowed_import_across_front_ends_is_still_made() {
    // A row nobody needs any more goes, so that the lists say what the code does.
    let graph = imports(&sources());
    for (from, to) in LAUNCHES.iter().chain(ALLOWED) {
        assert!(
            graph.get(*from).is_some_and(|t| t.contains(*to)),
            "{from} no longer imports {to}: remove its row"
        );
    }
}
/// An in-memory tree of sources.
fn tree(files: &[(&str, &str)]) -> BTreeMap<String, String> {
    files
        .iter()
        .map(|(f, t)| (f.to_string(), t.to_string()))
        .collect()
}

#[test]
fn the_import_reader_sees_a_loop_when_there_is_one() {
    let files = tree(&[
        ("a.rs", "use crate::b::X;"),
        ("b.rs", "use crate::c::Y;\n// use crate::a::Z;"),
        ("c/mod.rs", "pub mod d;"),
        ("c/d.rs", "use super::super::a::W;"),
        ("e.rs", "use crate::{b::X, c::{d::Y, self}};"),
    ]);
    let g = imports(&files);
    assert_eq!(g["a.rs"], BTreeSet::from(["b.rs".to_string()]));
    assert_eq!(g["b.rs"], BTreeSet::from(["c/mod.rs".to_string()]));
    assert_eq!(g["c/d.rs"], BTreeSet::from(["a.rs".to_string()]));
    let e: Vec<&str> = g["e.rs"].iter().map(String::as_str).collect();
    assert_eq!(e, ["b.rs", "c/d.rs"]);
    assert_eq!(
        paths_at("super::{a, b::{c, d}}; x"),
        ["super::a", "super::b::c", "super::b::d"]
    );
    // `b` imports `c`'s folder file, not `c/d.rs`: a loop of folders, not of files.
    assert_eq!(
        import_loops(&g),
        [
            "modules at depth 1: a -> b (a.rs -> b.rs), b -> c (b.rs -> c/mod.rs), \
          c -> a (c/d.rs -> a.rs)"
        ]
    );
}

#[test]
fn the_reader_sees_the_whole_file_but_its_test_modules_comments_and_strings() {
    let files = tree(&[
        (
            "a/mod.rs",
            r##"
#[cfg(test)]
mod testing;
#[cfg(test)]
pub(crate) fn helper() { crate::c::f() }
use crate::b::X; // use crate::f::X;
#[cfg(test)]
#[allow(unused)]
mod tests {
    use crate::d::Y;
    fn open() -> char { '{' }
}
/* use crate::f::X; /* nested */ use crate::f::X; */
const S: &str = "crate::f::X \" crate::f::X";
const R: &str = r#"crate::f::X " crate::f::X"#;
const C: char = '"';
fn g<'a>(x: &'a str) -> &'a str { crate::e::h(x); self::testing::t(); x }
"##,
        ),
        ("a/testing.rs", "use crate::f::X;"),
        ("b.rs", ""),
        ("c.rs", ""),
        ("d.rs", ""),
        ("e.rs", ""),
        ("f.rs", "use crate::a::testing::T;"),
    ]);
    let g = imports(&files);
    let a: Vec<&str> = g["a/mod.rs"].iter().map(String::as_str).collect();
    assert_eq!(a, ["b.rs", "c.rs", "e.rs"]);
    assert!(
        !g.contains_key("a/testing.rs"),
        "a test module's file is not product code"
    );
    assert!(
        g["f.rs"].is_empty(),
        "a test module's file is not imported: {g:?}"
    );
}

#[test]
fn a_core_module_importing_a_front_end_fails() {
    for (front_end, line) in [
        ("acp/mod.rs", concat!("use crate::", "acp::serve;")),
        (
            "rpc/listings.rs",
            concat!("pub fn f() { crate::", "rpc::listings::x() }"),
        ),
        ("lsp/mod.rs", "use super::super::lsp::X;"),
    ] {
        let files = tree(&[
            ("session/mod.rs", ""),
            ("session/choice.rs", line),
            (front_end, "use crate::session::Framework;"),
        ]);
        let found = core_imports_of_front_ends(&imports(&files));
        assert_eq!(found, [format!("session/choice.rs -> {front_end}")]);
    }
    let clean = tree(&[
        ("session/mod.rs", ""),
        ("acp/mod.rs", "use crate::session::Framework;"),
        ("main.rs", "mod cli; fn main() { genai::session::run() }"),
    ]);
    assert!(core_imports_of_front_ends(&imports(&clean)).is_empty());
}

#[test]
fn a_front_end_importing_another_fails_unless_it_launches_it() {
    let files = tree(&[
        ("rpc/mod.rs", ""),
        ("rpc/listings.rs", ""),
        ("rpc/server.rs", ""),
        ("acp/mod.rs", concat!("use crate::", "rpc::listings::Tool;")),
        ("lsp/mod.rs", concat!("use crate::", "acp;")),
        ("cli/mod.rs", "mod daemon;"),
        (
            "cli/sessions.rs",
            "use genai::rpc::listings::{ConversationRecord, StoredMessage};",
        ),
        ("cli/daemon.rs", "fn run() { genai::rpc::server::serve() }"),
        ("main.rs", "fn main() { genai::lsp::serve() }"),
    ]);
    let found = front_end_imports_of_others(&imports(&files));
    assert_eq!(
        found,
        [
            "acp/mod.rs -> rpc/listings.rs",
            "cli/sessions.rs -> rpc/listings.rs",
            "lsp/mod.rs -> acp/mod.rs",
            "main.rs -> lsp/mod.rs",
        ]
    );
}

#[test]
fn a_loop_between_folders_fails_even_when_no_two_files_loop() {
    let files = tree(&[
        ("feature/mod.rs", ""),
        ("feature/assistant.rs", "use crate::agent::AIAgent;"),
        ("feature/port.rs", ""),
        ("agent/mod.rs", "use crate::middleware::Chain;"),
        ("middleware/mod.rs", ""),
        (
            "middleware/hosted.rs",
            "use crate::feature::port::ClientPort;",
        ),
    ]);
    let loops = import_loops(&imports(&files));
    assert_eq!(
        loops,
        [
            "modules at depth 1: agent -> middleware (agent/mod.rs -> middleware/mod.rs), \
          middleware -> feature (middleware/hosted.rs -> feature/port.rs), \
          feature -> agent (feature/assistant.rs -> agent/mod.rs)"
        ]
    );
    // One level down, inside a folder, the same.
    let nested = tree(&[
        ("provider/mod.rs", ""),
        (
            "provider/local/engine.rs",
            "use crate::provider::aws::Sign;",
        ),
        ("provider/aws/mod.rs", ""),
        (
            "provider/aws/sign.rs",
            "use super::super::local::engine::Engine as _;",
        ),
    ]);
    let loops = import_loops(&imports(&nested));
    assert!(
        loops
            .iter()
            .any(|l| l.starts_with("modules at depth 2: provider::aws -> provider::local")),
        "{loops:?}"
    );
}
