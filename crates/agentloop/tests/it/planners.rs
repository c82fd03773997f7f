//! Planners (`[run] planners`): agents that grow the plan while workers run — a plan
//! that starts with its goal alone, proposals judged before they join the plan (a
//! refused one asked for again with the reason), the `new_tasks` gate, and a
//! planner's writes thrown away.

use crate::support::{Project, Scratch};

/// A scripted agent: as a planner (its prompt starts `# Planning:`) it answers the
/// `n`th time with `answers[n-1]` (then `NO_NEW_TASKS`), keeping its prompt as
/// `planner-N.md` in `state`, and writes a file in the copy it was given; as a worker
/// it makes its task's file.
fn agent(state: &std::path::Path, answers: &[&str]) -> String {
    let mut cases = String::new();
    for (i, a) in answers.iter().enumerate() {
        cases.push_str(&format!(
            "    {}) printf '%s\\n' '{}';;\n",
            i + 1,
            a.replace('\'', "")
        ));
    }
    format!(
        r#"prompt=$(cat)
state={state}
mkdir -p "$state"
if printf '%s\n' "$prompt" | head -n 1 | grep -q '^# Planning:'; then
  n=$(cat "$state/plans" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$state/plans"
  printf '%s\n' "$prompt" > "$state/planner-$n.md"
  echo "a planner's notes" > planner-was-here.txt
  case $n in
{cases}    *) echo NO_NEW_TASKS;;
  esac
  exit 0
fi
task=$(printf '%s\n' "$prompt" | sed -n 's/^## Your task: \([A-Za-z0-9_-]*\) .*/\1/p' | head -n 1)
echo "$task" > "$(echo "$task" | tr 'A-Z' 'a-z').txt"
echo TASK_COMPLETE
"#,
        state = state.display()
    )
}

/// The check planners name: `sh files.sh NAME…` prints one TAP test per name,
/// passing once `NAME.txt` is there.
pub(crate) const FILES: &str = r#"echo "1..$#"; n=0; bad=0
for f in "$@"; do n=$((n+1)); if [ -f "$f.txt" ]; then echo "ok $n - $f"; else echo "not ok $n - $f"; bad=1; fi; done
exit $bad
"#;

/// A project with `plan` and the planners' check, `files.sh`.
pub(crate) fn with_files_check(plan: &str) -> Project {
    let p = Scratch::new().plan(plan).build();
    p.write("files.sh", FILES);
    p
}

fn project(plan: &str, run: &str, more: &str, answers: &[&str]) -> Project {
    let p = with_files_check(plan);
    let script = agent(&p.path().join(".git/agent-state"), answers);
    scripted(p, &script, run, more)
}

/// `p` with `script` as its agent (`agent.sh`, the `scripted` agent of `[run]`), `run`
/// more of `[run]` and `more` after it, committed.
pub(crate) fn scripted(p: Project, script: &str, run: &str, more: &str) -> Project {
    p.write("agent.sh", script);
    p.write(
        "agentloop.toml",
        format!(
            "[run]\nagent = \"scripted\"\n{run}\n\n[agents.scripted]\ncommand = [\"sh\", \"{}\"]\ntimeout = \"60s\"\n\n{more}",
            p.path().join("agent.sh").display()
        ),
    );
    p.commit("a planning agent");
    p
}

fn prompt(p: &Project, n: u32) -> String {
    std::fs::read_to_string(p.path().join(format!(".git/agent-state/planner-{n}.md")))
        .unwrap_or_default()
}

const GOAL: &str = "# Files\n\nThree files, each named for its task.\n";

/// T1 and T2 in the answer's form (the shell script prints it as one argument).
const T1_T2: &str = "NEW_TASKS\n## T1: One\nVerify: sh files.sh t1\nTests: t1\n\n## T2: Two\nVerify: sh files.sh t2\nTests: t2\nDepends: T1\nEND_NEW_TASKS";

