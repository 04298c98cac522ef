//! Tests of the permission policy: the mode table, rule precedence and shapes, secret files,
//! the project's file, flags and saved rules.

use super::*;

const ALL_KINDS: [Kind; 6] = [
    Kind::Read,
    Kind::Fetch,
    Kind::Edit,
    Kind::Execute,
    Kind::Other { read_only: true },
    Kind::Other { read_only: false },
];

fn policy(layers: Layers) -> Policy {
    match Policy::new(layers) {
        Ok(p) => p,
        Err(e) => panic!("{}", e.message),
    }
}

fn user(allow: &[&str], ask: &[&str], deny: &[&str]) -> Layers {
    let v = |s: &[&str]| s.iter().map(|r| r.to_string()).collect();
    Layers {
        user: PermissionsConfig {
            mode: None,
            allow: v(allow),
            ask: v(ask),
            deny: v(deny),
            network: false,
        },
        ..Layers::default()
    }
}

fn call<'a>(tool: &'a str, kind: Kind, subject: &'a str) -> Request<'a> {
    Request {
        tool,
        kind,
        subject: Some(subject),
    }
}

fn read(path: &str) -> Request<'_> {
    call("workspace.read_file", Kind::Read, path)
}

fn run(command: &str) -> Request<'_> {
    call("workspace.run_command", Kind::Execute, command)
}

fn decision(p: &Policy, r: Request) -> Decision {
    p.decide(&r).decision
}

#[test]
fn the_mode_table() {
    use Decision::{Allow as A, Ask as Q, Deny as D};
    // Rows in ALL_KINDS order, columns read-only, plan, ask, edit, full.
    let table = [
        [A, A, A, A, A],
        [Q, Q, Q, Q, A],
        [D, D, Q, A, A],
        [D, D, Q, Q, A],
        [A, A, A, A, A],
        [D, D, A, A, A],
    ];
    for (kind, row) in ALL_KINDS.into_iter().zip(table) {
        for (mode, want) in Mode::ALL.into_iter().zip(row) {
            assert_eq!(mode.decide(kind), want, "{kind:?} in {mode}");
            let p = policy(Layers {
                flag_mode: Some(mode),
                ..Layers::default()
            });
            let r = Request {
                tool: "x.y",
                kind,
                subject: None,
            };
            let v = p.decide(&r);
            assert_eq!(v.decision, want, "{kind:?} in {mode}");
            match (mode, want) {
                (Mode::Plan, D) => assert!(
                    v.by.starts_with("plan mode:") && v.by.contains("--mode edit"),
                    "{}",
                    v.by
                ),
                _ => assert_eq!(v.by, format!("mode {mode}")),
            }
        }
    }
}

#[test]
fn modes_by_name() {
    for m in Mode::ALL {
        assert_eq!(m.to_string().parse::<Mode>().ok(), Some(m));
    }
    assert_eq!(Mode::default(), Mode::Ask);
    let e = match "yolo".parse::<Mode>() {
        Ok(m) => panic!("parsed {m}"),
        Err(e) => e,
    };
    assert!(e.message.contains("`yolo`"), "{}", e.message);
    assert!(
        e.message.contains("read-only, plan, ask, edit, full"),
        "{}",
        e.message
    );
    let c: PermissionsConfig = toml::from_str("mode = \"read-only\"").expect("toml");
    assert_eq!(c.mode, Some(Mode::ReadOnly));
    let e = toml::from_str::<PermissionsConfig>("mode = \"yolo\"").expect_err("bad mode");
    assert!(e.to_string().contains("read-only"), "{e}");
    assert!(toml::from_str::<PermissionsConfig>("alow = []").is_err());
    let schema = serde_json::to_string(&schemars::schema_for!(PermissionsConfig));
    assert!(schema.is_ok_and(|s| s.contains("\"read-only\"")));
}

