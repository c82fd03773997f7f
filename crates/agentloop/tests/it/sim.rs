//! The deterministic simulation (agentloop-testkit's `sim`): whole runs drawn from
//! seeds, each run once without faults and once with its driver killed between
//! effects, in simulated time. A failure names its seed; replay it with
//! `AGENTLOOP_SIM_SEED=N scripts/test -E 'test(sim::replay)' --no-capture`.

use agentloop_testkit::sim::{self, Faults, Scenario};

fn seeds(default: std::ops::Range<u64>) -> std::ops::Range<u64> {
    // `AGENTLOOP_SIM_SEEDS=1000..50000` widens a local search.
    std::env::var("AGENTLOOP_SIM_SEEDS")
        .ok()
        .and_then(|v| {
            let (a, b) = v.split_once("..")?;
            Some(a.parse().ok()?..b.parse().ok()?)
        })
        .unwrap_or(default)
}

fn failures(results: Vec<Result<(), String>>) -> Vec<String> {
    results.into_iter().filter_map(Result::err).collect()
}

#[test]
fn a_thousand_seeded_runs_with_faults_end_as_they_would_without() {
    let range = seeds(0..1000);
    let n = range.end - range.start;
    let (mut kills, mut workers, mut gates, mut merges) = (0u64, 0u64, 0u64, 0u64);
    let (mut planned, mut asked) = (0u64, 0u64);
    let (mut shipped, mut landed, mut tracked, mut moments) = (0u64, 0u64, 0u64, 0u64);
    let mut whole = 0u64;
    let mut results = Vec::new();
    for seed in range {
        results.push(sim::check(seed).map(|seen| {
            kills += u64::from(seen.drivers - 1);
            workers += u64::from(seen.workers > 1);
            gates += seen.gates as u64;
            merges += seen.merges as u64;
            planned += u64::from(seen.planned > 0);
            asked += u64::from(seen.asked > 0);
            shipped += u64::from(seen.prs > 0);
            landed += u64::from(seen.prs_merged > 0);
            tracked += u64::from(seen.issues > 0);
            moments += u64::from(seen.at_moments);
            whole += u64::from(seen.compared == sim::Compared::Whole);
        }));
    }
    let failed = failures(results);
    eprintln!(
        "{n} runs: {kills} kills, {workers} with workers, {gates} gates, {merges} merges, {planned} planned, {asked} asked, {shipped} shipped, {landed} merged on the forge, {tracked} told a tracker, {moments} asked at random moments, {whole} compared whole"
    );
    assert!(
        failed.is_empty(),
        "{} of {n} seeds end otherwise with faults; the first:\n{}",
        failed.len(),
        failed[..failed.len().min(3)].join("\n\n")
    );
    // The scenarios are not all alike: most are killed, many have workers, gates and
    // merges.
    assert!(kills >= n, "{kills} kills in {n} runs");
    assert!(workers >= n / 3, "{workers} of {n} runs had workers");
    assert!(gates >= n && merges >= n, "{gates} gates, {merges} merges");
    assert!(
        planned >= n / 8,
        "planners added tasks in {planned} of {n} runs"
    );
    assert!(
        asked >= n / 5,
        "a person asked something unprompted in {asked} of {n} runs"
    );
    // A third ship through the simulated forge; most of those merge. A quarter keep
    // an issue tracker in step.
    assert!(
        shipped >= n / 6 && landed >= n / 10,
        "{shipped} of {n} runs opened pull requests, {landed} merged one"
    );
    assert!(tracked >= n / 6, "{tracked} of {n} runs told a tracker");
    // And a person's requests at random moments (those runs held to the invariants).
    assert!(
        moments >= n / 12,
        "{moments} of {n} runs asked at random moments"
    );
    // Most runs end where the run without faults does, whole: those whose ending
    // depends on when a person or a planner acted (a run with workers that spends
    // its budget too) are the few held to less.
    assert!(whole >= n * 4 / 5, "{whole} of {n} runs compared whole");
}

