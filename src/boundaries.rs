//! Tests of the source layout's boundaries, read from the source files themselves: only the
//! front-ends (`src/rpc/`, `src/cli/`) use the JSON-RPC module, and no two files import each
//! other in a loop. Test-only; it never runs in the product.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

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
    out
}

/// The code of a file before its tests, without comments.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module path of a file (`feature/mod.rs` -> `feature`, `rpc/port.rs` -> `rpc::port`).
fn module_of(file: &str) -> String {
    let m = file.trim_end_matches(".rs").trim_end_matches("/mod");
    if m == "lib" || m == "main" {
        String::new()
    } else {
        m.replace('/', "::")
    }
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
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
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

/// For each file, the files its `crate::` and `super::` paths name.
fn imports(files: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let modules: BTreeMap<String, String> = files
        .keys()
        .map(|f| (module_of(f), f.clone()))
        .filter(|(m, _)| !m.is_empty())
        .collect();
    let mut graph = BTreeMap::new();
    for (file, text) in files {
        let own: Vec<String> = module_of(file)
            .split("::")
            .filter(|m| !m.is_empty())
            .map(str::to_string)
            .collect();
        let mut to = BTreeSet::new();
        let code = code(text);
        for (at, _) in code
            .match_indices("crate::")
            .chain(code.match_indices("super::"))
        {
            // The inner `super::` of `super::super::` is part of a path already read.
            if code[..at].ends_with("::") {
                continue;
            }
            for path in paths_at(&code[at..]) {
                let mut parts: Vec<&str> = path.split("::").filter(|p| !p.is_empty()).collect();
                let mut base = Vec::new();
                if parts.first() == Some(&"crate") {
                    parts.remove(0);
                } else {
                    base = own.clone();
                    while parts.first() == Some(&"super") {
                        parts.remove(0);
                        base.pop();
                    }
                }
                let full: Vec<&str> = base.iter().map(String::as_str).chain(parts).collect();
                if let Some(target) = file_of(&full, &modules).filter(|t| t != file) {
                    to.insert(target);
                }
            }
        }
        graph.insert(file.clone(), to);
    }
    graph
}

#[test]
fn only_front_ends_use_the_json_rpc_module() {
    let offenders: Vec<String> = sources()
        .into_iter()
        .filter(|(f, _)| !f.starts_with("rpc/") && !f.starts_with("cli/") && f != "boundaries.rs")
        // Spelled in two pieces so that a plain text search for it finds no false positive here.
        .filter(|(_, text)| code(text).contains(concat!("crate::", "rpc")))
        .map(|(f, _)| f)
        .collect();
    assert!(
        offenders.is_empty(),
        "the rpc module is used in {offenders:?}"
    );
}

#[test]
fn no_two_files_import_each_other_in_a_loop() {
    let graph = imports(&sources());
    // A file's imports must not lead back to it.
    let mut loops = Vec::new();
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<(String, Vec<String>)> = vec![(start.clone(), vec![start.clone()])];
        while let Some((file, path)) = stack.pop() {
            for next in graph.get(&file).into_iter().flatten() {
                if next == start {
                    loops.push(path.join(" -> ") + " -> " + start);
                } else if seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    assert!(loops.is_empty(), "import loops:\n{}", loops.join("\n"));
}

#[test]
fn the_import_reader_sees_a_loop_when_there_is_one() {
    let files: BTreeMap<String, String> = [
        ("a.rs", "use crate::b::X;"),
        ("b.rs", "use crate::c::Y;\n// use crate::a::Z;"),
        ("c/mod.rs", "pub mod d;"),
        ("c/d.rs", "use super::super::a::W;"),
        ("e.rs", "use crate::{b::X, c::{d::Y, self}};"),
    ]
    .into_iter()
    .map(|(f, t)| (f.to_string(), t.to_string()))
    .collect();
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
}
