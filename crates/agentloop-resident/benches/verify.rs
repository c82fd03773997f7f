//! agentloop's own time per verification, the check's own time apart: on a committed
//! repository of `FILES` files (default 2,000; a fifth of them tests) where an agent
//! has just changed a source file, one verification as the driver runs it — the
//! surface compared with the baseline (the full comparison: the sealed stamp that
//! lets an unchanged surface skip git lives in the driver), the clean copy brought up
//! to date (with the mend), then the check (`test -f` on a file of the project) —
//! beside the check alone, run in the same up-to-date copy, and the anchor of the
//! same run: one `git status --porcelain`. agentloop's own time is the verification
//! less the check alone. `RUNS` (default 25) of each, medians and 90th percentiles.
//!
//! `cargo bench -p agentloop-resident --bench verify` (`FILES=100000 RUNS=7` for the big one)

use std::process::Command;

mod common;
use std::time::{Duration, Instant};

use agentloop_project::Project;
use agentloop_verify::clean_copy::CleanCopy;
use agentloop_verify::surface;
use agentloop_verify::verify::Runner;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn pct(v: &mut [f64], p: usize) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[(v.len() * p / 100).min(v.len() - 1)]
}

/// One row of the table: its label, then the p50 (and the p90 when asked).
fn row(label: &str, v: &[f64], p90: bool) {
    let mut v = v.to_vec();
    let p50 = pct(&mut v, 50);
    if p90 {
        println!("  {label:<33}{p50:>7.2} / {:>7.2}", pct(&mut v, 90));
    } else {
        println!("  {label:<33}{p50:>7.2}");
    }
}

/// The rows every way shares: the whole verification, the check alone, and
/// agentloop's own time (the difference).
fn own_rows(whole: &[f64], alone: &[f64]) {
    let own: Vec<f64> = whole.iter().zip(alone).map(|(w, a)| w - a).collect();
    row("verification, whole:", whole, true);
    row("the check alone:", alone, true);
    row("agentloop's own (whole − check):", &own, true);
}

/// The checks' runner in `workdir`, as the driver makes it (no sandbox, no tests).
fn runner<'a>(workdir: &'a std::path::Path, log: &'a std::path::Path) -> Runner<'a> {
    Runner {
        workdir,
        timeout: Duration::from_secs(60),
        output_cap: 1 << 20,
        log,
        wrap: Vec::new(),
        bytecode: Default::default(),
        tests: None,
        jobs: Default::default(),
    }
}