#[test]
fn small_runs_killed_after_every_effect_end_as_they_would_without() {
    // Planners among them: killed at each of their records too.
    let planned = seeds(0..25)
        .filter(|&s| Scenario::from_seed(s).config.run.planners > 0)
        .count();
    assert!(planned >= 3, "{planned} of the seeds have planners");
    let judged = seeds(0..25)
        .filter(|&s| Scenario::from_seed(s).config.run.cycle.is_some())
        .count();
    assert!(judged >= 2, "{judged} of the seeds are judged in cycles");
    // And a person's requests made unprompted (steer, pause, skip, debug, stop).
    let asking = seeds(0..25)
        .filter(|&s| !Scenario::from_seed(s).requests.is_empty())
        .count();
    assert!(
        asking >= 4,
        "{asking} of the seeds have a person's requests"
    );
    // And runs that ship, killed between each call to the forge and its record.
    let shipping = seeds(0..25)
        .filter(|&s| Scenario::from_seed(s).config.ship.enabled())
        .count();
    assert!(shipping >= 4, "{shipping} of the seeds ship");
    // And runs that keep a tracker in step, killed between a comment, a move and
    // their record.
    let tracking = seeds(0..25)
        .filter(|&s| Scenario::from_seed(s).config.tracker.source.is_some())
        .count();
    assert!(
        tracking >= 3,
        "{tracking} of the seeds keep a tracker in step"
    );
    let (mut effects, mut kills) = (0, 0);
    for seed in seeds(0..25) {
        match sim::check_every_kill(seed) {
            Ok((e, k)) => {
                effects += e - 1;
                kills += k;
            }
            Err(e) => panic!("{e}\nreplay: AGENTLOOP_SIM_SEED={seed}"),
        }
    }
    // Each effect killed once with its line whole, the driver's lines torn too.
    eprintln!("{kills} kills at {effects} effects");
    assert!(
        kills > effects + effects / 2,
        "{kills} kills at {effects} effects"
    );
}

/// The every-kill test goes on from a copy of the run without faults at each kill
/// instead of replaying it there: the copy ends exactly as the run replayed to that
/// kill does (its journal byte for byte, its branch, forge and tracker), at a few
/// effects of each seed, torn or not.
#[test]
fn a_killed_run_gone_on_from_a_copy_is_the_run_replayed_to_its_kill() {
    let mut compared = 0;
    for seed in 0..25 {
        let sc = Scenario::from_seed(seed);
        let mut copies = Vec::new();
        let effects = sim::run(&sc, &Faults::default()).effects;
        // Three effects of each seed: near its start, in the middle, near its end.
        let at = [2 + seed % 5, effects / 2, effects - seed % 3];
        let clean = sim::run_killed_at(
            &sc,
            |k| at.contains(&k),
            |k, torn, run| copies.push((k, torn, run)),
        );
        assert_eq!(clean.effects, effects, "seed {seed}");
        for (k, torn, copy) in copies {
            let replayed = sim::run(
                &sc,
                &Faults {
                    kills: vec![k],
                    torn,
                },
            );
            let at = format!("seed {seed}, killed after effect {k} (torn {torn})");
            assert_eq!(copy.journal, replayed.journal, "{at}");
            assert_eq!(copy.branch, replayed.branch, "{at}");
            assert_eq!(copy.state, replayed.state, "{at}");
            assert_eq!(
                (copy.effects, copy.drivers, copy.elapsed_ms, copy.work_ms),
                (
                    replayed.effects,
                    replayed.drivers,
                    replayed.elapsed_ms,
                    replayed.work_ms
                ),
                "{at}"
            );
            assert_eq!(
                (copy.forge, copy.tracker),
                (replayed.forge, replayed.tracker),
                "{at}"
            );
            assert_eq!(
                (copy.stuck, copy.tearable),
                (replayed.stuck, replayed.tearable),
                "{at}"
            );
            compared += 1;
        }
    }
    assert!(compared >= 75, "{compared} killed runs compared");
}

/// What the every-kill test leaves out is the same run: a torn kill at an effect that
/// is not a line of the driver's (a spawn, a merge, a forge call, a person's line)
/// ends exactly as the kill there without tearing.
#[test]
fn a_torn_kill_where_the_driver_writes_no_line_is_the_same_run() {
    let mut compared = 0;
    for seed in 0..40 {
        let sc = Scenario::from_seed(seed);
        let clean = sim::run(&sc, &Faults::default());
        let Some(k) = (2..=clean.effects).find(|k| clean.tearable.binary_search(k).is_err()) else {
            continue;
        };
        let at = |torn| {
            sim::run(
                &sc,
                &Faults {
                    kills: vec![k],
                    torn,
                },
            )
        };
        let (whole, torn) = (at(false), at(true));
        assert_eq!(whole.journal, torn.journal, "seed {seed}, effect {k}");
        assert_eq!(whole.branch, torn.branch, "seed {seed}, effect {k}");
        compared += 1;
    }
    assert!(
        compared >= 20,
        "{compared} seeds had an effect that is no line"
    );
}

