//! One run's journal in PostgreSQL, and the lock of its one driver.

use std::sync::{Arc, Mutex, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use agentloop_journal::shared::{DriverHold, HoldRefused, Put, SharedJournal};
use postgres::Client;

use crate::{Pg, lock_key, source_text, within};

/// How long a broken connection is tried again before an append fails.
const RETRY_FOR: Duration = Duration::from_secs(30);

/// A run's journal in the store. Each exchange runs on a thread of its own and is
/// waited for at most `[store] timeout` ([`crate::ANSWER_WITHIN`] by default): a store that does not answer by then is an
/// error, and the connection it holds is left behind (a new one serves the next).
pub struct PgJournal {
    pg: Pg,
    run: String,
    conn: Arc<Mutex<Conn>>,
}

impl std::fmt::Debug for PgJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "run {} in {:?}", self.run, self.pg)
    }
}

/// The connection of a journal, made when it is first needed.
struct Conn {
    pg: Pg,
    run: String,
    client: Option<ClientBox>,
}

/// A connection (postgres's `Client` has no `Debug`).
struct ClientBox(Client);

impl std::fmt::Debug for ClientBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a PostgreSQL connection")
    }
}

/// Whether `e` says the connection (not the statement) failed: worth a new connection
/// and another try.
fn broken(e: &postgres::Error) -> bool {
    match e.as_db_error() {
        // 08: connection exception; 57P01–57P03: the server shut the session down.
        Some(db) => {
            let code = db.code().code();
            code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
        }
        None => true,
    }
}

impl PgJournal {
    /// The journal of `run`; nothing connects until it is first used.
    pub fn open(pg: Pg, run: &str) -> PgJournal {
        let conn = Conn {
            pg: pg.clone(),
            run: run.to_string(),
            client: None,
        };
        PgJournal {
            pg,
            run: run.to_string(),
            conn: Arc::new(Mutex::new(conn)),
        }
    }

    /// Runs `f` on the journal's connection, within `[store] timeout`.
    fn call<T: Send + 'static>(
        &mut self,
        f: impl FnOnce(&mut Conn) -> Result<T, String> + Send + 'static,
    ) -> Result<T, String> {
        let conn = self.conn.clone();
        let answer = within(crate::answer_within(), self.pg.shown(), move || {
            let mut c = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut c)
        });
        match answer {
            Ok(r) => r,
            Err(e) => {
                // The thread still waits on the old connection: a new one for the
                // next exchange.
                self.conn = Arc::new(Mutex::new(Conn {
                    pg: self.pg.clone(),
                    run: self.run.clone(),
                    client: None,
                }));
                Err(e.to_string())
            }
        }
    }
}