#[test]
fn planners_grow_a_plan_that_starts_with_its_goal_alone() {
    // Without planners, a plan with no task is refused, saying what would help.
    let p = project(GOAL, "workers = 2", "", &[]);
    let r = p.run(&["run", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("the plan has no tasks") && r.stderr.contains("[run] planners"),
        "{}",
        r.stderr
    );
    // So do `plan check` and `queue add`.
    for args in [
        &["plan", "check", "PLAN.md"][..],
        &["queue", "add", "PLAN.md"],
    ] {
        let r = p.run(args);
        assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("the plan has no tasks"), "{}", r.stderr);
    }

    let p = project(
        GOAL,
        "workers = 2\nplanners = 1",
        "",
        &[
            // Refused (no check), and asked again with the reason.
            "NEW_TASKS\n## T1: One\nMake it.\nEND_NEW_TASKS",
            T1_T2,
            "NEW_TASKS\n## T3: Three\nVerify: sh files.sh t3\nTests: t3\nEND_NEW_TASKS",
        ],
    );
    // With planners, the goal alone is a plan.
    let check = p.run(&["plan", "check", "PLAN.md"]);
    assert_eq!(check.code, Some(0), "{}", check.stderr);
    assert!(check.stdout.contains("0 tasks · valid"), "{}", check.stdout);
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stderr, p.run(&["log"]).stdout);
    let s = p.status();
    assert_eq!(s["status"], "completed", "{s}");
    let done: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "done")
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(done, ["T1", "T2", "T3"], "{s}");
    assert_eq!(s["planners"]["count"], 1, "{s}");
    assert_eq!(
        s["planners"]["added"],
        serde_json::json!(["T1", "T2", "T3"]),
        "{s}"
    );
    let text = p.run(&["status"]).stdout;
    assert!(text.contains("planners: 1 · added T1, T2, T3"), "{text}");
    // The second planner was told why the first proposal was refused; every planner
    // saw the goal and the plan as it stood.
    assert!(prompt(&p, 1).contains("Three files, each named for its task."));
    assert!(prompt(&p, 1).contains("No task yet."));
    assert!(
        prompt(&p, 2).contains("T1 names no check"),
        "{}",
        prompt(&p, 2)
    );
    // The third was asked once T1 was done (T2 depends on it), with both in the plan.
    assert!(
        prompt(&p, 3).contains("- T1: One [done]"),
        "{}",
        prompt(&p, 3)
    );
    assert!(prompt(&p, 3).contains("- T2: Two ["), "{}", prompt(&p, 3));
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("planner 1: refused: T1 names no check"),
        "{log}"
    );
    assert!(log.contains("planner 1: added T1, T2 (plan v2)"), "{log}");
    assert!(log.contains("planner 1: added T3 (plan v3)"), "{log}");
    assert!(log.contains("planner 1: nothing more to add"), "{log}");
    // Each plan version is kept.
    let versions = p.run_dir().join("plan");
    assert!(
        std::fs::read_to_string(versions.join("v3.md"))
            .unwrap_or_default()
            .contains("## T3: Three"),
        "{:?}",
        std::fs::read_dir(&versions)
            .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
    );
    // What a planner wrote in its copy went nowhere.
    let branch = crate::workers::integration(&p);
    let files = p.git_cmd(&["ls-tree", "--name-only", &branch]);
    assert!(files.contains("t3.txt"), "{files}");
    assert!(!files.contains("planner-was-here"), "{files}");
    assert!(!p.path().join("planner-was-here.txt").exists());
    crate::workers::nothing_left(&p);
}