fn main() {
    // criterion's harness flags (`--bench`) are not ours.
    // The bench's runs, key and copies stay out of the user's state and cache.
    let state = tempfile::tempdir().unwrap();
    // SAFETY: no other thread runs yet.
    unsafe {
        std::env::set_var("XDG_STATE_HOME", state.path().join("state"));
        std::env::set_var("XDG_CACHE_HOME", state.path().join("cache"));
    }
    let files = env("FILES", 2000);
    let runs = env("RUNS", 25);
    let dir = common::python_repo(files, "# P\n\n## T1: t\nVerify: test -f src/m0/f1.py\n");
    let root = dir.path();
    let check = vec!["test -f src/m0/f1.py".to_string()];
    let rules = Project::from_names(root, &[], "PLAN.md", check.clone(), &[]);
    let base = surface::record(root, &rules).unwrap();
    let copies = tempfile::tempdir().unwrap();
    let copy = CleanCopy {
        root: root.to_path_buf(),
        dir: copies.path().join("run"),
    };
    let log = copies.path().join("verify.log");
    let t = Instant::now();
    copy.refresh(Some(&base), &[]).unwrap();
    println!(
        "{files} files: the run's first clean copy (worktree add): {:.1} ms",
        ms(t.elapsed())
    );
    let plain = runner(&copy.dir, &log);
    // The same check confined as every check is by default (the judge's bubblewrap:
    // `exec::sandbox::judge`), beside it in the same runs.
    let sandbox = agentloop_config::SandboxConfig::default();
    let confined_runner = Runner {
        wrap: agentloop_exec::sandbox::judge::wrap(
            &sandbox,
            root,
            &copy.dir,
            &copies.path().join("reports"),
            &agentloop_exec::sandbox::judge::WarmCaches::Fresh,
        ),
        ..runner(&copy.dir, &log)
    };
    let runner = plain;
    let confinable = !confined_runner.wrap.is_empty();
    let mut confined = Vec::new();
    let (mut whole, mut alone, mut anchor) = (Vec::new(), Vec::new(), Vec::new());
    // The hermetic settings apart: the same `git status` with them (as agentloop's
    // own git runs) beside the anchor's plain one, in the same runs.
    let mut hermetic = Vec::new();
    let (mut surface_ms, mut refresh_ms) = (Vec::new(), Vec::new());
    for n in 0..runs {
        // The agent's work since the last verification: one source rewritten.
        std::fs::write(
            root.join("src/m0/f2.py"),
            format!("def changed():\n    return {n}\n"),
        )
        .unwrap();
        let t = Instant::now();
        let changes = surface::check(root, &base, &rules).unwrap();
        assert!(changes.is_empty());
        let s = t.elapsed();
        copy.refresh(Some(&base), &[]).unwrap();
        let r = t.elapsed() - s;
        let v = runner.run_measured(1, &check, &[], || false).unwrap();
        assert!(v.passed);
        whole.push(ms(t.elapsed()));
        surface_ms.push(ms(s));
        refresh_ms.push(ms(r));
        let t = Instant::now();
        let v = runner.run_measured(1, &check, &[], || false).unwrap();
        assert!(v.passed);
        alone.push(ms(t.elapsed()));
        if confinable {
            let t = Instant::now();
            let v = confined_runner
                .run_measured(1, &check, &[], || false)
                .unwrap();
            assert!(v.passed);
            confined.push(ms(t.elapsed()));
        }
        let t = Instant::now();
        let ok = Command::new("git")
            .args(["status", "--porcelain"])
            .current_dir(root)
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok);
        anchor.push(ms(t.elapsed()));
        let t = Instant::now();
        let mut c = agentloop_exec::git::git_command(root);
        let ok = c
            .args(["status", "--porcelain"])
            .output()
            .unwrap()
            .status
            .success();
        assert!(ok);
        hermetic.push(ms(t.elapsed()));
    }
    println!("{files} files, {runs} verifications, p50 / p90 in ms:");
    own_rows(&whole, &alone);
    if confinable {
        row("the check alone, confined:", &confined, true);
        let added: Vec<f64> = confined.iter().zip(&alone).map(|(c, a)| c - a).collect();
        row("  confinement adds:", &added, true);
    } else {
        println!("  (bubblewrap does not work here: no confined row)");
    }
    row("  of it, the surface comparison:", &surface_ms, false);
    row("  of it, the clean copy refresh:", &refresh_ms, false);
    let (plain, sealed) = (pct(&mut anchor.clone(), 50), pct(&mut hermetic.clone(), 50));
    println!(
        "  anchor, git status --porcelain:  {:>7.2} / {:>7.2}",
        plain,
        pct(&mut anchor, 90)
    );
    println!(
        "  the same, hermetic (agentloop's): {:>6.2} / {:>7.2}",
        sealed,
        pct(&mut hermetic, 90)
    );
    // A refresh starts seven git processes, the surface comparison two.
    println!(
        "  the hermetic settings per verification (9 git processes): {:+.2} ms",
        9.0 * (sealed - plain)
    );
    default_deny(root, &base, &rules, &copy, runs);
    copy.remove();
    kept_in_step(root, &base, &rules, &check, copies.path(), runs);
    hooks_way(root, &check, copies.path(), runs);
}