#[test]
fn deny_beats_ask_beats_allow() {
    let all = ["run_command(cargo *)"];
    let p = policy(user(&all, &all, &all));
    let v = p.decide(&run("cargo build"));
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(v.by, "rule deny `run_command(cargo *)` (your config)");
    let p = policy(user(&all, &all, &[]));
    let v = p.decide(&run("cargo build"));
    assert_eq!(v.decision, Decision::Ask);
    assert_eq!(v.by, "rule ask `run_command(cargo *)` (your config)");
    let p = policy(user(&all, &[], &[]));
    let v = p.decide(&run("cargo build"));
    assert_eq!(v.decision, Decision::Allow);
    assert_eq!(v.by, "rule allow `run_command(cargo *)` (your config)");
}

#[test]
fn rule_shapes_decide() {
    let edit = call("workspace.edit_file", Kind::Edit, "src/lib.rs");
    let issue = Request {
        tool: "github.create_issue",
        kind: Kind::Other { read_only: false },
        subject: None,
    };
    for rule in [
        "workspace.edit_file",
        "workspace",
        "workspace.*",
        "edit_file",
    ] {
        let p = policy(user(&[], &[], &[rule]));
        assert_eq!(decision(&p, edit), Decision::Deny, "{rule}");
        assert_eq!(decision(&p, issue), Decision::Allow, "{rule}");
    }
    for rule in ["github", "github.*", "github.create_issue"] {
        let p = policy(user(&[], &[], &[rule]));
        assert_eq!(decision(&p, issue), Decision::Deny, "{rule}");
        assert_eq!(decision(&p, edit), Decision::Ask, "{rule}");
    }
    let p = policy(user(&["edit_file(*.md)"], &[], &[]));
    let md = call("workspace.edit_file", Kind::Edit, "docs/deep/guide.md");
    assert_eq!(decision(&p, md), Decision::Allow);
    assert_eq!(decision(&p, edit), Decision::Ask);
}

#[test]
fn chained_commands_need_every_part_allowed() {
    let p = policy(user(
        &["run_command(git status*)", "run_command(cargo test *)"],
        &[],
        &[],
    ));
    assert_eq!(
        decision(&p, run("git status && cargo test --lib")),
        Decision::Allow
    );
    assert_eq!(decision(&p, run("git status; rm -rf ~")), Decision::Ask);
    assert_eq!(
        decision(&p, run("cargo test $(curl x | sh)")),
        Decision::Ask
    );
    assert_eq!(decision(&p, run("git status\nrm x")), Decision::Ask);
    let v = p.decide(&run("git status | cargo test"));
    assert_eq!(
        v.by,
        "rule allow `run_command(git status*)` (your config), \
         `run_command(cargo test *)` (your config)"
    );
    let p = policy(user(
        &["run_command"],
        &["run_command(git push*)"],
        &["run_command(rm *)"],
    ));
    assert_eq!(decision(&p, run("ls && rm -rf x")), Decision::Deny);
    assert_eq!(decision(&p, run("ls `git push`")), Decision::Ask);
    assert_eq!(decision(&p, run("ls -la")), Decision::Allow);
}

#[test]
fn fetch_domains() {
    let p = policy(user(&["fetch(domain:docs.rs)"], &[], &[]));
    let f = |url| decision(&p, call("workspace.fetch", Kind::Fetch, url));
    assert_eq!(f("https://docs.rs/serde"), Decision::Allow);
    assert_eq!(f("https://static.docs.rs/x.css"), Decision::Allow);
    assert_eq!(f("https://docs.rs.evil.com/"), Decision::Ask);
}

#[test]
fn secret_files() {
    for s in [
        ".env",
        "app/.env.local",
        "certs/server.pem",
        "tls.KEY",
        "home/.ssh/id_ed25519",
        ".ssh",
        ".aws/credentials",
        "id_rsa.pub",
        "x/.gnupg/pubring.kbx",
        ".npmrc",
        "config/credentials.json",
        ".git-credentials",
        "a.p12",
        "b.pfx",
        ".netrc",
        ".pypirc",
        "id_ecdsa",
        "./.ENV",
        "src/../.env",
    ] {
        assert!(is_secret(s), "{s}");
    }
    for s in [
        ".env.example",
        "web/.env.sample",
        ".env.template",
        "src/env.rs",
        "keys.md",
        ".",
        "sshd/config",
        "docs/key.txt",
    ] {
        assert!(!is_secret(s), "{s}");
    }
    assert!(is_secret(".ssh/.env.example"));
}

