//! genai's permission modes as ACP session modes: `read-only`, `plan`, `ask`, `edit` and `full`, in
//! every session's answer (`modes`), switched with `session/set_mode` and announced with
//! `current_mode_update`.
//!
//! It owns the modes' names as the client shows them. It must never decide a call (the
//! session's guard does, in the mode set here).

use agent_client_protocol_schema::v1::{
    CurrentModeUpdate, SessionMode, SessionModeState, SessionUpdate,
};

use super::connection::{AcpError, Connection};
use genai_core::permission::Mode;
use genai_core::session::Framework;

/// What the client shows of a mode.
fn shown(mode: Mode) -> SessionMode {
    let (name, description) = match mode {
        Mode::ReadOnly => (
            "Read only",
            "The model reads; edits and commands are refused",
        ),
        Mode::Plan => (
            "Plan",
            "The model reads and answers with a plan; edits and commands are refused",
        ),
        Mode::Ask => (
            "Ask",
            "The model reads; edits, commands and fetches ask first",
        ),
        Mode::Edit => (
            "Edit",
            "The model reads and edits; commands and fetches ask first",
        ),
        Mode::Full => (
            "Full access",
            "Everything runs without asking, but secret files",
        ),
    };
    SessionMode::new(mode.as_str(), name).description(description.to_string())
}

/// The modes of the session `id` (none when it takes no tools).
pub(crate) fn state(fw: &Framework, id: &str) -> Option<SessionModeState> {
    let current = fw.permission_mode(id)?;
    Some(SessionModeState::new(
        current.as_str(),
        Mode::ALL.into_iter().map(shown).collect(),
    ))
}

/// The mode a `session/set_mode` names.
pub(crate) fn parse(id: &str) -> Result<Mode, AcpError> {
    Mode::ALL
        .into_iter()
        .find(|m| m.as_str() == id)
        .ok_or_else(|| {
            AcpError::invalid_params(format!(
                "no mode `{id}`; the modes are {}",
                genai_core::error::known(Mode::ALL)
            ))
        })
}

/// Tells the client the session's mode now.
pub(crate) fn announce(conn: &Connection, id: &str, mode: Mode) {
    conn.update(
        id,
        SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode.as_str())),
    );
}
