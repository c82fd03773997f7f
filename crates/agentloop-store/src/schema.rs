//! agentloop's tables, versioned: `agentloop store migrate` brings a database to
//! [`SCHEMA`], one step at a time, each in a transaction under a lock (two migrations
//! at once wait for each other); a database newer than this agentloop is left alone.

use crate::{Pg, StoreError};

/// The schema this agentloop reads and writes.
pub const SCHEMA: i32 = 1;

/// Each version's statements, in order: version N is `STEPS[N - 1]`.
const STEPS: &[&str] = &["
CREATE TABLE agentloop_runs (
    run_id     text PRIMARY KEY,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE agentloop_events (
    run_id text   NOT NULL REFERENCES agentloop_runs (run_id),
    seq    bigint NOT NULL CHECK (seq > 0),
    -- The sealed line, exactly as in the file journal (without its newline).
    line   text   NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"];

/// The version of agentloop's schema in the database (0: none yet).
pub fn version(client: &mut postgres::Client) -> Result<i32, postgres::Error> {
    let exists: bool = client
        .query_one("SELECT to_regclass('agentloop_schema') IS NOT NULL", &[])?
        .get(0);
    if !exists {
        return Ok(0);
    }
    Ok(client
        .query_opt("SELECT version FROM agentloop_schema", &[])?
        .map(|r| r.get(0))
        .unwrap_or(0))
}

/// Brings the database to [`SCHEMA`]; the versions it was at and is at now.
pub fn migrate(url: &str) -> Result<(i32, i32), StoreError> {
    let pg = Pg::parse(url)?;
    let mut client = pg.connect("migrate")?;
    let err = |e: postgres::Error| pg.query_error(&e);
    let mut tx = client.transaction().map_err(err)?;
    tx.execute(
        "SELECT pg_advisory_xact_lock($1)",
        &[&crate::lock_key("migrate", "")],
    )
    .map_err(err)?;
    tx.batch_execute("CREATE TABLE IF NOT EXISTS agentloop_schema (version integer NOT NULL)")
        .map_err(err)?;
    let before: i32 = tx
        .query_opt("SELECT version FROM agentloop_schema", &[])
        .map_err(err)?
        .map(|r| r.get(0))
        .unwrap_or(0);
    if before > SCHEMA {
        return Err(StoreError::Query {
            at: pg.shown().to_string(),
            message: format!(
                "the database has agentloop's schema {before}, newer than this agentloop's ({SCHEMA}): use a newer agentloop"
            ),
        });
    }
    for step in &STEPS[before as usize..] {
        tx.batch_execute(step).map_err(err)?;
    }
    tx.execute("DELETE FROM agentloop_schema", &[])
        .map_err(err)?;
    tx.execute(
        "INSERT INTO agentloop_schema (version) VALUES ($1)",
        &[&SCHEMA],
    )
    .map_err(err)?;
    tx.commit().map_err(err)?;
    Ok((before, SCHEMA))
}