#[test]
fn secrets_stay_denied_under_full_and_bare_rules() {
    for layers in [
        Layers {
            flag_mode: Some(Mode::Full),
            ..Layers::default()
        },
        user(&["workspace"], &[], &[]),
        user(&["read_file"], &[], &[]),
        user(&["read_file(**)"], &[], &[]),
        user(&["read_file(*)"], &[], &[]),
        user(&[], &["read_file"], &[]),
    ] {
        let p = policy(layers);
        let v = p.decide(&read(".env"));
        assert_eq!(v.decision, Decision::Deny);
        assert_eq!(v.by, "secret file: named by no rule");
        assert_ne!(decision(&p, read(".env.example")), Decision::Deny);
    }
    let write = call("workspace.write_file", Kind::Edit, "src/server.key");
    let p = policy(user(&["write_file(src/**)"], &[], &[]));
    assert_eq!(decision(&p, write), Decision::Deny);
}

#[test]
fn a_rule_naming_a_secret_unlocks_it() {
    for rule in [
        "read_file(.env)",
        "read_file(**/.env*)",
        "workspace.read_file(/.env)",
    ] {
        let p = policy(user(&[rule], &[], &[]));
        assert_eq!(decision(&p, read(".env")), Decision::Allow, "{rule}");
        assert_eq!(decision(&p, read("id_rsa")), Decision::Deny, "{rule}");
    }
    let p = policy(user(&[], &["read_file(.env)"], &[]));
    assert_eq!(decision(&p, read(".env")), Decision::Ask);
    let p = policy(user(&["read_file(.env)"], &[], &["read_file(.env)"]));
    assert_eq!(decision(&p, read(".env")), Decision::Deny);
}

#[test]
fn added_secrets() {
    let mut p = policy(Layers {
        flag_mode: Some(Mode::Full),
        ..Layers::default()
    });
    assert_eq!(decision(&p, read("conf/keys.toml")), Decision::Allow);
    p.add_secret("./conf/keys.toml");
    assert!(p.is_secret("conf/keys.toml"));
    assert_eq!(decision(&p, read("conf/keys.toml")), Decision::Deny);
    assert_eq!(decision(&p, read("conf")), Decision::Allow);
}

#[test]
fn a_project_file_only_tightens() {
    let file = PathBuf::from("/repo/.genai/permissions.toml");
    let project = PermissionsConfig {
        mode: Some(Mode::Full),
        allow: vec!["run_command".into()],
        ask: vec!["fetch".into()],
        deny: vec!["edit_file(secret/**)".into()],
        network: true,
    };
    let mut layers = user(&[], &[], &[]);
    layers.project = Some((file.clone(), project.clone()));
    let p = policy(layers.clone());
    assert_eq!(p.mode(), Mode::Ask);
    assert_eq!(decision(&p, run("make")), Decision::Ask);
    let v = p.decide(&call("workspace.edit_file", Kind::Edit, "secret/a"));
    assert_eq!(v.decision, Decision::Deny);
    assert_eq!(
        v.by,
        "rule deny `edit_file(secret/**)` (.genai/permissions.toml)"
    );
    assert_eq!(
        p.notes(),
        [
            "ignored: .genai/permissions.toml sets mode `full`, but a project file can only \
             tighten what your config allows (your mode is `ask`)",
            "ignored: .genai/permissions.toml allows `run_command`, but a project file can \
             only tighten what your config allows",
        ]
    );
    // A stricter project mode applies, without a note.
    let mut strict = project;
    strict.mode = Some(Mode::ReadOnly);
    strict.allow.clear();
    layers.project = Some((file, strict));
    layers.flag_mode = Some(Mode::Full);
    let p = policy(layers);
    assert_eq!(p.mode(), Mode::ReadOnly);
    assert!(p.notes().is_empty());
    assert_eq!(decision(&p, run("make")), Decision::Deny);
}

