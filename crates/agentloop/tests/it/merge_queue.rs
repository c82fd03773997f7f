//! The merge queue in batches: verified tasks that wait together are merged together
//! and checked once; a red batch is bisected to the task that turns it red, which
//! alone goes back to its agent.

use crate::workers::{events, git, integration, nothing_left, project};

const FOUR: &str = "# Four\n\n## T1: One\nVerify: test -f out/t1\n\n## T2: Two\nVerify: test -f out/t2\n\n## T3: Three\nVerify: test -f out/t3\n\n## T4: Four\nVerify: test -f out/t4\n";

/// A run-wide check, `gate.sh` in `shared` (which the run's config makes writable
/// to the confined checks): in a task's copy it counts the
/// verification; on a merged result (the merge worktree) it first waits until all
/// four tasks were verified, so the tasks verified meanwhile wait in the queue
/// together, and counts the check in `merged-checks`. It fails where both clash
/// files are.
fn gated(shared: &tempfile::TempDir) -> std::path::PathBuf {
    let gate = shared.path().join("gate.sh");
    let seen = shared.path().join("verified");
    std::fs::create_dir(&seen).unwrap();
    std::fs::write(
        &gate,
        format!(
            r#"seen={seen}
case "$(basename "$PWD")" in
  _merge|_merge-*)
    i=0
    while [ "$(ls "$seen" | wc -l)" -lt 4 ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
    echo checked >> {merged}
    sleep 1 ;;
  *) mktemp "$seen/XXXXXX" >/dev/null ;;
esac
test ! -f out/clash-2 || test ! -f out/clash-3
"#,
            seen = seen.display(),
            merged = shared.path().join("merged-checks").display()
        ),
    )
    .unwrap();
    gate
}

fn batches(ev: &[serde_json::Value]) -> (usize, usize) {
    let mut heads: Vec<String> = Vec::new();
    let mut started = 0;
    for e in ev.iter().filter(|e| e["kind"] == "merge_started") {
        started += 1;
        let h = e["data"]["head"].as_str().unwrap().to_string();
        if !heads.contains(&h) {
            heads.push(h);
        }
    }
    (heads.len(), started)
}

fn merged_checks(shared: &tempfile::TempDir) -> usize {
    std::fs::read_to_string(shared.path().join("merged-checks"))
        .unwrap()
        .lines()
        .count()
}

