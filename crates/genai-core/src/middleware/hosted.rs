//! Client-hosted middleware: a client registers a name (`RegisterMiddleware` on the daemon) and
//! the chain asks it, through its port, to transform each request's messages, within a time
//! limit. A client that fails, leaves or does not answer in time fails the request with an
//! error naming the middleware.
//!
//! It owns the call and its time limit; what travels on the wire is the port's business. It
//! knows no port: the session hands it a [`Host`], the client's port seen as the host of its
//! middleware (the port's trait sits above the agent, which runs this chain).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;

use super::{Middleware, Request};
use crate::error::{Error, ErrorKind, Result};
use crate::message::Message;

/// How long a client may take to answer, unless it said otherwise when it registered.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// A request of a request's messages to a middleware a client hosts; the answer is the
/// messages to send.
#[derive(Debug, Clone)]
pub struct MiddlewareCall {
    /// The name the client registered it under.
    pub name: String,
    pub messages: Vec<Message>,
    /// The format and model the messages go to.
    pub format: String,
    pub model: String,
}

/// Whoever runs a client-hosted middleware: the client, through its port.
#[async_trait]
pub(crate) trait Host: Send + Sync {
    /// Runs the middleware `call.name` on the messages and returns the messages to send.
    async fn middleware(&self, call: MiddlewareCall) -> Result<Vec<Message>>;
}

/// A middleware a client hosts.
pub(crate) struct Hosted {
    name: String,
    port: Arc<dyn Host>,
    timeout: Duration,
}

impl Hosted {
    pub(crate) fn new(name: &str, port: Arc<dyn Host>, timeout: Duration) -> Hosted {
        Hosted {
            name: name.to_string(),
            port,
            timeout,
        }
    }
}

#[async_trait]
impl Middleware for Hosted {
    async fn on_request(&self, request: Request<'_>) -> Result<Vec<Message>> {
        let call = MiddlewareCall {
            name: self.name.clone(),
            messages: request.messages,
            format: request.model.format.to_string(),
            model: request.model.model.clone(),
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
        request
            .notes
            .push(format!("{sent} messages in, {} out", answer.len()));
        Ok(answer)
    }
}
