//! `genai sessions list|show|delete`: the stored conversations.

use clap::Subcommand;
use genai::error::Error;
use genai::rpc::listings::{ConversationRecord, StoredMessage};
use genai::store::Store;

#[derive(Subcommand)]
pub enum Command {
    /// List conversations, most recent first.
    List {
        /// How many to show.
        #[arg(short = 'n', long, default_value_t = 20)]
        limit: usize,
        #[arg(long)]
        json: bool,
    },
    /// Show a conversation's messages (ID may be any unique prefix).
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Delete a conversation (ID may be any unique prefix).
    Delete { id: String },
}

fn open() -> Result<Store, Error> {
    let paths = genai::config::Paths::from_env()?;
    Store::open(&paths.history_db())
}

fn time(ms: i64) -> String {
    let t = genai::store::UtcTime::of(ms);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        t.year, t.month, t.day, t.hour, t.minute
    )
}

pub fn run(c: Command) -> Result<(), Error> {
    let store = open()?;
    match c {
        Command::List { limit, json } => {
            let (list, _) = store.list_conversations(limit.max(1), None)?;
            if json {
                let list: Vec<ConversationRecord> = list.into_iter().map(Into::into).collect();
                super::print_json(&list);
                return Ok(());
            }
            if list.is_empty() {
                eprintln!("no conversations yet");
            }
            for c in list {
                println!(
                    "{}  {}  {:>3} msgs  {:<24} {}",
                    c.id,
                    time(c.updated_at),
                    c.message_count,
                    format!("{}:{}", c.provider, c.model),
                    c.title
                );
            }
        }
        Command::Show { id, json } => {
            let id = store.resolve_id(&id)?;
            let rec = store.conversation(&id)?;
            let (messages, _) = store.history(&id, usize::MAX / 2, None)?;
            if json {
                let rec = rec.map(ConversationRecord::from);
                let messages: Vec<StoredMessage> = messages.into_iter().map(Into::into).collect();
                super::print_json(&serde_json::json!({"conversation": rec, "messages": messages}));
                return Ok(());
            }
            if let Some(r) = rec {
                println!(
                    "# {} ({}:{}, feature {})\n",
                    r.title, r.provider, r.model, r.feature
                );
            }
            for m in messages {
                println!("[{}] {}\n", m.message.role.as_str(), m.message.text());
            }
        }
        Command::Delete { id } => {
            let id = store.resolve_id(&id)?;
            store.delete_conversation(&id)?;
            eprintln!("deleted {id}");
        }
    }
    Ok(())
}
