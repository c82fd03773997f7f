//! `agentloop log`: the journal, one event per line, optionally followed.

use std::time::Duration;

use agentloop_journal::Event;
use agentloop_journal::{self as journal, Record};
use agentloop_workspace::Workspace;

use crate::cli::LogArgs;
use crate::error::{CliError, ExitKind};

pub fn log(ws: &Workspace, args: LogArgs) -> Result<ExitKind, CliError> {
    let run = ws.resolve(args.run.get())?;
    let mut finished = false;
    let mut printed = Ok(());
    let c = journal::scan(&run.journal(), 0, 1, |r| {
        if printed.is_ok() {
            printed = print_record(&r, args.json);
        }
        finished = matches!(r.event, Event::RunFinished { .. });
    })?;
    printed?;
    let mut offset = c.valid_len;
    let mut next = c.count + 1;
    while args.follow && !(finished && run.lock_holder().is_none()) {
        std::thread::sleep(Duration::from_millis(200));
        let more = journal::read_from(&run.journal(), offset, next)?;
        for r in &more.records {
            print_record(r, args.json)?;
            finished = matches!(r.event, Event::RunFinished { .. });
        }
        offset = more.valid_len;
        next += more.records.len() as u64;
    }
    Ok(ExitKind::Completed)
}

fn print_record(r: &Record, as_json: bool) -> Result<(), CliError> {
    if as_json {
        let line = serde_json::json!({ "seq": r.seq, "time": r.time, "event": r.event });
        outln!("{line}");
        return Ok(());
    }
    let time = r.time.get(11..19).unwrap_or(&r.time);
    outln!(
        "{:>5} {time} {:18} {}",
        r.seq,
        r.event.kind(),
        crate::describe::event(&r.event)
    );
    Ok(())
}
