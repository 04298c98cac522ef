//! What an MCP server offers beside its tools: **resources** (documents a client reads and
//! gives the model as context) and **prompts** (message templates with arguments), listed and
//! fetched through the server's MCP session.
//!
//! It owns how their MCP shapes become genai's (a listed resource or prompt as
//! `genai-protocol`'s `McpResource` and `McpPrompt`, the listings' own records; a resource's
//! text as a text part with its URI, an image blob as an image part; a prompt's messages as
//! messages). It must never decide when
//! they are used: a client asks for them.

use rmcp::model::{
    ContentBlock, GetPromptRequestParams, ReadResourceRequestParams, ResourceContents,
};
use serde_json::{Map, Value};

use super::mcp::McpServer;
use crate::error::{Error, ErrorKind, Result};
use crate::message::{Message, Part, Role};
use genai_protocol::listings::{McpPrompt, McpPromptArgument, McpResource};

fn failed(server: &McpServer, what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::FeatureError,
        format!("MCP server `{}`: {what} failed: {e}", server.name()),
    )
}

/// A piece of MCP content as a part (text, or an image); other kinds are described in text.
fn part_of(block: &ContentBlock) -> Part {
    match block {
        ContentBlock::Text(t) => Part::text(t.text.clone()),
        ContentBlock::Image(i) => Part::Image {
            url: None,
            media_type: Some(i.mime_type.clone()),
            data: Some(i.data.clone()),
        },
        other => Part::Json {
            value: serde_json::to_value(other).unwrap_or(Value::Null),
        },
    }
}

impl McpServer {
    /// The resources the server lists (none when it offers no resources).
    pub(crate) async fn resources(&self) -> Result<Vec<McpResource>> {
        let peer = self.peer().await?;
        let offers = peer
            .peer_info()
            .is_some_and(|i| i.capabilities.resources.is_some());
        if !offers {
            return Ok(Vec::new());
        }
        let listed = peer
            .list_all_resources()
            .await
            .map_err(|e| failed(self, "resources/list", e))?;
        Ok(listed
            .into_iter()
            .map(|r| McpResource {
                source: self.name().to_string(),
                uri: r.uri.clone(),
                name: r.name.clone(),
                description: r.description.clone(),
                mime_type: r.mime_type.clone(),
            })
            .collect())
    }

    /// The contents of the resource `uri`: text as a text part headed by its URI, images as
    /// image parts.
    pub async fn read_resource(&self, uri: &str) -> Result<Vec<Part>> {
        let peer = self.peer().await?;
        let read = peer
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|e| failed(self, &format!("reading {uri}"), e))?;
        read.contents
            .into_iter()
            .map(|c| match c {
                ResourceContents::TextResourceContents { uri, text, .. } => {
                    Ok(Part::text(format!("Content of {uri}:\n{text}")))
                }
                ResourceContents::BlobResourceContents {
                    mime_type: Some(mime),
                    blob,
                    ..
                } if mime.starts_with("image/") => Ok(Part::Image {
                    url: None,
                    media_type: Some(mime),
                    data: Some(blob),
                }),
                ResourceContents::BlobResourceContents { uri, mime_type, .. } => {
                    Err(Error::invalid_params(format!(
                        "the resource {uri} is binary ({}); genai takes text resources and images",
                        mime_type.as_deref().unwrap_or("no MIME type")
                    )))
                }
                _ => Err(Error::invalid_params(format!(
                    "{uri}: an unknown kind of resource contents"
                ))),
            })
            .collect()
    }

    /// The prompts the server lists (none when it offers no prompts).
    pub(crate) async fn prompts(&self) -> Result<Vec<McpPrompt>> {
        let peer = self.peer().await?;
        let offers = peer
            .peer_info()
            .is_some_and(|i| i.capabilities.prompts.is_some());
        if !offers {
            return Ok(Vec::new());
        }
        let listed = peer
            .list_all_prompts()
            .await
            .map_err(|e| failed(self, "prompts/list", e))?;
        Ok(listed
            .into_iter()
            .map(|p| McpPrompt {
                source: self.name().to_string(),
                name: p.name.clone(),
                description: p.description.clone(),
                arguments: p
                    .arguments
                    .clone()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| McpPromptArgument {
                        name: a.name,
                        description: a.description,
                        required: a.required.unwrap_or(false),
                    })
                    .collect(),
            })
            .collect())
    }

    /// The messages of the prompt `name` with its arguments.
    pub async fn prompt(&self, name: &str, arguments: Map<String, Value>) -> Result<Vec<Message>> {
        let peer = self.peer().await?;
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = Some(arguments);
        let got = peer
            .get_prompt(params)
            .await
            .map_err(|e| failed(self, &format!("prompts/get {name}"), e))?;
        Ok(got
            .messages
            .iter()
            .map(|m| Message {
                role: match m.role {
                    rmcp::model::Role::Assistant => Role::Assistant,
                    _ => Role::User,
                },
                content: vec![part_of(&m.content)],
                from: Some(format!("{}.{name}", self.name())),
            })
            .collect())
    }
}