#[test]
fn a_seed_replays_exactly() {
    for seed in [7, 700, 7000] {
        let sc = Scenario::from_seed(seed);
        let faults = sim::faults_for(seed, 60);
        let a = sim::run(&sc, &faults);
        let b = sim::run(&sc, &faults);
        assert_eq!(a.journal, b.journal, "seed {seed}");
        assert_eq!(a.branch, b.branch, "seed {seed}");
    }
}

/// The checks can fail: a branch holding a failed attempt, a task merged twice, a
/// journal with a line torn off, a run that never ends are each refused.
#[test]
fn the_invariants_refuse_broken_runs() {
    let seed = (0..200)
        .find(|&s| {
            let sc = Scenario::from_seed(s);
            sc.config.run.workers.unwrap_or(1) > 1
                && sim::run(&sc, &Faults::default()).branch.len() >= 2
        })
        .expect("a seed with workers and two merges");
    let sc = Scenario::from_seed(seed);
    let run = || sim::run(&sc, &Faults::default());
    sim::sound(&run()).expect("the run without faults is sound");

    let mut twice = run();
    let first = twice.branch[0].clone();
    twice.branch.push(first);
    let e = sim::sound(&twice).unwrap_err();
    assert!(e.contains("twice"), "{e}");

    let mut unverified = run();
    unverified.branch[0].iteration = 9_999;
    let e = sim::sound(&unverified).unwrap_err();
    assert!(e.contains("not verified"), "{e}");

    let mut torn = run();
    let len = torn.journal.len();
    torn.journal.truncate(len - 10);
    let e = sim::sound(&torn).unwrap_err();
    assert!(e.contains("torn") || e.contains("another state"), "{e}");

    let mut stuck = run();
    stuck.stuck = Some("the run did not finish".into());
    assert!(sim::sound(&stuck).is_err());
}

/// The tracker's invariants can fail too: an issue moved elsewhere than its last
/// record says, one commented on less often than recorded, a task's end left untold.
#[test]
fn the_invariants_refuse_what_a_tracker_may_not_hold() {
    let seed = (0..300)
        .find(|&s| {
            let r = sim::run(&Scenario::from_seed(s), &Faults::default());
            r.tracker.issues.len() >= 2
        })
        .expect("a seed that tells a tracker of two issues");
    let sc = Scenario::from_seed(seed);
    let run = || sim::run(&sc, &Faults::default());
    sim::sound(&run()).expect("the run without faults is sound");
    let first = |r: &sim::Run| r.tracker.issues.keys().next().unwrap().clone();

    let mut moved = run();
    let key = first(&moved);
    moved.tracker.issues.get_mut(&key).unwrap().state = Some("nowhere".into());
    let e = sim::sound(&moved).unwrap_err();
    assert!(e.contains("on the tracker"), "{e}");

    let mut mute = run();
    let key = first(&mute);
    mute.tracker.issues.get_mut(&key).unwrap().comments = 0;
    let e = sim::sound(&mute).unwrap_err();
    assert!(e.contains("comments for"), "{e}");

    // A run whose last line tells the run's own issue how it ended, cut before that
    // line (a prefix of a journal reads whole): the run's end was never told.
    let seed = (0..300)
        .find(|&s| {
            let sc = Scenario::from_seed(s);
            sc.config.tracker.issue.is_some()
                && String::from_utf8_lossy(&sim::run(&sc, &Faults::default()).journal)
                    .lines()
                    .last()
                    .is_some_and(|l| l.contains("\"issue_updated\""))
        })
        .expect("a seed whose run's own issue is told its end last");
    let mut untold = sim::run(&Scenario::from_seed(seed), &Faults::default());
    let text = String::from_utf8(untold.journal.clone()).unwrap();
    let cut = text.trim_end().rfind('\n').unwrap() + 1;
    untold.journal.truncate(cut);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("journal.jsonl");
    std::fs::write(&path, &untold.journal).unwrap();
    let records = agentloop_journal::read(&path).unwrap().records;
    untold.state = agentloop_journal::RunState::fold(&records).unwrap();
    let e = sim::sound(&untold).unwrap_err();
    assert!(e.contains("never told"), "{e}");
}

