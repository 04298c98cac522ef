//! ACP content and genai messages, both ways: a `session/prompt`'s blocks become the user's
//! message (text; images as image parts; `resource_link`s to files read through the client's
//! `fs/read_text_file` when it offers it, else from disk; a link to a resource an MCP server of
//! the session lists as that resource's contents; embedded resources as context text with
//! their URI; a secret file, linked or embedded, refused as `-f` refuses it), and a stored
//! conversation becomes the `session/update`s that replay it on `session/load`.
//!
//! It must never run a turn nor write the history.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    ContentBlock, ContentChunk, EmbeddedResourceResource, ImageContent, ReadTextFileRequest,
    ReadTextFileResponse, ResourceLink, SessionUpdate, ToolCallStatus,
};
use base64::Engine;
use serde_json::Value;

use super::connection::{AcpError, Connection};
use super::port::{text_chunk, tool_call, tool_result};
use genai_core::message::{Message, Part, Role};
use genai_core::tools::toolbox::Toolbox;

/// The largest file a `resource_link` may bring into a prompt.
const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// Where the text of a linked file comes from.
pub(crate) struct FileReader<'a> {
    pub(crate) conn: &'a Connection,
    pub(crate) session_id: &'a str,
    /// The client offered `fs.readTextFile`: its buffers (unsaved edits included) win.
    pub(crate) through_client: bool,
    /// The session's tool sources, whose MCP resources links may name.
    pub(crate) toolbox: Option<Arc<Toolbox>>,
    /// The files never sent unless a rule names them (`.env`, keys, genai's own).
    pub(crate) secrets: genai_core::context_files::Secrets,
}

/// The path of a `file:` URI (or of a plain absolute path), percent-decoded.
pub(crate) fn file_path(uri: &str) -> Option<PathBuf> {
    let rest = match uri.strip_prefix("file://") {
        Some(r) => r.strip_prefix("localhost").unwrap_or(r),
        None if uri.starts_with('/') => uri,
        None => return None,
    };
    let decoded = percent_encoding::percent_decode_str(rest)
        .decode_utf8()
        .ok()?;
    Some(PathBuf::from(decoded.as_ref()))
}

/// The text genai gives the model for a resource: its URI, then its text fenced.
fn context_text(uri: &str, text: &str) -> String {
    let fence = if text.contains("```") { "````" } else { "```" };
    format!("Content of {uri}:\n{fence}\n{text}\n{fence}")
}

impl FileReader<'_> {
    /// The text of a linked file.
    async fn read(&self, path: &std::path::Path) -> Result<String, AcpError> {
        if self.through_client {
            let request = ReadTextFileRequest::new(self.session_id.to_string(), path);
            match self.conn.request("fs/read_text_file", request).await {
                Ok(v) => {
                    return serde_json::from_value::<ReadTextFileResponse>(v)
                        .map(|r| r.content)
                        .map_err(|e| {
                            AcpError::invalid_params(format!(
                                "the client's answer to fs/read_text_file for {} is not one: {e}",
                                path.display()
                            ))
                        })
                }
                // The client could not read it (not open, not a text file...): try the disk.
                Err(e) => tracing::debug!("fs/read_text_file {}: {}", path.display(), e.message),
            }
        }
        let meta = tokio::fs::metadata(path)
            .await
            .map_err(|e| AcpError::not_found(format!("cannot read {}: {e}", path.display())))?;
        if meta.len() > MAX_FILE_BYTES {
            return Err(AcpError::invalid_params(format!(
                "{} is {} bytes; a linked file may have {MAX_FILE_BYTES} at most",
                path.display(),
                meta.len()
            )));
        }
        let bytes = tokio::fs::read(path)
            .await
            .map_err(|e| AcpError::not_found(format!("cannot read {}: {e}", path.display())))?;
        String::from_utf8(bytes)
            .map_err(|_| AcpError::invalid_params(format!("{} is not UTF-8 text", path.display())))
    }

    /// A `resource_link` as parts: a file's text (or an image file's bytes), an MCP
    /// resource's contents, else the link.
    async fn link(&self, link: &ResourceLink) -> Result<Vec<Part>, AcpError> {
        let Some(path) = file_path(&link.uri) else {
            if let Some(toolbox) = &self.toolbox {
                if let Some(read) = toolbox.read_listed_resource(&link.uri).await {
                    return Ok(read?);
                }
            }
            return Ok(vec![Part::text(format!("[{}]({})", link.name, link.uri))]);
        };
        self.refuse_secret(&path)?;
        let image = link
            .mime_type
            .as_deref()
            .filter(|m| m.starts_with("image/"));
        if let Some(mime) = image {
            let bytes = tokio::fs::read(&path)
                .await
                .map_err(|e| AcpError::not_found(format!("cannot read {}: {e}", path.display())))?;
            return Ok(vec![Part::Image {
                url: None,
                media_type: Some(mime.to_string()),
                data: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
            }]);
        }
        let text = self.read(&path).await?;
        Ok(vec![Part::text(context_text(&link.uri, &text))])
    }

    /// Refuses a secret file (`.env`, keys, genai's own) that no rule names, as `-f` does.
    fn refuse_secret(&self, path: &std::path::Path) -> Result<(), AcpError> {
        self.secrets
            .check(path, &path.display().to_string())
            .map_err(|e| AcpError::invalid_params(e.message))
    }
}