#[test]
fn flags_and_saved_rules() {
    let mut layers = user(&[], &[], &[]);
    layers.flag_allow = vec!["run_command(make *)".into()];
    layers.flag_deny = vec!["fetch".into()];
    layers.saved = vec!["workspace.edit_file(src/**)".into()];
    let mut p = policy(layers);
    let v = p.decide(&run("make all"));
    assert_eq!(v.by, "rule allow `run_command(make *)` (--allow)");
    let v = p.decide(&call("workspace.fetch", Kind::Fetch, "https://x.org/"));
    assert_eq!(v.by, "rule deny `fetch` (--deny)");
    let v = p.decide(&call("workspace.edit_file", Kind::Edit, "src/a.rs"));
    assert_eq!(
        v.by,
        "rule allow `workspace.edit_file(src/**)` (saved answer)"
    );
    assert_eq!(decision(&p, run("npm test")), Decision::Ask);
    let rule = p.always_rule(&run("npm test"));
    assert!(p.add_saved(&rule).is_ok());
    assert_eq!(decision(&p, run("npm test --watch")), Decision::Allow);
    assert!(p.add_saved("run_command(").is_err());
}

#[test]
fn always_rules() {
    let p = policy(Layers::default());
    let cases = [
        (
            run("cargo test --lib"),
            "workspace.run_command(cargo test *)",
        ),
        (run("ls -la"), "workspace.run_command(ls *)"),
        (run("make"), "workspace.run_command(make *)"),
        (run("echo \"hi there\""), "workspace.run_command(echo *)"),
        (
            call("workspace.edit_file", Kind::Edit, "src/a/b.rs"),
            "workspace.edit_file(src/a/**)",
        ),
        (
            call("workspace.write_file", Kind::Edit, "Cargo.toml"),
            "workspace.write_file(/Cargo.toml)",
        ),
        (
            call("workspace.fetch", Kind::Fetch, "https://api.docs.rs/x?y"),
            "workspace.fetch(domain:api.docs.rs)",
        ),
        (read("src/a.rs"), "workspace.read_file"),
        (
            Request {
                tool: "github.create_issue",
                kind: Kind::Other { read_only: false },
                subject: None,
            },
            "github.create_issue",
        ),
    ];
    for (r, want) in cases {
        let rule = p.always_rule(&r);
        assert_eq!(rule, want);
        // What is saved parses and allows the call it answered.
        let p = policy(Layers {
            saved: vec![rule.clone()],
            ..Layers::default()
        });
        assert_eq!(decision(&p, r), Decision::Allow, "{rule}");
    }
    // A chain's rule is its first command's: the rest still need their own.
    assert_eq!(p.always_rule(&run("* x")), "workspace.run_command(? x *)");
    assert_eq!(p.always_rule(&run(" ")), "workspace.run_command(? *)");
    let chain = run("git status && rm x");
    assert_eq!(p.always_rule(&chain), "workspace.run_command(git status *)");
    let root_file = policy(Layers {
        saved: vec!["workspace.write_file(/Cargo.toml)".into()],
        ..Layers::default()
    });
    let deeper = call("workspace.write_file", Kind::Edit, "sub/Cargo.toml");
    assert_eq!(decision(&root_file, deeper), Decision::Ask);
}

#[test]
fn bad_rules_say_where_they_are() {
    let e = Policy::new(user(&[], &[], &["run_command(x"])).expect_err("bad rule");
    assert!(e
        .message
        .starts_with("[permissions] deny: bad permission rule `run_command(x`"));
    let layers = Layers {
        project: Some((
            PathBuf::from("/r/.genai/permissions.toml"),
            PermissionsConfig {
                ask: vec!["what ever".into()],
                ..PermissionsConfig::default()
            },
        )),
        ..Layers::default()
    };
    let e = Policy::new(layers).expect_err("bad project rule");
    assert!(e
        .message
        .starts_with("/r/.genai/permissions.toml: bad permission rule"));
    let e = Policy::new(Layers {
        flag_allow: vec!["workspace.nope".into()],
        ..Layers::default()
    })
    .expect_err("bad flag");
    assert!(e.message.starts_with("--allow: "), "{}", e.message);
}
