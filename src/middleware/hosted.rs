//! Client-hosted middleware: a client registers a name (`RegisterMiddleware` on the daemon) and
//! the chain asks it, through its port, to transform each request's messages, within a time
//! limit. A client that fails, leaves or does not answer in time fails the request with an
//! error naming the middleware.
//!
//! It owns the call and its time limit; what travels on the wire is the port's business.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{Capabilities, Middleware};
use crate::error::{Error, ErrorKind, Result};
use crate::feature::port::{ClientPort, MiddlewareCall};
use crate::message::Message;

/// How long a client may take to answer, unless it said otherwise when it registered.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A middleware a client hosts.
pub struct Hosted {
    name: String,
    port: Arc<dyn ClientPort>,
    timeout: Duration,
}

impl Hosted {
    pub fn new(name: &str, port: Arc<dyn ClientPort>, timeout: Duration) -> Hosted {
        Hosted {
            name: name.to_string(),
            port,
            timeout,
        }
    }
}

#[async_trait]
impl Middleware for Hosted {
    async fn on_request(
        &self,
        messages: Vec<Message>,
        model: &Capabilities,
        notes: &mut Vec<String>,
    ) -> Result<Vec<Message>> {
        let call = MiddlewareCall {
            name: self.name.clone(),
            messages,
            format: model.format.to_string(),
            model: model.model.clone(),
        };
        let sent = call.messages.len();
        let answer = tokio::time::timeout(self.timeout, self.port.middleware(call))
            .await
            .map_err(|_| {
                Error::new(
                    ErrorKind::Timeout,
                    format!("the client did not answer within {:.0?}", self.timeout),
                )
            })??;
        if answer.is_empty() {
            return Err(Error::new(
                ErrorKind::FeatureError,
                "the client answered with no message to send",
            ));
        }
        notes.push(format!("{sent} messages in, {} out", answer.len()));
        Ok(answer)
    }
}