/// An image block as an image part (inline data, else its URI).
fn image_part(image: &ImageContent) -> Result<Part, AcpError> {
    if image.data.is_empty() {
        return match &image.uri {
            Some(uri) => Ok(Part::Image {
                url: Some(uri.clone()),
                media_type: None,
                data: None,
            }),
            None => Err(AcpError::invalid_params(
                "an image block has no data and no uri",
            )),
        };
    }
    Ok(Part::Image {
        url: None,
        media_type: Some(image.mime_type.clone()),
        data: Some(image.data.clone()),
    })
}

/// A prompt's blocks as the user's message.
pub(crate) async fn prompt_message(
    blocks: Vec<ContentBlock>,
    files: &FileReader<'_>,
) -> Result<Message, AcpError> {
    let mut content = Vec::with_capacity(blocks.len());
    for block in blocks {
        content.push(match block {
            ContentBlock::Text(t) => Part::text(t.text),
            ContentBlock::Image(i) => image_part(&i)?,
            ContentBlock::ResourceLink(link) => {
                content.extend(files.link(&link).await?);
                continue;
            }
            ContentBlock::Resource(r) => match r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => {
                    if let Some(path) = file_path(&t.uri) {
                        files.refuse_secret(&path)?;
                    }
                    Part::text(context_text(&t.uri, &t.text))
                }
                EmbeddedResourceResource::BlobResourceContents(b) => {
                    match b.mime_type.as_deref().filter(|m| m.starts_with("image/")) {
                        Some(mime) => Part::Image {
                            url: None,
                            media_type: Some(mime.to_string()),
                            data: Some(b.blob),
                        },
                        None => {
                            return Err(AcpError::invalid_params(format!(
                                "the embedded resource {} is binary ({}); genai takes text resources and images",
                                b.uri,
                                b.mime_type.as_deref().unwrap_or("no MIME type")
                            )))
                        }
                    }
                }
                _ => return Err(AcpError::invalid_params("an unknown kind of embedded resource")),
            },
            ContentBlock::Audio(_) => {
                return Err(AcpError::invalid_params(
                    "genai takes no audio (promptCapabilities.audio is false)",
                ))
            }
            _ => return Err(AcpError::invalid_params("an unknown kind of content block")),
        });
    }
    if content.is_empty() {
        return Err(AcpError::invalid_params("the prompt is empty"));
    }
    Ok(Message {
        role: Role::User,
        content,
        from: None,
    })
}

/// A part of a user's stored message as a content block.
fn user_block(part: &Part) -> Option<ContentBlock> {
    match part {
        Part::Text { text } => Some(ContentBlock::from(text.clone())),
        Part::Image {
            data: Some(data),
            media_type,
            url,
        } => Some(ContentBlock::Image(
            ImageContent::new(
                data.clone(),
                media_type.clone().unwrap_or_else(|| "image/png".into()),
            )
            .uri(url.clone()),
        )),
        Part::Image { url: Some(url), .. } => Some(ContentBlock::from(format!("[image]({url})"))),
        _ => None,
    }
}

/// The text of a tool result's parts.
fn result_text(content: &[Part]) -> String {
    content
        .iter()
        .filter_map(|p| match p {
            Part::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The updates that replay a stored conversation, in order.
pub(crate) fn replay(messages: &[Message]) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    for m in messages {
        for part in &m.content {
            match (m.role, part) {
                (Role::System, _) => {}
                (Role::User, p) => {
                    if let Some(b) = user_block(p) {
                        updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(b)));
                    }
                }
                (_, Part::Text { text }) => {
                    updates.push(SessionUpdate::AgentMessageChunk(text_chunk(text.clone())))
                }
                (
                    _,
                    Part::ToolCall {
                        id,
                        name,
                        arguments,
                        ..
                    },
                ) => updates.push(SessionUpdate::ToolCall(tool_call(
                    id,
                    &name.replacen("__", ".", 1),
                    arguments.clone(),
                    ToolCallStatus::Pending,
                ))),
                (
                    _,
                    Part::ToolResult {
                        tool_call_id,
                        content,
                        is_error,
                    },
                ) => updates.push(SessionUpdate::ToolCallUpdate(tool_result(
                    tool_call_id,
                    &result_text(content),
                    *is_error,
                    None,
                ))),
                (_, other) => {
                    // Reasoning a model gave is replayed as thought; other parts have no place.
                    let v = serde_json::to_value(other).unwrap_or(Value::Null);
                    if v["type"] == "reasoning" {
                        if let Some(t) = v["text"].as_str() {
                            updates.push(SessionUpdate::AgentThoughtChunk(text_chunk(t)));
                        }
                    }
                }
            }
        }
    }
    updates
}