#[test]
fn tasks_waiting_together_are_merged_and_checked_once() {
    let shared = tempfile::tempdir().unwrap();
    let gate = gated(&shared);
    let p = project(
        FOUR,
        "mkdir -p out\ntouch \"out/t${task#T}\"\necho TASK_COMPLETE",
        &format!(
            "[verify]\ncommands = [\"sh {}\"]\n\n[merge]\nbatch = 4\n\n[sandbox]\nwritable = [\"{}\"]\n",
            gate.display(),
            shared.path().display()
        ),
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ev = events(&p);
    let (batches, started) = batches(&ev);
    assert_eq!(started, 4, "each task merged once");
    assert!(batches < 4, "every merge alone");
    // One check on the merged result per batch.
    assert_eq!(merged_checks(&shared), batches);
    assert_eq!(ev.iter().filter(|e| e["kind"] == "merged").count(), 4);
    let log = p.run(&["log"]).stdout;
    assert!(!log.contains("back in the merge queue"), "{log}");
    let s = p.status();
    assert_eq!(s["workers"]["batch"], 4, "{s}");
    assert_eq!(
        s["workers"]["agent_caps"],
        serde_json::json!({}),
        "no limit, no cap"
    );
    nothing_left(&p);
}

#[test]
fn a_red_batch_is_bisected_and_only_the_task_that_turns_it_red_goes_back() {
    red_batch(1);
}

#[test]
fn a_red_batch_bisected_several_prefixes_at_once_ends_the_same() {
    red_batch(3);
}

/// A run whose batch turns red, bisected `bisect` prefixes at a time.
fn red_batch(bisect: u32) {
    // T2 and T3 each leave a file that is fine alone and breaks the run-wide check
    // beside the other's: whichever of them is merged second is the one to blame.
    let shared = tempfile::tempdir().unwrap();
    let gate = gated(&shared);
    let p = project(
        FOUR,
        r#"mkdir -p out
k=${task#T}
touch "out/t$k"
# The first attempt of T2 and T3 leaves its clash file; told it broke the merged
# result, the next one takes it away.
case "$task:$n" in T2:1|T3:1) touch "out/clash-$k" ;; *) rm -f "out/clash-$k" ;; esac
echo TASK_COMPLETE"#,
        &format!(
            "[verify]\ncommands = [\"sh {}\"]\n\n[merge]\nbatch = 4\nbisect = {bisect}\n\n[sandbox]\nwritable = [\"{}\"]\n",
            gate.display(),
            shared.path().display()
        ),
    );
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ev = events(&p);
    let (batches, started) = batches(&ev);
    assert!(batches < started, "every merge alone");
    // Exactly one of T2 and T3 was blamed, for the merged result, not a conflict;
    // it alone went back to its agent.
    let failed: Vec<_> = ev.iter().filter(|e| e["kind"] == "merge_failed").collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    assert_eq!(failed[0]["data"]["conflict"], false);
    let reason = failed[0]["data"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("on the merged result"), "{reason}");
    let s = p.status();
    let attempts: Vec<u64> = (0..4)
        .map(|i| s["tasks"][i]["attempts"].as_u64().unwrap())
        .collect();
    assert_eq!(attempts[0] + attempts[3], 2, "T1 and T4: once each");
    assert_eq!(
        attempts[1] + attempts[2],
        3,
        "one of T2 and T3 twice: {attempts:?}"
    );
    assert!(
        s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "done")
    );
    assert_eq!(ev.iter().filter(|e| e["kind"] == "merged").count(), 4);
    assert!(
        merged_checks(&shared) > batches,
        "the red batch was bisected"
    );
    // The branch has each task's work and one of the clash files, never both; and
    // every task is its own merge commit on it.
    let branch = integration(&p);
    let files = git(&p, &["ls-tree", "-r", "--name-only", &branch, "out"]);
    for f in ["out/t1", "out/t2", "out/t3", "out/t4"] {
        assert!(files.lines().any(|l| l == f), "{f} not in {files}");
    }
    assert_eq!(files.matches("clash").count(), 1, "{files}");
    let merges_on_branch = git(&p, &["log", "--merges", "--format=%s", &branch]);
    for t in ["T1", "T2", "T3", "T4"] {
        assert_eq!(
            merges_on_branch
                .matches(&format!("agentloop: {t} "))
                .count(),
            1,
            "{merges_on_branch}"
        );
    }
    nothing_left(&p);
}

/// A calculator whose `div` T1 adds and whose `mul` T2 adds; each task's own check
/// runs its own test file alone.
const CALC_PLAN: &str = "# Calculator\n\n## T1: Division\n\nAdd `div`.\n\nVerify: python3 -m pytest -q tests/test_div.py\nTests: tests/test_div.py::*\n\n## T2: Multiplication\nDepends: T1\n\nAdd `mul`.\n\nVerify: python3 -m pytest -q tests/test_mul.py\nTests: tests/test_mul.py::*\n";