/// What default-deny adds to a full refresh: the same refresh with an admission that
/// keeps the agent's new test out (one added each run), beside the plain one, in
/// alternate runs; and the listing of the tree the run was created on, which a process
/// makes once (a hook process without a resident: once per verification).
fn default_deny(
    root: &std::path::Path,
    base: &agentloop_journal::Baseline,
    rules: &Project,
    copy: &CleanCopy,
    runs: usize,
) {
    use agentloop_verify::clean_copy::Judge;
    let tree = agentloop_exec::git::run(root, &["rev-parse", "HEAD^{tree}"]).unwrap();
    let tree = tree.trim();
    let t = Instant::now();
    let listed = surface::tree_files(root, tree).unwrap();
    let listing = ms(t.elapsed());
    let created = std::sync::Arc::new(listed.into_keys().collect());
    let admission = agentloop_project::Admission::new(
        rules.clone(),
        created,
        base.keys().cloned().collect(),
        Default::default(),
        vec![],
        Default::default(),
    );
    let (mut plain, mut judged) = (Vec::new(), Vec::new());
    for n in 0..runs {
        std::fs::write(
            root.join(format!("tests/test_added{n}.py")),
            "def test_x():\n    pass\n",
        )
        .unwrap();
        let t = Instant::now();
        copy.refresh(Some(base), &[]).unwrap();
        plain.push(ms(t.elapsed()));
        let judge = Judge {
            overlay: Some(base),
            admission: Some(&admission),
        };
        let t = Instant::now();
        let r = copy.refresh_judged(judge, &[]).unwrap();
        judged.push(ms(t.elapsed()));
        assert_eq!(r.left_out.len(), n + 1, "every added test left out");
    }
    for n in 0..runs {
        let _ = std::fs::remove_file(root.join(format!("tests/test_added{n}.py")));
    }
    println!("default-deny, {runs} full refreshes each, p50 / p90 in ms:");
    row("the clean copy refresh, plain:", &plain, true);
    row("the same, default-deny:", &judged, true);
    println!("  the tree the run was created on, listed (once a process): {listing:.2} ms");
}

/// The Stop hook's way: a new process each turn, which asks the run's resident
/// (`exec::resident`, served here on a thread of the bench's own) for the surface and
/// the copy kept in step, then runs the check in the copy. Timed from the question to
/// the check's end, the claim's full snapshot apart (the iteration takes it anyway).
fn hooks_way(root: &std::path::Path, check: &[String], copies: &std::path::Path, runs: usize) {
    use agentloop_exec::git::Snapshots;
    use agentloop_resident::{self as resident, Resident};
    let ws = agentloop_workspace::Workspace::find(root);
    let plan = agentloop_plan::Plan::parse(
        "PLAN.md",
        &std::fs::read_to_string(root.join("PLAN.md")).unwrap(),
    )
    .unwrap();
    let mut settings =
        agentloop_config::Settings::from_config(&agentloop_config::Config::default());
    settings.hook = true;
    let (run, _writer, state) = ws
        .create_run(&root.join("PLAN.md"), &plan, settings)
        .unwrap();
    assert!(state.baseline.is_some(), "the run judges a surface");
    let seq = state.last_seq;
    // A stamp is made only of files written more than two seconds before it.
    std::thread::sleep(Duration::from_millis(2100));
    let (dir, top) = (run.path.clone(), root.to_path_buf());
    let server = std::thread::spawn(move || resident::serve(&dir, &top));
    let socket = resident::socket_of(&run.path).expect("a short enough path");
    while !socket.exists() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let log = copies.join("hook.log");
    let (mut snapshot, mut whole, mut alone, mut asked) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut first = None;
    for n in 0..=runs {
        std::fs::write(
            root.join("src/m0/f2.py"),
            format!("def hooked():\n    return {n}\n"),
        )
        .unwrap();
        let t = Instant::now();
        let now = Snapshots::known(root).take().unwrap();
        snapshot.push(ms(t.elapsed()));
        let t = Instant::now();
        let mut r = Resident::find(&run.path, root).expect("the resident's socket");
        let checked = r.surface(seq, &now).expect("the resident answers");
        assert!(checked.changes.is_empty());
        let dir = r
            .copy(seq, &now, &["T1"])
            .expect("the resident answers")
            .dir;
        let a = t.elapsed();
        let runner = runner(&dir, &log);
        assert!(runner.run_measured(1, check, &[], || false).unwrap().passed);
        let w = t.elapsed();
        let t = Instant::now();
        assert!(runner.run_measured(1, check, &[], || false).unwrap().passed);
        let c = t.elapsed();
        assert_eq!(
            std::fs::read(root.join("src/m0/f2.py")).unwrap(),
            std::fs::read(dir.join("src/m0/f2.py")).unwrap()
        );
        if n == 0 {
            // The resident's first refresh of the copy is a full one.
            first = Some(ms(a));
            continue;
        }
        whole.push(ms(w));
        alone.push(ms(c));
        asked.push(ms(a));
    }
    Resident::find(&run.path, root).unwrap().end();
    server.join().unwrap().unwrap();
    let kept = std::fs::read_to_string(run.path.join("resident.log")).unwrap();
    assert_eq!(
        kept.matches("copy: kept in step without git").count(),
        runs,
        "every later refresh kept the copy in step: {kept}"
    );
    println!(
        "the hook's way (the resident asked; its first answers, a full refresh: {:.2} ms), p50 / p90 in ms:",
        first.unwrap_or_default()
    );
    own_rows(&whole, &alone);
    row("  of it, the questions:", &asked, false);
    row(
        "before it, the claim's full snapshot (the iteration's):",
        &snapshot,
        false,
    );
    if let Some(c) = CleanCopy::for_run(root, &run.id) {
        c.remove();
    }
}