impl Conn {
    /// Runs `f` on a working connection, opening a new one and trying again while
    /// the connection is what fails, for up to [`RETRY_FOR`].
    fn retry<T>(
        &mut self,
        mut f: impl FnMut(&mut Client, &str) -> Result<T, postgres::Error>,
    ) -> Result<T, String> {
        let started = Instant::now();
        let mut pause = Duration::from_millis(50);
        loop {
            let client = match self.client.as_mut() {
                Some(c) if !c.0.is_closed() => c,
                _ => match self.pg.connect(&format!("journal {}", self.run)) {
                    Ok(c) => self.client.insert(ClientBox(c)),
                    Err(e) if started.elapsed() < RETRY_FOR => {
                        let _ = e;
                        std::thread::sleep(pause);
                        pause = (pause * 2).min(Duration::from_secs(2));
                        continue;
                    }
                    Err(e) => return Err(e.to_string()),
                },
            };
            match f(&mut client.0, &self.run) {
                Ok(v) => return Ok(v),
                Err(e) if broken(&e) && started.elapsed() < RETRY_FOR => {
                    self.client = None;
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
                Err(e) => return Err(source_text(&e)),
            }
        }
    }
}

impl Drop for PgJournal {
    fn drop(&mut self) {
        // Closing the connection blocks too (on a stopped server, for good): off this
        // thread, and not waited for.
        let conn = std::mem::replace(
            &mut self.conn,
            Arc::new(Mutex::new(Conn {
                pg: self.pg.clone(),
                run: String::new(),
                client: None,
            })),
        );
        let _ = std::thread::Builder::new()
            .name("agentloop-store-close".into())
            .spawn(move || drop(conn));
    }
}

fn notify(tx: &mut postgres::Transaction<'_>, run: &str, seq: i64) -> Result<(), postgres::Error> {
    tx.execute(
        "SELECT pg_notify('agentloop_events', $1)",
        &[&format!("{run} {seq}")],
    )
    .map(drop)
}

/// The lines from `seq` on.
fn lines_since(
    client: &mut impl postgres::GenericClient,
    run: &str,
    seq: i64,
) -> Result<Vec<String>, postgres::Error> {
    Ok(client
        .query(
            "SELECT line FROM agentloop_events WHERE run_id = $1 AND seq >= $2 ORDER BY seq",
            &[&run, &seq],
        )?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// What an append found under the run's lock.
enum Found {
    Put(Put),
    /// The store lacks records the file has.
    Gap(i64),
}

impl SharedJournal for PgJournal {
    fn create(&mut self, first: &str) -> Result<(), String> {
        let first = first.to_string();
        self.call(move |c| c.create_blocking(&first))
    }

    fn append(&mut self, seq: u64, line: &str) -> Result<Put, String> {
        let line = line.to_string();
        self.call(move |c| c.append_blocking(seq, &line))
    }

    fn since(&mut self, seq: u64) -> Result<Vec<String>, String> {
        let seq = seq as i64;
        self.call(move |c| c.retry(|client, run| lines_since(client, run, seq)))
    }
}

impl Conn {
    fn create_blocking(&mut self, first: &str) -> Result<(), String> {
        let made = self.retry(|client, run| {
            let mut tx = client.transaction()?;
            let new = tx.execute(
                "INSERT INTO agentloop_runs (run_id) VALUES ($1) ON CONFLICT DO NOTHING",
                &[&run],
            )?;
            if new == 0 {
                // Made by a try whose answer was lost, or another run of that name.
                let line: Option<String> = tx
                    .query_opt(
                        "SELECT line FROM agentloop_events WHERE run_id = $1 AND seq = 1",
                        &[&run],
                    )?
                    .map(|r| r.get(0));
                return Ok(line.as_deref() == Some(first));
            }
            tx.execute(
                "INSERT INTO agentloop_events (run_id, seq, line) VALUES ($1, 1, $2)",
                &[&run, &first],
            )?;
            notify(&mut tx, run, 1)?;
            tx.commit()?;
            Ok(true)
        })?;
        if made {
            Ok(())
        } else {
            Err(format!("a run named {} is in the store already", self.run))
        }
    }

    fn append_blocking(&mut self, seq: u64, line: &str) -> Result<Put, String> {
        let seq = seq as i64;
        let key = lock_key("append", &self.run);
        let found = self.retry(|client, run| {
            let mut tx = client.transaction()?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&key])?;
            let last: i64 = tx
                .query_one(
                    "SELECT coalesce(max(seq), 0) FROM agentloop_events WHERE run_id = $1",
                    &[&run],
                )?
                .get(0);
            if last >= seq {
                let there = lines_since(&mut tx, run, seq)?;
                // This very line: an earlier try committed, and its answer was lost.
                if there.first().map(String::as_str) == Some(line) {
                    return Ok(Found::Put(Put::Appended));
                }
                return Ok(Found::Put(Put::Behind(there)));
            }
            if last < seq - 1 {
                return Ok(Found::Gap(last));
            }
            tx.execute(
                "INSERT INTO agentloop_events (run_id, seq, line) VALUES ($1, $2, $3)",
                &[&run, &seq, &line],
            )?;
            notify(&mut tx, run, seq)?;
            tx.commit()?;
            Ok(Found::Put(Put::Appended))
        })?;
        match found {
            Found::Put(p) => Ok(p),
            Found::Gap(last) => Err(format!(
                "it has {last} records of run {} and the file {}: the run was not made with this store (a run keeps the store it was made with)",
                self.run,
                seq - 1
            )),
        }
    }
}

/// The driver lock of a run, held for the session of a connection of its own. A
/// thread keeps the connection alive; when it breaks, the lock goes with it, and the
/// thread takes it again on a new connection. If another driver took it meanwhile,
/// this process stops: two drivers never write one run.
pub struct Hold {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl DriverHold for Hold {}

fn try_lock(client: &mut Client, key: i64) -> Result<bool, postgres::Error> {
    Ok(client
        .query_one("SELECT pg_try_advisory_lock($1)", &[&key])?
        .get(0))
}

/// Who holds the lock `key`, as `pg_stat_activity` names them.
pub(crate) fn holder(client: &mut Client, key: i64) -> Option<String> {
    let (hi, lo) = ((key >> 32) as u32, key as u32);
    client
        .query_opt(
            "SELECT a.application_name, coalesce(host(a.client_addr), 'this machine')
               FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
              WHERE l.locktype = 'advisory' AND l.granted
                AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1",
            &[&hi, &lo],
        )
        .ok()
        .flatten()
        .map(|r| format!("{} from {}", r.get::<_, String>(0), r.get::<_, String>(1)))
}

impl Hold {
    pub fn take(pg: Pg, run: &str) -> Result<Hold, HoldRefused> {
        let what = format!("driver {run}");
        let key = lock_key("driver", run);
        let client = {
            let (at, pg, what) = (pg.shown().to_string(), pg.clone(), what.clone());
            within(crate::answer_within(), &at, move || {
                let mut client = pg
                    .connect(&what)
                    .map_err(|e| HoldRefused::Unreachable(e.to_string()))?;
                let free = try_lock(&mut client, key)
                    .map_err(|e| HoldRefused::Unreachable(pg.query_error(&e).to_string()))?;
                if !free {
                    return Err(HoldRefused::Taken(format!(
                        "another driver holds it in {} ({})",
                        pg.shown(),
                        holder(&mut client, key)
                            .unwrap_or_else(|| "a session that just ended".into())
                    )));
                }
                Ok(ClientBox(client))
            })
            .map_err(|e| HoldRefused::Unreachable(e.to_string()))??
            .0
        };
        let (stop, stopped) = mpsc::channel();
        let run = run.to_string();
        let thread = std::thread::spawn(move || {
            let mut client = Some(client);
            loop {
                match stopped.recv_timeout(Duration::from_secs(1)) {
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
                let alive = client
                    .as_mut()
                    .is_some_and(|c| !c.is_closed() && c.simple_query("SELECT 1").is_ok());
                if alive {
                    continue;
                }
                client = None;
                let Ok(mut c) = pg.connect(&what) else {
                    // The server is away; the driver's appends wait for it too.
                    continue;
                };
                match try_lock(&mut c, key) {
                    Ok(true) => client = Some(c),
                    Ok(false) => {
                        eprintln!(
                            "agentloop: the connection that held run {run} for this driver broke, and another driver took the run meanwhile ({}): this driver stops",
                            holder(&mut c, key).unwrap_or_default()
                        );
                        std::process::exit(1);
                    }
                    Err(_) => {}
                }
            }
        });
        Ok(Hold {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        drop(self.stop.take());
        // The thread ends within a second of being told, unless it is in a call to a
        // server that does not answer: then it is not waited for.
        if let Some(t) = self.thread.take() {
            let deadline = Instant::now() + Duration::from_secs(3);
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}