#[test]
fn with_the_new_tasks_gate_a_person_approves_or_rejects_what_planners_add() {
    let plan = "# Files\n\nFiles, each named for its task.\n\n## T1: One\nVerify: test -f t1.txt\n";
    let p = project(
        plan,
        "planners = 1",
        "[gates]\nnew_tasks = true\n",
        &[
            "NEW_TASKS\n## T2: Two\nVerify: sh files.sh t2\nTests: t2\nEND_NEW_TASKS",
            "NEW_TASKS\n## T3: Three\nVerify: sh files.sh t3\nTests: t3\nEND_NEW_TASKS",
        ],
    );
    let r = p.run(&["run", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    let s = p.status();
    assert_eq!(s["gate"]["point"], "new_tasks", "{s}");
    assert_eq!(
        s["tasks"].as_array().unwrap().len(),
        1,
        "not in the plan yet"
    );
    assert_eq!(s["planners"]["proposal"], serde_json::json!(["T2"]), "{s}");
    // The API (and so the dashboard) shows the proposal, its checks with it.
    {
        let api = crate::support::serve(&p);
        let id = s["run_id"].as_str().unwrap();
        let (code, body) = crate::support::http_request(
            &api.addr,
            "GET",
            &format!("/api/runs/{id}?token={}", api.token),
            None,
            None,
        );
        assert_eq!(code, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        let proposal = &v["planners"]["proposal"][0];
        assert_eq!(proposal["id"], "T2", "{v}");
        assert_eq!(proposal["verify"], serde_json::json!(["sh files.sh t2"]));
        assert_eq!(proposal["tests"], serde_json::json!(["t2"]), "{v}");
    }
    assert_eq!(p.run(&["approve"]).code, Some(0));
    let r = p.run(&["resume", "--quiet", "--no-wait"]);
    assert_eq!(r.code, Some(5), "{}", r.stderr);
    // T2 joined the plan; the next proposal waits in turn, and is rejected.
    let s = p.status();
    assert_eq!(s["gate"]["point"], "new_tasks", "{s}");
    assert!(
        s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == "T2")
    );
    assert_eq!(
        p.run(&["reject", "--note", "one file too many"]).code,
        Some(0)
    );
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stderr, p.run(&["log"]).stdout);
    let s = p.status();
    assert_eq!(s["status"], "completed", "{s}");
    let ids: Vec<&str> = s["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["T1", "T2"], "{s}");
    assert!(p.path().join("t2.txt").exists());
    assert!(!p.path().join("t3.txt").exists());
    // The next planner was told.
    assert!(
        prompt(&p, 3).contains("a person rejected the proposed tasks T3: one file too many"),
        "{}",
        prompt(&p, 3)
    );
}

/// A planner that answers from what it is told, as a real one would: the first two
/// tasks while the plan is empty, the third once they are in it, then nothing.
const FROM_THE_PROMPT: &str = r#"prompt=$(cat)
if printf '%s\n' "$prompt" | head -n 1 | grep -q '^# Planning:'; then
  if printf '%s\n' "$prompt" | grep -q '^No task yet'; then
    printf 'NEW_TASKS\n## T1: One\nVerify: sh files.sh t1\nTests: t1\n\n## T2: Two\nVerify: sh files.sh t2\nTests: t2\nDepends: T1\nEND_NEW_TASKS\n'
  elif ! printf '%s\n' "$prompt" | grep -q '^- T3:'; then
    printf 'NEW_TASKS\n## T3: Three\nVerify: sh files.sh t3\nTests: t3\nEND_NEW_TASKS\n'
  else
    echo NO_NEW_TASKS
  fi
  exit 0
fi
task=$(printf '%s\n' "$prompt" | sed -n 's/^## Your task: \([A-Za-z0-9_-]*\) .*/\1/p' | head -n 1)
echo "$task" > "$(echo "$task" | tr 'A-Z' 'a-z').txt"
echo TASK_COMPLETE
"#;

#[test]
fn a_driver_killed_at_each_planners_record_resumes_to_the_same_plan() {
    let make = || {
        let p = with_files_check(GOAL);
        scripted(p, FROM_THE_PROMPT, "workers = 2\nplanners = 1", "")
    };
    let reference = make();
    let r = reference.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let want = crate::crash::end(&reference);
    // The planners' records: a kill before each answer is written and after it, and
    // after the first planner was asked (asked again by the next driver). Named by kind
    // and order: with two workers and a planner thread the sequence numbers of two runs
    // differ.
    let records = crate::crash::records(&reference);
    let count = |kind: &str| records.iter().filter(|r| r.event.kind() == kind).count();
    let answered = count("planner_finished");
    assert!(
        answered >= 3,
        "{answered}: at least three planners answered"
    );
    let mut kills: Vec<(&str, String)> = vec![("after-append", "planner_started#1".into())];
    // The first three: every run has them (two proposals, then nothing to add); a
    // fourth depends on when the workers finish.
    for n in 1..=3 {
        kills.push(("before-append", format!("planner_finished#{n}")));
        kills.push(("after-append", format!("planner_finished#{n}")));
    }
    for (point, seq) in kills {
        {
            let p = make();
            let out = p.run_failing_at(&["run", "--quiet"], &format!("{point}:{seq}"));
            assert_eq!(
                std::os::unix::process::ExitStatusExt::signal(&out.status),
                Some(9),
                "{point}:{seq} was not killed"
            );
            let r = p.run(&["resume", "--quiet"]);
            assert_eq!(r.code, Some(0), "{point}:{seq}: {}", r.stderr);
            assert_eq!(crate::crash::end(&p), want, "{point}:{seq}");
            let done = crate::chaos::completions(&p);
            assert!(
                done.len() == 3 && done.values().all(|&n| n == 1),
                "{point}:{seq}: {done:?}"
            );
            assert_eq!(p.run(&["journal", "verify"]).code, Some(0));
        }
    }
}

/// A planner proposes a task checked by a script; its worker writes the script to
/// pass (`exit 0`) instead of doing the work. The script joins the verification
/// surface as soon as the task's check names it: written new, or rewritten where it
/// was already in the tree, it stops the run at the surface gate for a person.
#[test]
fn a_check_script_a_planner_named_is_on_the_surface_for_its_worker() {
    const CHEAT: &str = r#"prompt=$(cat)
if printf '%s\n' "$prompt" | head -n 1 | grep -q '^# Planning:'; then
  if printf '%s\n' "$prompt" | grep -q '^No task yet'; then
    printf 'NEW_TASKS\n## T1: Make the report\nVerify: sh checks/t1.sh\nTests: report\nEND_NEW_TASKS\n'
  else
    echo NO_NEW_TASKS
  fi
  exit 0
fi
mkdir -p checks
echo 'exit 0' > checks/t1.sh
echo TASK_COMPLETE
"#;
    for already in [false, true] {
        let p = Scratch::new().plan(GOAL).build();
        if already {
            p.write(
                "checks/t1.sh",
                "echo 1..1; if [ -f report.txt ]; then echo 'ok 1 - report'; else echo 'not ok 1 - report'; exit 1; fi\n",
            );
        }
        let p = scripted(p, CHEAT, "planners = 1", "");
        let r = p.run(&["run", "--quiet", "--no-wait"]);
        let s = p.status();
        assert_eq!(r.code, Some(5), "already {already}: {}\n{s}", r.stderr);
        assert_eq!(s["gate"]["point"], "surface", "already {already}: {s}");
        assert_ne!(s["tasks"][0]["status"], "done", "already {already}: {s}");
        let changed = s["surface_changes"].to_string();
        assert!(
            changed.contains("checks/t1.sh"),
            "already {already}: {changed}"
        );
    }
}

/// Planners' tasks that would be done with no work are refused, each with its reason,
/// and the next planner is told: a check's exit code alone (`test 1 = 1`), a test
/// that passes already, a held-out check that passes already, a copy of a done task
/// under a new id. Only the task with work to do is done, with one worker and with
/// three.
#[test]
fn a_planners_task_that_tells_nothing_is_refused_and_the_planner_told_why() {
    let held = tempfile::tempdir().unwrap();
    std::fs::write(held.path().join("ok.sh"), "exit 0\n").unwrap();
    for workers in [1, 3] {
        let p = with_files_check(GOAL);
        p.write("t0.txt", "there before any task\n");
        let state = p.path().join(".git/agent-state");
        let p = scripted(
            p,
            &agent(
                &state,
                &[
                    "NEW_TASKS\n## T1: One\nVerify: test 1 = 1\nEND_NEW_TASKS",
                    "NEW_TASKS\n## T1: Zero\nVerify: sh files.sh t0\nTests: t0\nEND_NEW_TASKS",
                    "NEW_TASKS\n## T1: One\nVerify: sh files.sh t1\nTests: t1\nEND_NEW_TASKS",
                    "NEW_TASKS\n## T2: One again\nVerify: sh files.sh t1\nTests: t1\nEND_NEW_TASKS",
                    "NEW_TASKS\n## T2: Two\nVerify: sh files.sh t1\nHoldout: ok\nEND_NEW_TASKS",
                ],
            ),
            &format!("workers = {workers}\nplanners = 1"),
            &format!("[verify]\nholdout = \"{}\"\n", held.path().display()),
        );
        let r = p.run(&["run", "--quiet"]);
        let log = p.run(&["log"]).stdout;
        assert_eq!(r.code, Some(0), "workers {workers}: {}\n{log}", r.stderr);
        let s = p.status();
        assert_eq!(s["status"], "completed", "{s}");
        let ids: Vec<&str> = s["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["T1"], "workers {workers}: {s}");
        assert_eq!(s["tasks"][0]["status"], "done", "{s}");
        for (n, why) in [
            (2, "T1 names no test (`Tests:`) and no held-out check"),
            (
                3,
                "T1's `Tests: t0` names 1 test that already passes on the tree as it stands",
            ),
            (5, "T2 is T1 again"),
            (
                6,
                "T2's held-out check `ok` passes on the tree as it stands",
            ),
        ] {
            assert!(
                prompt(&p, n).contains(why),
                "workers {workers}: planner {n} was not told `{why}`:\n{}",
                prompt(&p, n)
            );
            assert!(log.contains(why), "workers {workers}: {why}\n{log}");
        }
        assert!(log.contains("planner 1: added T1 (plan v2)"), "{log}");
        if workers == 1 {
            assert!(p.path().join("t1.txt").exists());
        } else {
            let branch = crate::workers::integration(&p);
            let files = p.git_cmd(&["ls-tree", "--name-only", &branch]);
            assert!(files.contains("t1.txt"), "{files}");
            crate::workers::nothing_left(&p);
        }
    }
}

/// A check that tells the proposal's run from the task's (by its directory, its
/// report's path) and fails only at the proposal cannot get a task with no work
/// accepted: the proposal's checks run where and as the task's will.
#[test]
fn a_check_cannot_tell_the_proposal_from_the_task() {
    let tell = "case \"$PWD $AGENTLOOP_TEST_REPORT\" in *proposal*) echo '1..1'; echo 'not ok 1 - t9'; exit 1;; esac\necho '1..1'; echo 'ok 1 - t9'\n";
    for workers in [1, 3] {
        let p = with_files_check(GOAL);
        p.write("tell.sh", tell);
        let state = p.path().join(".git/agent-state");
        let p = scripted(
            p,
            &agent(
                &state,
                &[
                    "NEW_TASKS\n## T1: Nothing\nVerify: sh tell.sh\nTests: t9\nEND_NEW_TASKS",
                    "NEW_TASKS\n## T1: One\nVerify: sh files.sh t1\nTests: t1\nEND_NEW_TASKS",
                ],
            ),
            &format!("workers = {workers}\nplanners = 1"),
            "",
        );
        let r = p.run(&["run", "--quiet"]);
        let log = p.run(&["log"]).stdout;
        assert_eq!(r.code, Some(0), "workers {workers}: {}\n{log}", r.stderr);
        let why = "T1's `Tests: t9` names 1 test that already passes";
        assert!(log.contains(why), "workers {workers}: {log}");
        let s = p.status();
        assert_eq!(s["tasks"][0]["title"], "One", "workers {workers}: {s}");
    }
}
