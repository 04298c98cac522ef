//! Running one request's turn for the editor: work-done progress (begun, the streamed reply's
//! length reported, ended) with its cancel button, and showing a reply (a Markdown document in
//! the data dir, or a message). It must never decide what a reply changes in a file:
//! `server.rs` does.

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tower_lsp_server::jsonrpc;
use tower_lsp_server::ls_types::*;

use super::port::{self, Answer};
use super::server::{lsp_error, token_key, Backend};
use genai_core::error::ErrorKind;

impl Backend {
    /// Starts work-done progress: the client's token if it sent one, else one of ours when
    /// it supports server-initiated progress; `None` when it has no progress at all.
    async fn begin_progress(
        &self,
        given: Option<ProgressToken>,
        title: &str,
    ) -> Option<(ProgressToken, CancellationToken)> {
        let token = match given {
            Some(t) => t,
            None if self.flags().work_done_progress => {
                let t = NumberOrString::String(format!("genai-{}", ulid::Ulid::new()));
                self.client
                    .create_work_done_progress(t.clone())
                    .await
                    .ok()?;
                t
            }
            None => return None,
        };
        let stop = CancellationToken::new();
        if let Ok(mut p) = self.progress.lock() {
            p.insert(token_key(&token), stop.clone());
        }
        self.client
            .send_notification::<notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(WorkDoneProgress::Begin(
                    WorkDoneProgressBegin {
                        title: title.to_string(),
                        cancellable: Some(true),
                        message: Some("waiting for the model".into()),
                        percentage: None,
                    },
                )),
            })
            .await;
        Some((token, stop))
    }

    async fn progress_report(&self, token: &ProgressToken, message: String) {
        self.client
            .send_notification::<notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(WorkDoneProgress::Report(
                    WorkDoneProgressReport {
                        message: Some(message),
                        cancellable: Some(true),
                        percentage: None,
                    },
                )),
            })
            .await;
    }

    async fn end_progress(&self, token: &ProgressToken, message: &str) {
        if let Ok(mut p) = self.progress.lock() {
            p.remove(&token_key(token));
        }
        self.client
            .send_notification::<notification::Progress>(ProgressParams {
                token: token.clone(),
                value: ProgressParamsValue::WorkDone(WorkDoneProgress::End(WorkDoneProgressEnd {
                    message: Some(message.to_string()),
                })),
            })
            .await;
    }

    /// Runs one turn with progress (the streamed reply's length) and its cancel button.
    pub(super) async fn run(
        &self,
        title: String,
        prompt: String,
        acting: port::Acting,
        given: Option<ProgressToken>,
    ) -> jsonrpc::Result<Answer> {
        let progress = self.begin_progress(given, &title).await;
        let stop = progress
            .as_ref()
            .map(|(_, s)| s.clone())
            .unwrap_or_default();
        let (lengths, mut seen) = watch::channel(0usize);
        let turn = port::ask(
            &self.fw,
            &self.port,
            self.model(),
            title,
            prompt,
            acting,
            &lengths,
            &stop,
        );
        tokio::pin!(turn);
        let result = loop {
            tokio::select! {
                r = &mut turn => break r,
                changed = seen.changed(), if progress.is_some() => {
                    if changed.is_ok() {
                        let n = *seen.borrow_and_update();
                        if let Some((token, _)) = &progress {
                            self.progress_report(token, format!("{n} characters")).await;
                        }
                    }
                }
            }
        };
        if let Some((token, _)) = &progress {
            // A reply streamed faster than the loop above turned may end with its last length
            // unreported: report it, so the count shown is the reply's whole length.
            if seen.has_changed().unwrap_or(false) {
                let n = *seen.borrow_and_update();
                self.progress_report(token, format!("{n} characters")).await;
            }
            let end = match &result {
                Ok(_) => "done",
                Err(e) if e.kind == ErrorKind::Cancelled => "cancelled",
                Err(_) => "failed",
            };
            self.end_progress(token, end).await;
        }
        result.map_err(lsp_error)
    }

    /// Shows a reply: a Markdown file in the data dir opened in the editor, or a message when
    /// the client cannot open documents.
    pub(super) async fn show(&self, title: &str, answer: &Answer) -> bool {
        if self.flags().show_document {
            let dir = self.data_dir.join("lsp");
            let file = dir.join(format!("{}.md", answer.conversation_id));
            // The data folder's files are the user's alone.
            let written = genai_core::private::dir(&dir)
                .and_then(|_| genai_core::private::file(&file))
                .and_then(|_| std::fs::write(&file, format!("# {title}\n\n{}\n", answer.reply)));
            match written {
                Ok(()) => {
                    if let Some(uri) = Uri::from_file_path(&file) {
                        let shown = self
                            .client
                            .show_document(ShowDocumentParams {
                                uri,
                                external: Some(false),
                                take_focus: Some(true),
                                selection: None,
                            })
                            .await;
                        if matches!(shown, Ok(true)) {
                            return true;
                        }
                    }
                }
                Err(e) => tracing::warn!("cannot write {}: {e}", file.display()),
            }
        }
        self.client
            .show_message(MessageType::INFO, &answer.reply)
            .await;
        false
    }
}