/// The forge's invariants can fail too: a pull request the journal never recorded,
/// one without its labels, a merge of a commit whose checks never passed, one commit
/// merged twice are each refused.
#[test]
fn the_invariants_refuse_what_a_forge_may_not_hold() {
    let seed = (0..300)
        .find(|&s| {
            let r = sim::run(&Scenario::from_seed(s), &Faults::default());
            r.forge.prs.iter().filter(|p| p.merged.is_some()).count() >= 1
        })
        .expect("a seed that merges a pull request");
    let sc = Scenario::from_seed(seed);
    let run = || sim::run(&sc, &Faults::default());
    sim::sound(&run()).expect("the run without faults is sound");
    let merged = |r: &sim::Run| r.forge.prs.iter().position(|p| p.merged.is_some()).unwrap();

    let mut stray = run();
    let mut pr = stray.forge.prs[0].clone();
    pr.number = 99;
    stray.forge.prs.push(pr);
    let e = sim::sound(&stray).unwrap_err();
    assert!(e.contains("never recorded"), "{e}");

    let mut bare = run();
    bare.forge.prs[0].labels.clear();
    let e = sim::sound(&bare).unwrap_err();
    assert!(e.contains("lacks its labels"), "{e}");

    let mut red = run();
    let i = merged(&red);
    red.forge.prs[i].merged = Some(("a-red-commit".into(), "main-after".into()));
    let e = sim::sound(&red).unwrap_err();
    assert!(e.contains("never passed"), "{e}");

    // One pull request per task: the second merged with the first's commit.
    let seed = (0..300)
        .find(|&s| {
            let r = sim::run(&Scenario::from_seed(s), &Faults::default());
            r.forge.prs.iter().filter(|p| p.merged.is_some()).count() >= 2
        })
        .expect("a seed that merges two pull requests");
    let mut twice = sim::run(&Scenario::from_seed(seed), &Faults::default());
    sim::sound(&twice).expect("the run without faults is sound");
    let done: Vec<usize> = (0..twice.forge.prs.len())
        .filter(|&i| twice.forge.prs[i].merged.is_some())
        .collect();
    twice.forge.prs[done[1]].merged = twice.forge.prs[done[0]].merged.clone();
    let e = sim::sound(&twice).unwrap_err();
    assert!(e.contains("merged twice"), "{e}");
}

/// `AGENTLOOP_SIM_SEED=N`: the seed's scenario, and its journal without and with its
/// faults, printed (nothing is checked).
#[test]
fn replay() {
    let Some(seed) = std::env::var("AGENTLOOP_SIM_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
    else {
        return;
    };
    let sc = Scenario::from_seed(seed);
    eprintln!(
        "{}\n{:?}\n{:?}\n{:?}",
        sc.plan, sc.config.run, sc.config.gates, sc.requests
    );
    let clean = sim::run(&sc, &Faults::default());
    eprintln!("--- without faults\n{}", sim::describe(&clean).join("\n"));
    let faults = sim::faults_for(seed, clean.effects);
    let faulted = sim::run(&sc, &faults);
    eprintln!(
        "--- with {faults:?}\n{}",
        sim::describe(&faulted).join("\n")
    );
    eprintln!("{:?}", sim::check(seed));
}

/// Many simulated workers on one plan (agents of 30 s to 10 min, checks of 20 s to
/// 2 min, failures, conflicts and merges that turn red): batches keep the merge queue
/// from being what the run waits for, and a worker is free again once its task is
/// verified. Simulated time, so the figures are the same on every machine; the bench
/// (`cargo bench -p agentloop --bench scale`) prints the whole curve, to 128 workers.
#[test]
fn batches_keep_thirty_two_simulated_workers_near_the_ideal() {
    let one = sim::scale(7, 256, 32, 1, 0, 1).unwrap();
    let batched = sim::scale(7, 256, 32, 16, 0, 1).unwrap();
    for r in [&one, &batched] {
        assert_eq!(r.ended, "Completed Some(Completed)", "{r:?}");
        assert!(r.done >= 250, "{r:?}");
    }
    assert!(
        batched.share() >= 0.7,
        "{batched:?}: {:.2}",
        batched.share()
    );
    assert!(one.share() * 3.0 < batched.share(), "{one:?}");
    assert!(batched.queue_p50_ms * 10 < one.queue_p50_ms, "{one:?}");
    // With merges that turn red (5% of attempts), bisecting four prefixes at a time
    // shortens the queue against halves one at a time.
    let halves = sim::scale(7, 256, 32, 16, 5, 1).unwrap();
    let fours = sim::scale(7, 256, 32, 16, 5, 4).unwrap();
    assert!(
        fours.queue_p50_ms < halves.queue_p50_ms,
        "{halves:?}\n{fours:?}"
    );
    assert!(fours.share() > halves.share(), "{halves:?}\n{fours:?}");
}
