//! Live updates: `LISTEN agentloop_events`, each notification naming the run that
//! grew. A listener that loses its connection opens a new one and reports every run
//! as changed (what was notified meanwhile is lost, so everything is looked at).

use std::time::Duration;

use postgres::fallible_iterator::FallibleIterator;

use crate::{Pg, StoreError};

/// A connection that listens for runs that grow.
pub struct Listener {
    pg: Pg,
    client: Option<postgres::Client>,
}

impl Listener {
    pub fn open(url: &str) -> Result<Listener, StoreError> {
        let pg = Pg::parse(url)?;
        let mut l = Listener { pg, client: None };
        l.connect()?;
        Ok(l)
    }

    fn connect(&mut self) -> Result<(), StoreError> {
        let mut client = self.pg.connect("listen")?;
        client
            .batch_execute("LISTEN agentloop_events")
            .map_err(|e| self.pg.query_error(&e))?;
        self.client = Some(client);
        Ok(())
    }

    /// The runs that grew within `wait`, each once; `None` for "any run may have
    /// grown" (the connection was opened again).
    pub fn next(&mut self, wait: Duration) -> Option<Vec<String>> {
        let Some(client) = self.client.as_mut().filter(|c| !c.is_closed()) else {
            std::thread::sleep(wait.min(Duration::from_secs(1)));
            return match self.connect() {
                Ok(()) => None,
                Err(_) => Some(Vec::new()),
            };
        };
        match drain(client, wait) {
            Ok(runs) => Some(runs),
            Err(()) => {
                self.client = None;
                None
            }
        }
    }
}

/// The runs notified within `wait` (and whatever else came with the first); `Err`
/// when the connection broke.
fn drain(client: &mut postgres::Client, wait: Duration) -> Result<Vec<String>, ()> {
    let mut runs: Vec<String> = Vec::new();
    let mut add = |n: postgres::Notification| {
        let run = n.payload().split(' ').next().unwrap_or("").to_string();
        if !runs.contains(&run) {
            runs.push(run);
        }
    };
    let mut notes = client.notifications();
    match notes.timeout_iter(wait).next() {
        Ok(Some(n)) => add(n),
        Ok(None) => {}
        Err(_) => return Err(()),
    }
    // Whatever else is there already, without waiting again.
    let mut rest = notes.iter();
    while let Ok(Some(n)) = rest.next() {
        add(n);
    }
    Ok(runs)
}

/// Calls `changed` with each run that grows (all of the store's runs first, and
/// again after a lost connection), until it returns `false`.
pub fn follow_runs(url: &str, mut changed: impl FnMut(&str) -> bool) -> Result<(), StoreError> {
    let mut listener = Listener::open(url)?;
    let mut all = true;
    loop {
        if all {
            for run in crate::runs(url).unwrap_or_default() {
                if !changed(&run) {
                    return Ok(());
                }
            }
        }
        match listener.next(Duration::from_millis(500)) {
            None => all = true,
            Some(runs) => {
                all = false;
                for run in runs {
                    if !changed(&run) {
                        return Ok(());
                    }
                }
            }
        }
    }
}
