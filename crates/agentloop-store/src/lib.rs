//! The journal of a run in PostgreSQL (`[store] url = "postgres://…"`), for runs whose
//! driver, workers and dashboard live on different machines.
//!
//! Each record is a row of `agentloop_events` (run, sequence number, the sealed line
//! exactly as the file journal has it: the same schema, checksum and MAC), appended in
//! a transaction that holds the run's append lock (`pg_advisory_xact_lock`) and checks
//! that the row goes right after the last one; `NOTIFY agentloop_events` tells
//! listeners (`serve`, `watch`) which run grew. One driver per run holds the run's
//! driver lock (`pg_try_advisory_lock`, for its session) on a connection of its own.
//! A connection that breaks is opened again and the append tried again: a try whose
//! answer was lost and that did commit is recognised by its row.
//!
//! The schema is versioned (`agentloop store migrate`); [`export`] gives a run's
//! journal back in the file format.

mod journal;
mod listen;
mod schema;

use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use agentloop_core::journal::shared::{DriverHold, SharedJournal, SharedStore};

pub use listen::{Listener, follow_runs};
pub use schema::{SCHEMA, migrate, version};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Url(String),
    #[error("cannot reach PostgreSQL at {at}: {message}")]
    Connect { at: String, message: String },
    #[error("PostgreSQL at {at}: {message}")]
    Query { at: String, message: String },
    #[error(
        "the database at {at} has agentloop's schema {found}, and this agentloop needs {SCHEMA}: run `agentloop store migrate`"
    )]
    Schema { at: String, found: i32 },
    #[error("no run {run} in the store at {at}")]
    NoRun { run: String, at: String },
}

/// A PostgreSQL server and database, as `[store] url` names it.
#[derive(Clone)]
pub struct Pg {
    config: postgres::Config,
    /// The URL without its password, for messages.
    shown: String,
}

impl std::fmt::Debug for Pg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

impl Pg {
    pub fn parse(url: &str) -> Result<Pg, StoreError> {
        let config = postgres::Config::from_str(url)
            .map_err(|e| StoreError::Url(format!("[store] url: {e}")))?;
        let mut config = config;
        config.connect_timeout(Duration::from_secs(10));
        Ok(Pg {
            shown: hide_password(url),
            config,
        })
    }

    /// A new connection, named `what` in `pg_stat_activity`.
    pub fn connect(&self, what: &str) -> Result<postgres::Client, StoreError> {
        let mut config = self.config.clone();
        config.application_name(&format!("agentloop {what} pid {}", std::process::id()));
        config
            .connect(postgres::NoTls)
            .map_err(|e| StoreError::Connect {
                at: self.shown.clone(),
                message: source_text(&e),
            })
    }

    pub fn shown(&self) -> &str {
        &self.shown
    }

    pub(crate) fn query_error(&self, e: &postgres::Error) -> StoreError {
        StoreError::Query {
            at: self.shown.clone(),
            message: source_text(e),
        }
    }
}

/// The whole chain of an error's causes (postgres's own message is often only "db
/// error").
pub(crate) fn source_text(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.code().code(), db.message());
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}

fn hide_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return if url.contains("password") {
            "(a connection string with a password)".into()
        } else {
            url.to_string()
        };
    };
    match rest.split_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{scheme}://{name}:***@{host}"),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

/// Runs `f`, which blocks on the database, off any async runtime the caller is on
/// (the server's handlers are): postgres's synchronous client runs a runtime of its
/// own, which cannot be started inside another.
pub(crate) fn blocking<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|s| match s.spawn(f).join() {
            Ok(v) => v,
            Err(panic) => std::panic::resume_unwind(panic),
        })
    } else {
        f()
    }
}

/// A 63-bit key for an advisory lock: `kind` of lock of run `run` (FNV-1a).
pub(crate) fn lock_key(kind: &str, run: &str) -> i64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in kind.bytes().chain([0]).chain(run.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h >> 1) as i64
}

/// The journals of runs in PostgreSQL: what `[store] url` installs. Nothing connects
/// until a journal is written or a driver starts (a command that only reads a run's
/// file needs no database).
pub struct PgStore {
    pg: Pg,
    /// Whether the database has the schema this agentloop needs, asked once.
    checked: std::sync::OnceLock<Result<(), String>>,
}