#[test]
fn a_task_that_breaks_a_landed_tasks_test_goes_back_and_the_branch_stays_green() {
    // T2's first attempt adds `mul` and breaks `div`: its own check (test_mul.py)
    // passes in its worktree. On the merged result T1's check runs too, T1's tests
    // must still pass, and T2 goes back to its agent with the broken test named.
    let p = project(
        CALC_PLAN,
        r#"case "$task:$n" in
T1:*) printf 'def add(a, b):\n    return a + b\n\ndef div(a, b):\n    return a / b\n' > calc/__init__.py ;;
T2:1) printf 'def add(a, b):\n    return a + b\n\ndef div(a, b):\n    return 0\n\ndef mul(a, b):\n    return a * b\n' > calc/__init__.py ;;
T2:*) printf 'def add(a, b):\n    return a + b\n\ndef div(a, b):\n    return a / b\n\ndef mul(a, b):\n    return a * b\n' > calc/__init__.py ;;
esac
echo TASK_COMPLETE"#,
        "",
    );
    p.write(
        "pyproject.toml",
        "[project]\nname = \"calc\"\nversion = \"0.1.0\"\n\n[tool.pytest.ini_options]\npythonpath = [\".\"]\n",
    );
    p.write("calc/__init__.py", "def add(a, b):\n    return a + b\n");
    p.write(
        "tests/test_div.py",
        "import calc\n\ndef test_div():\n    assert calc.div(6, 3) == 2\n\ndef test_div_half():\n    assert calc.div(1, 2) == 0.5\n",
    );
    p.write(
        "tests/test_mul.py",
        "import calc\n\ndef test_mul():\n    assert calc.mul(2, 3) == 6\n",
    );
    p.write(".gitignore", "__pycache__/\n.pytest_cache/\n");
    p.commit("a calculator");
    let mut p = p;
    p.env.push(("PATH".into(), crate::support::python_path()));
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let ev = events(&p);
    let failed: Vec<_> = ev.iter().filter(|e| e["kind"] == "merge_failed").collect();
    assert_eq!(failed.len(), 1, "{failed:#?}");
    let reason = failed[0]["data"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("on the merged result"), "{reason}");
    assert!(
        reason.contains("T1's tests/test_div.py::test_div"),
        "the broken test and whose it is: {reason}"
    );
    let digest = failed[0]["data"]["digest"].as_str().unwrap();
    assert!(digest.contains("tests/test_div.py::test_div"), "{digest}");
    let s = p.status();
    assert_eq!(s["tasks"][1]["attempts"], 2, "{s:#}");
    assert_eq!(s["verdict"], "SHIP", "{s:#}");
    // Every commit the integration branch ever pointed at passes T1's tests: no
    // broken `div` in its history, on any parent.
    let branch = integration(&p);
    let history = git(&p, &["log", "-p", "--format=%H", &branch, "--", "calc"]);
    assert!(!history.contains("return 0"), "{history}");
    assert_eq!(
        ev.iter()
            .filter(|e| e["kind"] == "validation_fix_added")
            .count(),
        0
    );
    nothing_left(&p);
}

mod policy {
    use std::collections::BTreeSet;

    use agentloop_journal::*;
    use agentloop_policy::{Action, Pick, pick};

    use crate::policy::{Sim, claims, settings, started, verified};

    const FIVE: &str = "# Five\n\n## T1: a\nVerify: t\n\n## T2: b\nVerify: t\n\n## T3: c\nVerify: t\n\n## T4: d\nVerify: t\n\n## T5: e\nVerify: t\n";

