//! `genai ask -a FILE|URL`: turns attachments into inline image parts before anything is sent.
//!
//! It owns reading a file (or `file://` URL) or downloading an `http(s)` URL within a size cap
//! and a timeout, and sniffing the media type from the bytes (the name and the server's
//! Content-Type are not trusted). It must never send a prompt: refusals happen here, before
//! the framework is asked anything; per-provider limits are checked later by the agent
//! (`format::check_images`).

use std::io::Read;

use base64::Engine;
use genai_core::error::{Error, ErrorKind};
use genai_core::message::Part;

/// The largest attachment genai reads, whatever the provider takes (OpenAI's limit is 20 MB).
pub const MAX_ATTACHMENT_BYTES: u64 = 20 << 20;

/// The image types every image-taking format accepts.
const ACCEPTED: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

fn refuse(msg: String) -> Error {
    Error::new(ErrorKind::InvalidParams, msg)
}

fn too_big(what: &str, size: Option<u64>) -> Error {
    let size = size
        .map(|s| format!(" ({:.1} MiB)", s as f64 / (1u64 << 20) as f64))
        .unwrap_or_default();
    refuse(format!(
        "attachment {what} is larger than genai's limit of {} MiB{size}",
        MAX_ATTACHMENT_BYTES >> 20
    ))
}

/// Loads every attachment as an image part, in order.
pub async fn load_all(specs: &[String]) -> Result<Vec<Part>, Error> {
    let mut parts = Vec::with_capacity(specs.len());
    for spec in specs {
        parts.push(load(spec).await?);
    }
    Ok(parts)
}

async fn load(spec: &str) -> Result<Part, Error> {
    let lower = spec.to_ascii_lowercase();
    let bytes = if genai_core::fetch::is_url(spec) {
        genai_core::fetch::download(spec, "attachment", MAX_ATTACHMENT_BYTES, |size| {
            too_big(spec, size)
        })
        .await?
        .bytes
    } else {
        let path = match lower.strip_prefix("file://") {
            Some(_) => reqwest::Url::parse(spec)
                .ok()
                .and_then(|u| u.to_file_path().ok())
                .ok_or_else(|| refuse(format!("attachment `{spec}` is not a usable file URL")))?,
            None => std::path::PathBuf::from(spec),
        };
        let shown = path.display().to_string();
        tokio::task::spawn_blocking(move || read_file(&path, &shown))
            .await
            .map_err(|e| Error::internal(format!("reading an attachment failed: {e}")))??
    };
    image_part(spec, &bytes)
}

/// Reads a file, refusing one over the cap from its size alone.
fn read_file(path: &std::path::Path, shown: &str) -> Result<Vec<u8>, Error> {
    let file = std::fs::File::open(path)
        .map_err(|e| refuse(format!("cannot read attachment {shown}: {e}")))?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    if len > MAX_ATTACHMENT_BYTES {
        return Err(too_big(shown, Some(len)));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    file.take(MAX_ATTACHMENT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("cannot read attachment {shown}: {e}")))?;
    if bytes.len() as u64 > MAX_ATTACHMENT_BYTES {
        return Err(too_big(shown, None));
    }
    Ok(bytes)
}

/// An inline image part, its media type sniffed from the bytes.
fn image_part(spec: &str, bytes: &[u8]) -> Result<Part, Error> {
    let media_type = match infer::get(bytes) {
        Some(t) if ACCEPTED.contains(&t.mime_type()) => t.mime_type().to_string(),
        Some(t) => {
            return Err(refuse(format!(
                "attachment {spec} is {} ({}), not an image genai can send: png, jpeg, gif or webp",
                t.mime_type(),
                t.extension()
            )))
        }
        None => {
            return Err(refuse(format!(
                "attachment {spec} is not an image genai recognises (png, jpeg, gif or webp)"
            )))
        }
    };
    Ok(Part::Image {
        url: None,
        media_type: Some(media_type),
        data: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_comes_from_the_bytes() {
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";
        match image_part("x.jpg", png).unwrap() {
            Part::Image { media_type, .. } => assert_eq!(media_type.as_deref(), Some("image/png")),
            other => panic!("{other:?}"),
        }
        let e = image_part("a.pdf", b"%PDF-1.7\n").unwrap_err();
        assert!(e.message.contains("application/pdf"), "{}", e.message);
        let e = image_part("a.txt", b"hello").unwrap_err();
        assert!(e.message.contains("not an image"), "{}", e.message);
    }
}
