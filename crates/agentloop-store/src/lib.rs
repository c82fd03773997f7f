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

use agentloop_journal::shared::{DriverHold, HoldRefused, SharedJournal, SharedStore};

pub use listen::{Listener, follow_runs};
pub use schema::{SCHEMA, migrate, version};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Url(String),
    #[error("cannot reach PostgreSQL at {at}: {message}")]
    Connect { at: String, message: String },
    #[error(
        "PostgreSQL at {at} did not answer within {secs} s (the server is stopped, overloaded, or cut off)"
    )]
    Frozen { at: String, secs: u64 },
    #[error("PostgreSQL at {at}: {message}")]
    Query { at: String, message: String },
    #[error(
        "the database at {at} has agentloop's schema {found}, and this agentloop needs {SCHEMA}: run `agentloop store migrate`"
    )]
    Schema { at: String, found: i32 },
    #[error("no run {run} in the store at {at}")]
    NoRun { run: String, at: String },
}

impl StoreError {
    /// The error without the key it is about (for a message that names the key and
    /// where it was set).
    pub fn reason(&self) -> String {
        let text = self.to_string();
        text.strip_prefix("[store] url: ")
            .unwrap_or(&text)
            .to_string()
    }
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
        let config = postgres::Config::from_str(url).map_err(|e| {
            // postgres says "invalid connection string" and keeps the why below it.
            let mut why = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                why.push_str(": ");
                why.push_str(&c.to_string());
                cause = c.source();
            }
            StoreError::Url(format!("[store] url: {why}"))
        })?;
        let mut config = config;
        // A server that does not take the connection, or a peer the network lost
        // (TCP keepalives, every 5 s after 10 s of quiet, 3 missed: gone).
        config.connect_timeout(Duration::from_secs(10));
        config.keepalives(true);
        config.keepalives_idle(Duration::from_secs(10));
        config.keepalives_interval(Duration::from_secs(5));
        config.keepalives_retries(3);
        Ok(Pg {
            shown: hide_password(url),
            config,
        })
    }

    /// A new connection, named `what` in `pg_stat_activity`.
    pub fn connect(&self, what: &str) -> Result<postgres::Client, StoreError> {
        let mut config = self.config.clone();
        config.application_name(&format!("agentloop {what} pid {}", std::process::id()));
        config.connect(postgres::NoTls).map_err(|e| {
            // The server answered and refused what the URL names (a database that is not
            // there, a user or password it does not take): the URL's to mend, not a
            // service down.
            let refused = e.as_db_error().filter(|d| {
                matches!(d.code().code(), "3D000" | "28000" | "28P01")
            });
            match refused {
                Some(d) => StoreError::Url(format!(
                    "[store] url: the server at {} refuses it: {} ({}): create the database or name one it has, with a user it takes",
                    self.shown,
                    d.message(),
                    d.code().code()
                )),
                None => StoreError::Connect {
                    at: self.shown.clone(),
                    message: source_text(&e),
                },
            }
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

/// How long one exchange with the store may take by default, reconnections included.
/// A server that is stopped, or a network that drops everything, keeps the connection
/// open and answers nothing: no timeout of the client's own ends that wait.
pub const ANSWER_WITHIN: Duration = Duration::from_secs(45);

/// `[store] timeout`, in milliseconds, for this process.
static ANSWER_MS: std::sync::atomic::AtomicU64 =
    std::sync::atomic::AtomicU64::new(ANSWER_WITHIN.as_millis() as u64);

/// Sets how long one exchange with the store may take in this process (`[store]
/// timeout`): for commands that use the store without installing it.
pub fn answer_within_set(limit: Duration) {
    ANSWER_MS.store(
        limit.as_millis().max(1) as u64,
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// How long one exchange with the store may take in this process.
pub(crate) fn answer_within() -> Duration {
    Duration::from_millis(ANSWER_MS.load(std::sync::atomic::Ordering::Relaxed))
}

/// When an exchange with the store last went unanswered in this process, and how
/// many seconds it was given.
static UNANSWERED: std::sync::Mutex<Option<(std::time::Instant, u64)>> =
    std::sync::Mutex::new(None);

/// Runs `f`, which blocks on the database, on a thread of its own (off any async
/// runtime the caller is on: postgres's synchronous client runs a runtime of its own,
/// which cannot be started inside another) and waits for it at most `limit`. After
/// that the store is taken for frozen; the thread is left to end when the server
/// answers or the connection dies.
pub(crate) fn within<T: Send + 'static>(
    limit: Duration,
    at: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, StoreError> {
    // An exchange the store just left unanswered: the next ones, for as long as
    // that one was given, are not waited for in turn (each step of a `resume` while
    // the store was frozen waited its full time: 17 s to say so, with a 3 s timeout).
    let unanswered = *UNANSWERED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((when, secs)) = unanswered
        && when.elapsed() < limit.min(Duration::from_secs(secs.max(1)))
    {
        return Err(StoreError::Frozen {
            at: at.to_string(),
            secs,
        });
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name("agentloop-store".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| StoreError::Connect {
            at: at.to_string(),
            message: format!("cannot start a thread: {e}"),
        })?;
    match rx.recv_timeout(limit) {
        Ok(v) => Ok(v),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
            *UNANSWERED.lock().unwrap_or_else(|e| e.into_inner()) =
                Some((std::time::Instant::now(), limit.as_secs()));
            Err(StoreError::Frozen {
                at: at.to_string(),
                secs: limit.as_secs(),
            })
        }
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(StoreError::Connect {
            at: at.to_string(),
            message: "the store's client stopped".into(),
        }),
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
    checked: std::sync::Mutex<Option<Result<(), Unusable>>>,
}

/// Why a store cannot be used.
#[derive(Debug, Clone)]
enum Unusable {
    /// It did not answer, or could not be reached.
    Unreachable(String),
    /// The server answered and refused what `[store] url` names: a setting to mend.
    Refused(String),
    /// Its database has another schema than this agentloop's.
    Schema(String),
}

impl Unusable {
    fn why(&self) -> &str {
        match self {
            Unusable::Unreachable(w) | Unusable::Refused(w) | Unusable::Schema(w) => w,
        }
    }
}

impl PgStore {
    pub fn new(url: &str) -> Result<PgStore, StoreError> {
        Ok(PgStore {
            pg: Pg::parse(url)?,
            checked: std::sync::Mutex::new(None),
        })
    }

    /// How long one exchange with the store may take (`[store] timeout`), for the
    /// rest of the process.
    pub fn timeout(self, limit: Duration) -> PgStore {
        answer_within_set(limit);
        self
    }

    /// Installs it for the rest of the process.
    pub fn install(self) {
        agentloop_journal::shared::install(Arc::new(self));
    }

    /// Whether the store can be used, asked once per process while the answer holds:
    /// a store that did not answer (a session ended under it, a failover) is asked
    /// again the next time, not taken for gone for the rest of the process (a store
    /// that just left an exchange unanswered is not waited for again: [`within`]).
    fn check(&self) -> Result<(), Unusable> {
        let mut checked = self.checked.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(answer) = checked.as_ref() {
            return answer.clone();
        }
        let answer = {
            let pg = self.pg.clone();
            within(answer_within(), &self.pg.shown, move || {
                let mut client = pg.connect("check").map_err(|e| match e {
                    StoreError::Url(why) => Unusable::Refused(why),
                    e => Unusable::Unreachable(e.to_string()),
                })?;
                let found = schema::version(&mut client)
                    .map_err(|e| Unusable::Unreachable(pg.query_error(&e).to_string()));
                drop(client);
                let found = found?;
                if found != SCHEMA {
                    return Err(Unusable::Schema(
                        StoreError::Schema {
                            at: pg.shown.clone(),
                            found,
                        }
                        .to_string(),
                    ));
                }
                Ok(())
            })
            .map_err(|e| Unusable::Unreachable(e.to_string()))?
        };
        if !matches!(answer, Err(Unusable::Unreachable(_))) {
            *checked = Some(answer.clone());
        }
        answer
    }
}

impl SharedStore for PgStore {
    fn journal(&self, run: &str) -> Result<Box<dyn SharedJournal>, String> {
        self.check().map_err(|u| u.why().to_string())?;
        Ok(Box::new(journal::PgJournal::open(self.pg.clone(), run)))
    }

    fn hold_driver(&self, run: &str) -> Result<Box<dyn DriverHold>, HoldRefused> {
        self.check().map_err(|u| match u {
            Unusable::Unreachable(why) => HoldRefused::Unreachable(why),
            Unusable::Refused(why) | Unusable::Schema(why) => HoldRefused::Taken(why),
        })?;
        journal::Hold::take(self.pg.clone(), run).map(|h| Box::new(h) as Box<dyn DriverHold>)
    }

    fn driver_of(&self, run: &str) -> Option<String> {
        let (pg, run) = (self.pg.clone(), run.to_string());
        // Asked by `status` and the like: a store that does not answer soon says
        // nothing.
        within(Duration::from_secs(5), &self.pg.shown, move || {
            let mut client = pg.connect("look").ok()?;
            let who = journal::holder(&mut client, lock_key("driver", &run))?;
            // `agentloop driver RUN pid N from ADDR` → `N on ADDR`.
            Some(match who.split_once(" pid ") {
                Some((_, rest)) => rest.replacen(" from ", " on ", 1),
                None => who,
            })
        })
        .ok()
        .flatten()
    }

    fn refused(&self) -> Option<String> {
        match self.check() {
            Err(Unusable::Refused(why)) => Some(why),
            _ => None,
        }
    }

    fn describe(&self) -> String {
        format!("PostgreSQL at {}", self.pg.shown)
    }
}

/// The runs in the store, oldest first.
pub fn runs(url: &str) -> Result<Vec<String>, StoreError> {
    let pg = Pg::parse(url)?;
    let at = pg.shown.clone();
    within(answer_within(), &at, move || runs_now(&pg))?
}

fn runs_now(pg: &Pg) -> Result<Vec<String>, StoreError> {
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
    let (at, run) = (pg.shown.clone(), run.to_string());
    within(answer_within(), &at, move || export_now(&pg, &run))?
}

fn export_now(pg: &Pg, run: &str) -> Result<String, StoreError> {
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
