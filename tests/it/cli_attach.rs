//! `genai ask -a FILE|URL`: images read from files and URLs, typed from their bytes, sent
//! inline to the fake OpenAI server, and every refusal made before any request.

use std::process::Output;

use base64::Engine;
use fake_scripted::{FakeHttp, Reply};
use serde_json::Value;

use crate::support::cli::{self, stderr, OpenAiCli};
use crate::support::fake_scripted;

/// The CLI with the fake OpenAI server, and a folder for the images a test writes.
struct Env {
    cli: OpenAiCli,
    files: tempfile::TempDir,
}

impl Env {
    fn new() -> Env {
        Env {
            cli: OpenAiCli::new(),
            files: tempfile::tempdir().unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Output {
        cli::output(self.cli.cmd(args))
    }

    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let p = self.files.path().join(name);
        std::fs::write(&p, bytes).unwrap();
        p.display().to_string()
    }
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for b in bytes {
        crc ^= *b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A valid 1×1 grayscale PNG, written chunk by chunk.
fn tiny_png() -> Vec<u8> {
    let chunk = |kind: &[u8], data: &[u8]| {
        let mut c = (data.len() as u32).to_be_bytes().to_vec();
        let mut typed = kind.to_vec();
        typed.extend_from_slice(data);
        c.extend_from_slice(&typed);
        c.extend_from_slice(&crc32(&typed).to_be_bytes());
        c
    };
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    // Width 1, height 1, 8-bit grayscale, no interlace.
    png.extend(chunk(b"IHDR", &[0, 0, 0, 1, 0, 0, 0, 1, 8, 0, 0, 0, 0]));
    // zlib, one stored block with the row [filter 0, pixel 0], Adler-32 0x00020001.
    png.extend(chunk(
        b"IDAT",
        &[
            0x78, 0x01, 0x01, 0x02, 0x00, 0xfd, 0xff, 0, 0, 0x00, 0x02, 0x00, 0x01,
        ],
    ));
    png.extend(chunk(b"IEND", &[]));
    png
}

/// The image URL of the user message the fake received.
fn sent_image(env: &Env) -> String {
    let body = env.cli.last_body();
    let content = &body["messages"][0]["content"];
    assert_eq!(
        content[0],
        serde_json::json!({"type": "text", "text": "what is this?"})
    );
    content[1]["image_url"]["url"].as_str().unwrap().to_string()
}

fn data_url(bytes: &[u8]) -> String {
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

#[test]
fn a_png_named_jpg_goes_as_an_inline_png() {
    let env = Env::new();
    let png = tiny_png();
    let path = env.file("photo.jpg", &png);
    let o = env.run(&[
        "ask",
        "-m",
        "openai:gpt-4o",
        "--no-stream",
        "-a",
        &path,
        "what is this?",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(sent_image(&env), data_url(&png));
    // file:// works the same, and the stored turn keeps the image.
    let o = env.run(&[
        "ask",
        "-m",
        "openai:gpt-4o",
        "-a",
        &format!("file://{path}"),
        "what is this?",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(sent_image(&env), data_url(&png));
}

#[test]
fn a_downloaded_image_is_typed_from_its_bytes() {
    let env = Env::new();
    let png = tiny_png();
    let served = png.clone();
    let images = FakeHttp::start(move |req| {
        if req.target == "/cat" {
            Reply {
                status: 200,
                headers: vec![("Content-Type".into(), "application/octet-stream".into())],
                body: fake_scripted::Body::Full(served.clone()),
            }
        } else {
            Reply::raw(404, "text/plain", "no such image")
        }
    });
    let o = env.run(&[
        "ask",
        "-m",
        "openai:m",
        "--no-stream",
        "-a",
        &images.url("/cat"),
        "what is this?",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(sent_image(&env), data_url(&png));
    let o = env.run(&[
        "ask",
        "-m",
        "openai:m",
        "-a",
        &images.url("/dog"),
        "what is this?",
    ]);
    assert!(!o.status.success());
    cli::assert_stderr_says(&o, "HTTP 404");
    assert_eq!(
        env.cli.fake.requests().len(),
        1,
        "the failed download sent nothing"
    );
}

#[test]
fn files_that_are_not_images_or_too_big_are_refused_before_sending() {
    let env = Env::new();
    let text = env.file("notes.png", b"just some text\n");
    let o = env.run(&["ask", "-m", "openai:m", "-a", &text, "what is this?"]);
    assert!(!o.status.success());
    cli::assert_stderr_says(&o, "is not an image genai recognises");
    let pdf = env.file("scan.png", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n");
    let o = env.run(&["ask", "-m", "openai:m", "-a", &pdf, "what is this?"]);
    cli::assert_stderr_says(&o, "is application/pdf (pdf)");
    // 21 MiB with a PNG signature: refused from its size, before it is read.
    let big = env.files.path().join("huge.png");
    let f = std::fs::File::create(&big).unwrap();
    std::io::Write::write_all(&mut &f, &tiny_png()).unwrap();
    f.set_len(21 << 20).unwrap();
    let o = env.run(&["ask", "-m", "openai:m", "-a", big.to_str().unwrap(), "hi"]);
    assert!(!o.status.success());
    cli::assert_stderr_says(&o, "larger than genai's limit of 20 MiB (21.0 MiB)");
    let o = env.run(&["ask", "-m", "openai:m", "-a", "/no/such/file.png", "hi"]);
    cli::assert_stderr_says(&o, "cannot read attachment /no/such/file.png");
    assert!(
        env.cli.fake.requests().is_empty(),
        "a refused attachment reached the provider"
    );
}

#[test]
fn a_format_without_images_refuses_them_before_sending() {
    let env = Env::new();
    let endpoint = FakeHttp::start(|_| Reply::raw(200, "application/json", r#"{"text":"x"}"#));
    env.cli.dirs.write_config(&format!(
        r#"
[service_providers.generic]
kind = "http"
base_url = "{}"
[model_configurations.plain]
format = "http-template"
model = "m"
[model_configurations.plain.parameters]
request_body = '{{"prompt": "${{parameters.prompt}}"}}'
response_filter = "$.text"
[agents.plain]
provider = "generic"
model_configuration = "plain"
[model_configurations.vision]
format = "http-template"
model = "m"
[model_configurations.vision.parameters]
request_body = '{{"prompt": "${{parameters.prompt}}", "images": ${{parameters.images}}}}'
response_filter = "$.text"
[agents.vision]
provider = "generic"
model_configuration = "vision"
"#,
        endpoint.url("/generate")
    ));
    let png = env.file("a.png", &tiny_png());
    let o = env.run(&["ask", "-m", "plain", "-a", &png, "what is this?"]);
    assert!(!o.status.success());
    cli::assert_stderr_says(&o, "the http-template format cannot take images");
    assert!(endpoint.requests().is_empty());
    let o = env.run(&["ask", "-m", "plain", "--no-stream", "what is this?"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "x\n");
    let _: Value = endpoint.requests()[0].json();
    // A template that places `${parameters.images}` takes them, as base64.
    let o = env.run(&[
        "ask",
        "-m",
        "vision",
        "--no-stream",
        "-a",
        &png,
        "what is this?",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let body = endpoint.requests()[1].json();
    assert_eq!(
        body["images"][0].as_str().unwrap(),
        base64::engine::general_purpose::STANDARD.encode(tiny_png())
    );
}
