//! The scale report: a plan of many independent tasks on 8 to 128 simulated workers,
//! timed like real work ([`Profile::Scale`](super::Profile::Scale)), through the
//! policy and journal a real driver uses. What it measures: throughput as a share of
//! the ideal (the agents' and checks' time over the workers), how long verified work
//! waits in the merge queue, and the driver's own CPU per journal record.

use std::collections::BTreeMap;
use std::time::Instant;

use agentloop_journal::Event;

use super::{Faults, Scenario, run, sound};

/// One scale run's figures.
#[derive(Debug, Clone)]
pub struct Scaled {
    pub tasks: usize,
    pub workers: u32,
    pub batch: u32,
    /// Simulated time from start to end.
    pub elapsed_ms: u64,
    /// The agents' and checks' time over the workers: no run can be shorter.
    pub ideal_ms: u64,
    /// From a task's verification to its merge onto the integration branch, median
    /// and 90th percentile.
    pub queue_p50_ms: u64,
    pub queue_p90_ms: u64,
    /// Journal records (each a decision or a result the driver took in).
    pub records: usize,
    /// This machine's time to drive the whole run (policy, journal encoding, fold).
    pub driver_ms: f64,
    pub done: usize,
    /// How the run ended (`completed`, or why not).
    pub ended: String,
}

impl Scaled {
    /// Throughput as a share of the ideal.
    pub fn share(&self) -> f64 {
        self.ideal_ms as f64 / self.elapsed_ms.max(1) as f64
    }

    /// The driver's own time per record, in microseconds.
    pub fn driver_us_per_record(&self) -> f64 {
        self.driver_ms * 1000.0 / self.records.max(1) as f64
    }

    /// The driver's share of one core over the simulated run.
    pub fn driver_core_share(&self) -> f64 {
        self.driver_ms / self.elapsed_ms.max(1) as f64
    }
}

/// Runs `tasks` tasks on `workers` workers with batches of `batch`, `red` percent of
/// attempts red only once merged, without faults.
pub fn scale(
    seed: u64,
    tasks: usize,
    workers: u32,
    batch: u32,
    red: u64,
    bisect: u32,
) -> Result<Scaled, String> {
    let sc = Scenario::scale(seed, tasks, workers, batch, red, bisect);
    let t = Instant::now();
    let r = run(&sc, &Faults::default());
    let driver_ms = t.elapsed().as_secs_f64() * 1000.0;
    let ending = sound(&r).map_err(|e| format!("seed {seed}: {e}"))?;
    let c = super::read_back(&r.journal)?;
    let mut verified: BTreeMap<u32, u64> = BTreeMap::new();
    let mut waits = Vec::new();
    for rec in &c.records {
        match &rec.event {
            Event::VerifyFinished(v) if v.passed => {
                verified.insert(v.iteration, rec.time_ms());
            }
            Event::Merged { iteration, .. } => {
                if let Some(at) = verified.get(iteration) {
                    waits.push(rec.time_ms().saturating_sub(*at));
                }
            }
            _ => {}
        }
    }
    waits.sort_unstable();
    let pct = |p: usize| waits.get(waits.len() * p / 100).copied().unwrap_or(0);
    Ok(Scaled {
        tasks,
        workers,
        batch,
        elapsed_ms: r.elapsed_ms,
        ideal_ms: r.work_ms / u64::from(workers.max(1)),
        queue_p50_ms: pct(50),
        queue_p90_ms: pct(90),
        records: c.records.len(),
        driver_ms,
        done: ending.done_count(),
        ended: format!("{:?} {:?}", r.state.status, r.state.finished),
    })
}

/// The journal of a scale run of `tasks` tasks on `workers` workers, cut just after
/// the record at which the most iterations were in progress at once: a run as the
/// views show it at its busiest. With how many iterations were in progress there.
pub fn busiest(seed: u64, tasks: usize, workers: u32, batch: u32) -> (Vec<u8>, usize) {
    let sc = Scenario::scale(seed, tasks, workers, batch, 0, 1);
    let r = run(&sc, &Faults::default());
    let (mut open, mut best, mut end, mut at) = (0usize, 0usize, 0usize, 0usize);
    for line in r.journal.split_inclusive(|b| *b == b'\n') {
        at += line.len();
        let kind = serde_json::from_slice::<serde_json::Value>(line)
            .ok()
            .and_then(|v| v["kind"].as_str().map(str::to_string))
            .unwrap_or_default();
        match kind.as_str() {
            "iteration_started" => open += 1,
            "iteration_finished" => open = open.saturating_sub(1),
            _ => {}
        }
        if open > best {
            (best, end) = (open, at);
        }
    }
    (r.journal[..end].to_vec(), best)
}
