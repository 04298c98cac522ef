//! `genai sessions list|show|export|rename|delete`: the stored conversations.

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
    /// Print a conversation as a Markdown document or as JSON (ID may be any unique prefix).
    Export {
        id: String,
        #[arg(long, value_enum, default_value_t = ExportFormat::Md)]
        format: ExportFormat,
    },
    /// Give a conversation a new title (ID may be any unique prefix).
    Rename { id: String, title: String },
    /// Delete a conversation (ID may be any unique prefix).
    Delete { id: String },
}

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ExportFormat {
    Md,
    Json,
}

fn open() -> Result<Store, Error> {
    let paths = genai::config::Paths::from_env()?;
    Store::open(&paths.history_db())
}

fn time(ms: i64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm); avoids a date crate.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}",
        rem / 3600,
        rem % 3600 / 60
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
        Command::Show { id, json: true }
        | Command::Export {
            id,
            format: ExportFormat::Json,
        } => {
            let id = store.resolve_id(&id)?;
            let rec = store.conversation(&id)?.map(ConversationRecord::from);
            let (messages, _) = store.history(&id, usize::MAX / 2, None)?;
            let messages: Vec<StoredMessage> = messages.into_iter().map(Into::into).collect();
            super::print_json(&serde_json::json!({"conversation": rec, "messages": messages}));
        }
        Command::Export {
            id,
            format: ExportFormat::Md,
        } => {
            let id = store.resolve_id(&id)?;
            let (messages, _) = store.history(&id, usize::MAX / 2, None)?;
            if let Some(r) = store.conversation(&id)? {
                println!(
                    "# {}
",
                    r.title
                );
                println!(
                    "{} · {}:{} · feature {} · {}\n",
                    r.id,
                    r.provider,
                    r.model,
                    r.feature,
                    time(r.created_at)
                );
            }
            for m in messages {
                let role = m.message.role.as_str();
                match (&m.model, m.message.role) {
                    (Some(model), genai::message::Role::Assistant) => {
                        println!("## {role} ({model})\n")
                    }
                    _ => println!("## {role}\n"),
                }
                println!("{}\n", m.message.text().trim_end());
            }
        }
        Command::Rename { id, title } => {
            let id = store.resolve_id(&id)?;
            store.rename_conversation(&id, &title)?;
            eprintln!("renamed {id}");
        }
        Command::Show { id, json: false } => {
            let id = store.resolve_id(&id)?;
            let rec = store.conversation(&id)?;
            let (messages, _) = store.history(&id, usize::MAX / 2, None)?;
            if let Some(r) = rec {
                println!(
                    "# {} ({}:{}, feature {})\n",
                    r.title, r.provider, r.model, r.feature
                );
            }
            for m in messages {
                let by = match (&m.model, m.message.role) {
                    (Some(model), genai::message::Role::Assistant) => format!(" · {model}"),
                    _ => String::new(),
                };
                println!("[{}{by}] {}\n", m.message.role.as_str(), m.message.text());
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