impl PgStore {
    pub fn new(url: &str) -> Result<PgStore, StoreError> {
        Ok(PgStore {
            pg: Pg::parse(url)?,
            checked: std::sync::OnceLock::new(),
        })
    }

    /// Installs it for the rest of the process.
    pub fn install(self) {
        agentloop_core::journal::shared::install(Arc::new(self));
    }

    fn check(&self) -> Result<(), String> {
        self.checked
            .get_or_init(|| {
                let mut client = self.pg.connect("check").map_err(|e| e.to_string())?;
                let found = schema::version(&mut client)
                    .map_err(|e| self.pg.query_error(&e).to_string())?;
                if found != SCHEMA {
                    return Err(StoreError::Schema {
                        at: self.pg.shown.clone(),
                        found,
                    }
                    .to_string());
                }
                Ok(())
            })
            .clone()
    }
}

impl SharedStore for PgStore {
    fn journal(&self, run: &str) -> Result<Box<dyn SharedJournal>, String> {
        blocking(|| {
            self.check()?;
            journal::PgJournal::open(self.pg.clone(), run)
                .map(|j| Box::new(j) as Box<dyn SharedJournal>)
                .map_err(|e| e.to_string())
        })
    }

    fn hold_driver(&self, run: &str) -> Result<Box<dyn DriverHold>, String> {
        blocking(|| {
            self.check()?;
            journal::Hold::take(self.pg.clone(), run).map(|h| Box::new(h) as Box<dyn DriverHold>)
        })
    }

    fn driver_of(&self, run: &str) -> Option<String> {
        blocking(|| {
            let mut client = self.pg.connect("look").ok()?;
            let who = journal::holder(&mut client, lock_key("driver", run))?;
            // `agentloop driver RUN pid N from ADDR` → `N on ADDR`.
            Some(match who.split_once(" pid ") {
                Some((_, rest)) => rest.replacen(" from ", " on ", 1),
                None => who,
            })
        })
    }

    fn describe(&self) -> String {
        format!("PostgreSQL at {}", self.pg.shown)
    }
}

/// The runs in the store, oldest first.
pub fn runs(url: &str) -> Result<Vec<String>, StoreError> {
    let pg = Pg::parse(url)?;
    let mut client = pg.connect("runs")?;
    let rows = client
        .query(
            "SELECT run_id FROM agentloop_runs ORDER BY created_at, run_id",
            &[],
        )
        .map_err(|e| pg.query_error(&e))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Run `run`'s journal as the file journal has it: its lines, each with its newline.
pub fn export(url: &str, run: &str) -> Result<String, StoreError> {
    let pg = Pg::parse(url)?;
    let mut client = pg.connect("export")?;
    let known = client
        .query_opt("SELECT 1 FROM agentloop_runs WHERE run_id = $1", &[&run])
        .map_err(|e| pg.query_error(&e))?;
    if known.is_none() {
        return Err(StoreError::NoRun {
            run: run.to_string(),
            at: pg.shown.clone(),
        });
    }
    let rows = client
        .query(
            "SELECT line FROM agentloop_events WHERE run_id = $1 ORDER BY seq",
            &[&run],
        )
        .map_err(|e| pg.query_error(&e))?;
    let mut out = String::new();
    for r in rows {
        out.push_str(r.get::<_, &str>(0));
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_its_password() {
        assert_eq!(
            hide_password("postgres://agent:s3cret@db.example:5432/runs"),
            "postgres://agent:***@db.example:5432/runs"
        );
        assert_eq!(
            hide_password("postgres://db.example/runs"),
            "postgres://db.example/runs"
        );
        assert!(!hide_password("host=x password=y").contains('y'));
    }

    #[test]
    fn lock_keys_differ_by_kind_and_run() {
        assert_ne!(lock_key("driver", "r1"), lock_key("append", "r1"));
        assert_ne!(lock_key("driver", "r1"), lock_key("driver", "r2"));
        assert!(lock_key("driver", "r1") >= 0);
    }
}
