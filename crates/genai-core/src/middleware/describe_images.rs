//! The `describe-images` middleware: an image the model cannot take becomes text written by
//! another agent that can (`agent = "NAME"`, an agent of the config), cached by the image's
//! hash, so the text-only model gets `[image: DESCRIPTION]` where the image was and a replayed
//! history does not pay again. Images the model takes pass unchanged (unless `always = true`).
//!
//! It owns which images are described and how the describer is asked; it never stores
//! anything but its cache.

use std::sync::Arc;

use async_trait::async_trait;

use super::{BuildContext, Capabilities, Helpers, Kind, Middleware, Request, TextCache};
use crate::error::Result;
use crate::message::{Message, Part, Role};

/// Turns images the model cannot take into text written by another agent that sees
/// (agent = NAME).
pub(crate) const KIND: Kind = Kind {
    name: "describe-images",
    build,
};

const DEFAULT_PROMPT: &str = "Describe this image for someone who cannot see it: what it shows, any text in it, and anything notable. Answer with the description only.";

struct DescribeImages {
    agent: String,
    prompt: String,
    always: bool,
    helpers: Arc<dyn Helpers>,
    cache: Arc<TextCache>,
}

fn build(ctx: &BuildContext<'_>) -> Result<Arc<dyn Middleware>> {
    ctx.check_settings(&["kind", "agent", "prompt", "always"])?;
    let agent = ctx.string("agent")?.ok_or_else(|| {
        ctx.bad("`agent` is required: an agent of the config whose model takes images")
    })?;
    let always = ctx.flag("always", false)?;
    Ok(Arc::new(DescribeImages {
        agent,
        prompt: ctx
            .string("prompt")?
            .unwrap_or_else(|| DEFAULT_PROMPT.to_string()),
        always,
        helpers: ctx.helpers.clone(),
        cache: ctx.cache.clone(),
    }))
}

/// How many images were described, and how many of those came from the cache.
#[derive(Default)]
struct Count {
    described: usize,
    cached: usize,
}

impl DescribeImages {
    /// Whether this image must become text for this model.
    fn must_describe(&self, part: &Part, model: &Capabilities) -> bool {
        match part {
            Part::Image { data: Some(_), .. } => self.always || !model.images.inline,
            Part::Image { url: Some(_), .. } => self.always || !model.images.url,
            _ => false,
        }
    }

    async fn describe(&self, image: Part, count: &mut Count) -> Result<Part> {
        let Part::Image { url, data, .. } = &image else {
            return Ok(image);
        };
        let bytes = data.as_deref().or(url.as_deref()).unwrap_or_default();
        let key = TextCache::key("image", bytes.as_bytes());
        count.described += 1;
        let text = match self.cache.get(&key) {
            Some(text) => {
                count.cached += 1;
                text
            }
            None => {
                let prompt = vec![Message {
                    role: Role::User,
                    content: vec![image.clone(), Part::text(self.prompt.clone())],
                    from: None,
                }];
                let text = self.helpers.ask_agent(&self.agent, prompt).await?;
                let text = text.trim().to_string();
                self.cache.put(key, text.clone());
                text
            }
        };
        Ok(Part::text(format!("[image: {text}]")))
    }

    async fn parts(
        &self,
        parts: Vec<Part>,
        model: &Capabilities,
        count: &mut Count,
    ) -> Result<Vec<Part>> {
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            out.push(match part {
                p if self.must_describe(&p, model) => self.describe(p, count).await?,
                Part::ToolResult {
                    tool_call_id,
                    content,
                    is_error,
                } => Part::ToolResult {
                    tool_call_id,
                    content: Box::pin(self.parts(content, model, count)).await?,
                    is_error,
                },
                p => p,
            });
        }
        Ok(out)
    }
}

#[async_trait]
impl Middleware for DescribeImages {
    async fn on_request(&self, request: Request<'_>) -> Result<Vec<Message>> {
        let mut count = Count::default();
        let mut out = Vec::with_capacity(request.messages.len());
        for mut m in request.messages {
            m.content = self
                .parts(std::mem::take(&mut m.content), request.model, &mut count)
                .await?;
            out.push(m);
        }
        if count.described > 0 {
            request.notes.push(format!(
                "{} image(s) described by agent {} ({} from the cache)",
                count.described, self.agent, count.cached
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::ImageSupport;
    use crate::middleware::testing::{build_with, caps, run, FakeHelpers};
    use serde_json::json;

    fn image(data: &str) -> Part {
        Part::Image {
            url: None,
            media_type: Some("image/png".into()),
            data: Some(data.into()),
        }
    }

    #[tokio::test]
    async fn images_the_model_cannot_take_become_descriptions_asked_once() {
        let helpers = FakeHelpers::answering("A red dot on white.");
        let m = build_with(
            "see",
            json!({"kind": "describe-images", "agent": "vision"}),
            helpers.clone(),
        );
        let text_only = Capabilities {
            images: ImageSupport::NONE,
            ..caps()
        };
        let messages = vec![Message {
            role: Role::User,
            content: vec![Part::text("What is it?"), image("AAAA")],
            from: None,
        }];
        let (sent, notes) = run(&m, messages.clone(), &text_only).await.unwrap();
        assert_eq!(
            sent[0].content,
            vec![
                Part::text("What is it?"),
                Part::text("[image: A red dot on white.]")
            ]
        );
        assert_eq!(
            notes,
            ["1 image(s) described by agent vision (0 from the cache)"]
        );
        let asked = helpers.asked();
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].0, "vision");
        assert_eq!(
            asked[0].1[0].content[0],
            image("AAAA"),
            "the describer gets the image"
        );
        // Replayed: from the cache, the describer is not asked again.
        let (_, notes) = run(&m, messages.clone(), &text_only).await.unwrap();
        assert!(notes[0].ends_with("(1 from the cache)"), "{notes:?}");
        assert_eq!(helpers.asked().len(), 1);
        // A model that takes images gets them as they are.
        let (sent, notes) = run(&m, messages.clone(), &caps()).await.unwrap();
        assert_eq!(sent, messages);
        assert!(notes.is_empty());
    }

    #[test]
    fn the_agent_is_required() {
        let e = crate::middleware::testing::try_build("see", json!({"kind": "describe-images"}))
            .unwrap_err();
        assert!(e.message.contains("`agent` is required"), "{e}");
    }
}