/// The driver's own way: the surface's sealed stamp instead of the full comparison
/// (kept in memory, each surface file watched: no status read while none is written),
/// and the copy kept in step from the watch's snapshot (the one the iteration took at
/// its end, timed apart: a claim's is a full `git status`).
fn kept_in_step(
    root: &std::path::Path,
    base: &agentloop_journal::Baseline,
    rules: &Project,
    check: &[String],
    copies: &std::path::Path,
    runs: usize,
) {
    use agentloop_exec::git::Snapshots;
    use agentloop_exec::watch::Watched;
    use agentloop_verify::clean_copy::{KeptCopy, Way};
    use agentloop_verify::surface::{Stamp, SurfaceWatch};
    // A stamp is made only of files written more than two seconds before it.
    std::thread::sleep(Duration::from_millis(2100));
    let mut watched = Watched::start(Snapshots::known(root)).expect("the project is watched");
    let first = watched.take(true).unwrap();
    let (changes, stamp) = surface::check_stamped(root, base, rules, first.head.clone()).unwrap();
    assert!(changes.is_empty());
    let at = copies.join("stamp");
    stamp.expect("a stamp").save(&at).unwrap();
    // As the driver keeps them: the stamp in memory, each surface file watched.
    let stamp = Stamp::load(&at).expect("a sealed stamp");
    let mut surface_watch = SurfaceWatch::start(root, base).expect("the surface is watched");
    let mut kept = KeptCopy::new(CleanCopy {
        root: root.to_path_buf(),
        dir: copies.join("kept"),
    });
    let t = Instant::now();
    kept.refresh(Some(&first), Some(base), &[]).unwrap();
    let made = ms(t.elapsed());
    let log = copies.join("kept.log");
    let dir = kept.copy().dir.clone();
    let runner = runner(&dir, &log);
    let (mut snapshot, mut whole, mut alone, mut stamp_ms, mut refresh_ms) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for n in 0..runs {
        std::fs::write(
            root.join("src/m0/f2.py"),
            format!("def kept():\n    return {n}\n"),
        )
        .unwrap();
        let t = Instant::now();
        let now = watched.take(true).unwrap();
        snapshot.push(ms(t.elapsed()));
        let t = Instant::now();
        let quiet = surface_watch.covers(base) && surface_watch.quiet();
        if quiet && surface_watch.trusted() {
            assert!(stamp.holds_but_statuses(root, base, rules, &now));
        } else {
            assert!(stamp.holds(root, base, rules, &now));
            surface_watch.looked();
        }
        let s = t.elapsed();
        kept.refresh(Some(&now), Some(base), &[]).unwrap();
        assert_eq!(kept.last, Some(Way::Kept), "the copy went the full way");
        let r = t.elapsed() - s;
        let v = runner.run_measured(1, check, &[], || false).unwrap();
        assert!(v.passed);
        whole.push(ms(t.elapsed()));
        stamp_ms.push(ms(s));
        refresh_ms.push(ms(r));
        let t = Instant::now();
        assert!(runner.run_measured(1, check, &[], || false).unwrap().passed);
        alone.push(ms(t.elapsed()));
        assert_eq!(
            std::fs::read(root.join("src/m0/f2.py")).unwrap(),
            std::fs::read(dir.join("src/m0/f2.py")).unwrap()
        );
    }
    println!(
        "the driver's way (watched stamp, copy kept in step; its first, full refresh: {made:.2} ms), p50 / p90 in ms:"
    );
    own_rows(&whole, &alone);
    row("  of it, the surface's stamp:", &stamp_ms, false);
    row("  of it, the copy kept in step:", &refresh_ms, false);
    row(
        "before it, the claim's full snapshot (the iteration's):",
        &snapshot,
        false,
    );
    kept.copy().remove();
}
