//! The merge queue at scale, in simulated time: a plan of independent tasks (`PER` per
//! worker) on 8 to 128 simulated workers, timed like real work (agents of 30 s to 10
//! min, checks of 20 s to 2 min, 15% of attempts failing, 10% conflicting, and 0% or
//! 5% red only once merged), through the policy and journal a real driver uses. Prints, per count
//! of workers and size of batch: throughput as a share of the ideal (agents' and
//! checks' time over the workers), the median and 90th percentile wait from a task's
//! verification to its merge, and the driver's own time per journal record and as a
//! share of one core over the run.
//!
//! `cargo bench -p agentloop --bench scale` (env `WORKERS`, default "8,32,64,128";
//! `BATCH`, default "1,8,16,32"; `PER`, tasks per worker, default 8; `BISECT`, the
//! prefixes a red batch's bisection checks at once, default 1; `RED`, the percent of attempts red only once merged,
//! default "0,5"; `SEED`, default 7)

#[path = "common/mod.rs"]
mod common;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let seed = common::env_usize("SEED", 7) as u64;
    let per = common::env_usize("PER", 8);
    let bisect = common::env_usize("BISECT", 1) as u32;
    println!(
        "scale: simulated workers, {per} tasks each, a red batch bisected {bisect} prefixes at a time, seed {seed}"
    );
    for red in common::env_list::<u32>("RED", "0,5") {
        for workers in common::env_list::<u32>("WORKERS", "8,32,64,128") {
            for batch in common::env_list::<u32>("BATCH", "1,8,16,32") {
                let tasks = workers as usize * per;
                let r =
                    agentloop_testkit::sim::scale(seed, tasks, workers, batch, red.into(), bisect)
                        .unwrap();
                println!(
                    "  red {red}%, {workers:>3} workers, batch {batch:>2}: {:>3.0}% of the ideal ({:.1} h for {:.1} h), queue wait p50 {:.0} s p90 {:.0} s, {} of {tasks} done, driver {:.0} µs per record ({:.3}% of a core)",
                    r.share() * 100.0,
                    r.elapsed_ms as f64 / 3.6e6,
                    r.ideal_ms as f64 / 3.6e6,
                    r.queue_p50_ms as f64 / 1000.0,
                    r.queue_p90_ms as f64 / 1000.0,
                    r.done,
                    r.driver_us_per_record(),
                    r.driver_core_share() * 100.0,
                );
            }
        }
    }
}