    /// Five workers on five independent tasks, each verified, until the policy asks
    /// for a merge: the batch it asks for.
    fn verified_five(batch: u32) -> (Sim, Vec<u32>) {
        let mut sim = Sim::new(
            FIVE,
            settings(|c| {
                c.run.workers = Some(5);
                c.merge.batch = Some(batch);
            }),
        );
        sim.then(Event::IntegrationStarted {
            branch: "agentloop/r".into(),
            base: "b0".into(),
        });
        // Merges asked for before all five are verified are left for later.
        let mut later = BTreeSet::new();
        for _ in 0..100 {
            match pick(&sim.state, &later) {
                Pick::Take(Action::Iterate(p)) => {
                    sim.then(started(&p));
                    sim.then(Event::AgentFinished(AgentFinished {
                        iteration: p.iteration,
                        ..claims(true, &["f"])
                    }));
                }
                Pick::Take(Action::CheckSurface { iteration }) => {
                    sim.then(Event::SurfaceChecked {
                        iteration,
                        changes: vec![],
                    });
                }
                Pick::Take(Action::Verify { iteration, .. }) => {
                    sim.then(verified(iteration, true, ""));
                }
                Pick::Take(Action::Record(e)) => {
                    sim.then(e);
                }
                Pick::Take(Action::Merge { batch }) => {
                    later.insert(batch[0]);
                }
                Pick::AwaitWork => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        match pick(&sim.state, &BTreeSet::new()) {
            Pick::Take(Action::Merge { batch }) => (sim, batch),
            other => panic!("no merge asked for: {other:?}"),
        }
    }

    #[test]
    fn the_queue_takes_up_to_a_batch_in_order_and_a_requeued_task_goes_first_again() {
        let (_, one) = verified_five(1);
        assert_eq!(one, vec![1]);
        let (mut sim, batch) = verified_five(3);
        assert_eq!(batch, vec![1, 2, 3], "the first three, in order");
        for &i in &batch {
            sim.then(Event::MergeStarted {
                iteration: i,
                head: "b0".into(),
            });
        }
        // Under way, the batch is asked for whole (a driver that died mid-batch
        // takes it up again), and no other batch starts meanwhile.
        let busy: BTreeSet<u32> = batch.iter().copied().collect();
        assert_eq!(
            agentloop_policy::schedule(&sim.state)
                .into_iter()
                .filter(|a| matches!(a, Action::Merge { .. }))
                .collect::<Vec<_>>(),
            vec![Action::Merge {
                batch: vec![1, 2, 3]
            }]
        );
        assert_eq!(pick(&sim.state, &busy), Pick::AwaitWork);
        // T1 lands, T2 was red, T3 goes back to the queue: the next batch starts
        // with it, before T4 and T5.
        sim.then(Event::Merged {
            iteration: 1,
            commit: "m1".into(),
        });
        sim.then(Event::MergeFailed {
            iteration: 2,
            conflict: false,
            reason: "red".into(),
            digest: "red".into(),
            fingerprint: None,
        });
        sim.then(Event::MergeRequeued {
            iteration: 3,
            reason: "after a red one".into(),
        });
        let mut asked = None;
        for _ in 0..10 {
            match pick(&sim.state, &BTreeSet::new()) {
                Pick::Take(Action::Record(e)) => {
                    sim.then(e);
                }
                Pick::Take(Action::Merge { batch }) => {
                    asked = Some(batch);
                    break;
                }
                Pick::Take(_) => break,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(asked, Some(vec![3, 4, 5]));
        assert_eq!(sim.state.integration.as_ref().unwrap().head, "m1");
    }
}

mod concurrency {
    use std::collections::BTreeSet;

    use agentloop_journal::*;
    use agentloop_policy::{Action, Pick, pick};

    use crate::policy::{Sim, claims, settings, started};

    const SIX: &str = "# Six\n\n## T1: a\nVerify: t\n\n## T2: b\nVerify: t\n\n## T3: c\nVerify: t\n\n## T4: d\nVerify: t\n\n## T5: e\nVerify: t\n\n## T6: f\nVerify: t\n";

    /// Records the policy's decisions and starts what it asks to start, leaving every
    /// other step, and every agent at work, as under way; the iterations it started.
    fn start_all(sim: &mut Sim) -> Vec<u32> {
        let mut out = Vec::new();
        let mut under_way: BTreeSet<u32> = sim
            .state
            .running
            .iter()
            .filter(|o| o.agent.is_none())
            .map(|o| o.started.iteration)
            .collect();
        loop {
            match pick(&sim.state, &under_way) {
                Pick::Take(Action::Iterate(p)) => {
                    sim.then(started(&p));
                    under_way.insert(p.iteration);
                    out.push(p.iteration);
                }
                Pick::Take(Action::Record(e)) => {
                    sim.then(e);
                }
                Pick::Take(a) => {
                    under_way.insert(a.iteration().expect("a step of an iteration"));
                }
                _ => return out,
            }
        }
    }

    fn went_through(sim: &mut Sim, iteration: u32) {
        sim.then(Event::AgentFinished(AgentFinished {
            iteration,
            ..claims(false, &[])
        }));
    }

    #[test]
    fn an_agent_its_provider_limits_runs_fewer_at_once_then_more_as_calls_go_through() {
        let mut sim = Sim::new(SIX, settings(|c| c.run.workers = Some(4)));
        sim.then(Event::IntegrationStarted {
            branch: "agentloop/r".into(),
            base: "b0".into(),
        });
        assert_eq!(start_all(&mut sim), vec![1, 2, 3, 4]);
        // Two of the four calls come back limited: the agent's concurrency halves,
        // once for the wait, not once per call.
        for iteration in [1, 2] {
            sim.then(Event::AgentFinished(AgentFinished {
                iteration,
                exit_code: Some(1),
                error: Some(AgentError {
                    kind: AgentErrorKind::RateLimit,
                    message: "429".into(),
                }),
                ..AgentFinished::default()
            }));
            sim.then(Event::LimitHit {
                kind: AgentErrorKind::RateLimit,
                message: "429".into(),
                until_ms: 1,
                known_reset: true,
                iteration: Some(iteration),
                agent: Some("a".into()),
            });
        }
        assert_eq!(sim.state.agent_caps.get("a"), Some(&2));
        sim.then(Event::AgentLimitOver { agent: "a".into() });
        // Two still at work: nothing new starts (the limited two are redone later).
        assert_eq!(start_all(&mut sim), Vec::<u32>::new());
        // A call goes through: one more at once.
        went_through(&mut sim, 3);
        assert_eq!(sim.state.agent_caps.get("a"), Some(&3));
        assert_eq!(
            start_all(&mut sim).len(),
            2,
            "one call at work, three at once: two more start"
        );
        // Back at the workers: no cap.
        went_through(&mut sim, 4);
        assert_eq!(sim.state.agent_caps.get("a"), None);
    }
}

/// Twenty workers at once: `status` groups the lanes by phase instead of a line each
/// (`watch` shows the same lines), and `status --json` counts them.
#[test]
fn twenty_lanes_are_shown_grouped_by_phase() {
    let mut plan = String::from("# Twenty\n");
    for i in 1..=20 {
        plan.push_str(&format!("\n## T{i}: task {i}\nVerify: test -f out/t{i}\n"));
    }
    let p = crate::support::Scratch::new().plan(&plan).build();
    let release = p.cache.path().join("release");
    p.write(
        "agent.sh",
        format!(
            "p=$(cat)\nt=$(printf '%s\\n' \"$p\" | sed -n 's/^## Your task: T\\([0-9]*\\) .*/\\1/p' | head -n 1)\nwhile [ ! -f {} ]; do sleep 0.05; done\nmkdir -p out && touch out/t$t\necho TASK_COMPLETE\n",
            release.display()
        ),
    );
    p.write(
        "agentloop.toml",
        format!(
            "[run]\nagent = \"w\"\nworkers = 20\n\n[agents.w]\ncommand = [\"sh\", \"{}\"]\ntimeout = \"60s\"\n",
            p.path().join("agent.sh").display()
        ),
    );
    p.commit("twenty workers");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    crate::support::wait_for(&p, "twenty agents at work", |p| {
        let r = p.run(&["status", "--json"]);
        serde_json::from_str::<serde_json::Value>(&r.stdout)
            .is_ok_and(|s| s["workers"]["phases"]["agent"] == 20)
    });
    let text = p.run(&["status"]).stdout;
    assert!(text.contains("agent (20): T1 "), "{text}");
    assert!(text.contains("and 14 more"), "{text}");
    assert!(!text.contains("[1] T1"), "one line per lane: {text}");
    std::fs::write(&release, "").unwrap();
    let st = crate::support::wait_exit(&mut driver, std::time::Duration::from_secs(120));
    assert_eq!(st.code(), Some(0));
    assert_eq!(p.status()["status"], "completed");
}

/// A project of two tasks whose checks count where they run (`ran` in `shared`), and
/// leave `built.out` (ignored) where they run when `leave` says so.
fn counted(shared: &tempfile::TempDir, leave: bool) -> crate::support::Project {
    let count = shared.path().join("count.sh");
    let left = if leave { "touch built.out\n" } else { "" };
    std::fs::write(
        &count,
        format!(
            "echo \"$(basename \"$PWD\") $1\" >> {}\n{left}test -f \"out/$1\"\n",
            shared.path().join("ran").display()
        ),
    )
    .unwrap();
    let plan = format!(
        "# Two\n\n## T1: One\nVerify: sh {c} t1\n\n## T2: Two\nVerify: sh {c} t2\n",
        c = count.display()
    );
    let p = project(
        &plan,
        "mkdir -p out\ntouch \"out/t${task#T}\"\necho TASK_COMPLETE",
        &format!(
            "[verify]\ncommands = [\"sh {c} t1 && echo whole\"]\n\n[merge]\nbatch = 1\n\n[sandbox]\nwritable = [\"{}\"]\n",
            shared.path().display(),
            c = count.display()
        ),
    );
    p.write(".gitignore", "built.out\n");
    p.commit("ignore the build");
    p
}

/// VALIDATE on the tree the merge queue's last check ran on takes that check's
/// results: every landed task's check, and the run's own (`[verify] commands`, part of
/// every task's), passed there, so none runs again.
#[test]
fn validate_takes_the_merge_queues_last_check_on_the_same_tree() {
    let shared = tempfile::tempdir().unwrap();
    let p = counted(&shared, false);
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let ran = std::fs::read_to_string(shared.path().join("ran")).unwrap();
    // Nothing ran after the last merge's check (VALIDATE's worktree is named for the
    // run).
    let last = ran.lines().last().unwrap();
    assert!(last.starts_with("_merge "), "{ran}");
    let md = std::fs::read_to_string(p.run_dir().join("validation.md")).unwrap();
    assert!(md.contains("**passed**"), "{md}");
    assert_eq!(
        md.matches("passed on this tree in the merge queue's last check")
            .count(),
        3,
        "{md}"
    );
    let ev = events(&p);
    let validated = ev.iter().find(|e| e["kind"] == "validated").unwrap();
    assert_eq!(validated["data"]["commands"].as_array().unwrap().len(), 3);
    nothing_left(&p);
}

/// What an earlier check left in the merge worktree (an ignored build output) stays
/// there for the next batch's check, and a fresh checkout has none of it: a check that
/// ran on such a tree is not taken, and VALIDATE runs every check again.
#[test]
fn validate_runs_again_where_the_merge_worktree_held_what_a_check_left() {
    let shared = tempfile::tempdir().unwrap();
    let p = counted(&shared, true);
    let r = p.run(&["run"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let run = p.status()["run_id"].as_str().unwrap().to_string();
    let ran = std::fs::read_to_string(shared.path().join("ran")).unwrap();
    let merges = ran.lines().filter(|l| l.starts_with("_merge ")).count();
    let last = ran.lines().last().unwrap();
    let md = std::fs::read_to_string(p.run_dir().join("validation.md")).unwrap();
    // Two batches (one task each): the second check ran where the first left
    // `built.out`.
    assert!(merges > 2, "{ran}");
    assert!(last.starts_with(&format!("{run} ")), "{ran}");
    assert!(!md.contains("merge queue's last check"), "{md}");
    assert!(md.contains("**passed**"), "{md}");
}
