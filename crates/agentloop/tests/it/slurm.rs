//! The Slurm executor against a real one-node Slurm cluster (Debian's slurmctld, slurmd
//! and munge, started by `scripts/slurm-cluster` in the target directory and shared by
//! these tests): each iteration a batch job that clones the task's branch from a bare
//! remote, runs the agent, and pushes its result back.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use crate::support::{Project, Scratch, wait_exit, wait_for};

/// The shared cluster's `slurm.conf`, the cluster started first if it does not run.
fn cluster() -> String {
    cluster_in("slurm", "ensure")
}

/// `scripts/slurm-cluster COMMAND` on the cluster in the target directory's `name`.
pub fn cluster_in(name: &str, command: &str) -> String {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/slurm-cluster");
    let out = Command::new(script)
        .arg(command)
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the test cluster did not start: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn slurm(conf: &str, tool: &str, args: &[&str]) -> String {
    let out = Command::new(tool)
        .args(args)
        .env("SLURM_CONF", conf)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A job's state as Slurm tells it.
pub fn job_state(conf: &str, id: &str) -> String {
    slurm(
        conf,
        "squeue",
        &["--states=all", "-h", "-j", id, "-O", "State"],
    )
}

const SIX: &str = "# Six\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nVerify: test -f two.txt\n\n## T3: Three\nVerify: test -f three.txt\n\n## T4: Four\nVerify: test -f four.txt\n\n## T5: Five\nVerify: test -f five.txt\n\n## T6: Six\nVerify: test -f six.txt\n";

/// A project whose agent runs `body` (with `$task` and its attempt `$n`) as a Slurm
/// job, with a bare repository beside it as `origin`; the remote's directory too.
pub fn project(plan: &str, workers: u32, body: &str) -> (Project, tempfile::TempDir, String) {
    project_on(cluster(), plan, workers, body)
}

pub fn project_on(
    conf: String,
    plan: &str,
    workers: u32,
    body: &str,
) -> (Project, tempfile::TempDir, String) {
    let (mut p, remote) = crate::support::remote_project(plan, body, |agent| {
        format!(
            "[run]\nagent = \"scripted\"\nworkers = {workers}\n\n[agents.scripted]\ncommand = [\"sh\", \"{}\"]\ntimeout = \"120s\"\nenv = {{ AGENT_KEY = \"cfg-s3cr3t-key\" }}\n\n[executor]\nkind = \"slurm\"\npoll = \"200ms\"\n",
            agent.display()
        )
    });
    p.env.push(("SLURM_CONF".into(), conf.clone()));
    (p, remote, conf)
}

/// The Slurm job of each iteration so far, by iteration.
pub fn jobs(p: &Project) -> Vec<(PathBuf, String)> {
    crate::support::iteration_jobs(p, "slurm.job")
}

/// Waits until the first job's agent says `started` in its log.
pub fn first_job_started(p: &Project) {
    wait_for(p, "the first job at work", |p| {
        jobs(p).first().is_some_and(|(dir, _)| {
            std::fs::read_to_string(dir.join("agent.log")).is_ok_and(|l| l.contains("started"))
        })
    });
}

/// One task.
pub const ONE: &str = "# One\n\n## T1: One\nVerify: test -f one.txt\n";

/// An agent whose first attempt works for a minute (long enough to be killed at
/// work), and whose next one does the task.
pub const SLOW_FIRST: &str =
    "if [ $n = 1 ]; then echo started; sleep 60; fi\ntouch one.txt\necho TASK_COMPLETE";

/// `run` in the project, SIGKILLed once its first job is at work: the job outlives it.
pub fn killed_at_work(p: &Project) {
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(p);
    driver.kill().unwrap();
    driver.wait().unwrap();
}

const MAKE: &str = "case $task in T1) f=one;; T2) f=two;; T3) f=three;; T4) f=four;; T5) f=five;; T6) f=six;; esac\ntouch $f.txt\necho TASK_COMPLETE";

#[test]
fn six_tasks_on_three_workers_run_as_slurm_jobs_to_verified_completion() {
    let body = format!("echo \"key ${{AGENT_KEY:-none}}\"\n{MAKE}");
    let (mut p, remote, conf) = project(SIX, 3, &body);
    // Every squeue the driver runs, logged: one per round for all its jobs.
    let wrap = p.cache.path().join("wrap");
    std::fs::create_dir_all(&wrap).unwrap();
    let real = String::from_utf8(
        Command::new("sh")
            .args(["-c", "command -v squeue"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::fs::write(
        wrap.join("squeue"),
        format!(
            "#!/bin/sh\necho \"$*\" >> {}/calls\nexec {} \"$@\"\n",
            wrap.display(),
            real.trim()
        ),
    )
    .unwrap();
    Command::new("chmod")
        .arg("+x")
        .arg(wrap.join("squeue"))
        .status()
        .unwrap();
    let path = format!("{}:{}", wrap.display(), std::env::var("PATH").unwrap());
    p.env.push(("PATH".into(), path));
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    let s = p.status();
    assert_eq!(s["status"], "completed");
    let jobs = jobs(&p);
    assert_eq!(jobs.len(), 6, "{jobs:?}");
    for (dir, id) in &jobs {
        assert_eq!(job_state(&conf, id), "COMPLETED", "job {id}");
        // No time_limit set: the agent's timeout (120 s) and ten minutes.
        let limit = slurm(
            &conf,
            "squeue",
            &["--states=all", "-h", "-j", id, "-O", "TimeLimit"],
        );
        assert_eq!(limit, "12:00", "job {id}");
        // The job's output, streamed into the iteration's log: the agent ran in a
        // clone of its own, not in the task's worktree.
        let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
        assert!(log.contains("attempt 1, in /"), "{log}");
        assert!(log.contains("agentloop-job-"), "{log}");
        // The agent's own variable reached it, though not through its batch script
        // (which the controller keeps, and shows to `scontrol`): through a file only
        // the user reads, gone once the job read it.
        assert!(log.contains("key ") && !log.contains("key none"), "{log}");
        let script = slurm(&conf, "scontrol", &["write", "batch_script", id, "-"]);
        assert!(script.contains("agentloop"), "{script}");
        assert!(!script.contains("cfg-s3cr3t"), "{script}");
        assert!(!dir.join("job-secrets.json").exists());
    }
    // Each job's course is in the journal.
    let log = p.run(&["log"]).stdout;
    for (_, id) in &jobs {
        for state in ["SUBMITTED", "COMPLETED"] {
            assert!(log.contains(&format!("Slurm job {id} {state}")), "{log}");
        }
    }
    let calls = std::fs::read_to_string(wrap.join("calls")).unwrap();
    assert!(
        calls.lines().any(|l| l.contains("-j ")
            && l.split("-j ")
                .nth(1)
                .unwrap()
                .split(' ')
                .next()
                .unwrap()
                .contains(',')),
        "no squeue asked about several jobs at once:\n{calls}"
    );
    // Every task's file is on the integration branch; nothing is left on the remote
    // but what was there.
    let branch = format!("agentloop/{}", s["run_id"].as_str().unwrap());
    let files = p.git_cmd(&["ls-tree", "--name-only", &branch]);
    for f in ["one", "two", "three", "four", "five", "six"] {
        assert!(files.contains(&format!("{f}.txt")), "{files}");
    }
    let refs = Command::new("git")
        .args(["for-each-ref", "--format=%(refname)"])
        .current_dir(remote.path().join("origin.git"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&refs.stdout).trim(),
        "refs/heads/main"
    );
}

#[test]
fn a_job_cancelled_by_someone_else_is_an_interrupted_iteration_and_the_task_is_redone() {
    let (p, _remote, conf) = project(ONE, 1, SLOW_FIRST);
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(&p);
    let (_, id) = jobs(&p).remove(0);
    // An administrator cancels it.
    slurm(&conf, "scancel", &[&id]);
    let st = wait_exit(&mut driver, Duration::from_secs(60));
    assert_eq!(st.code(), Some(0));
    assert!(job_state(&conf, &id).starts_with("CANCELLED"));
    let s = p.status();
    assert_eq!(s["status"], "completed");
    let log = p.run(&["log", "--json"]).stdout;
    let first = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["event"].clone())
        .find(|e| e["kind"] == "iteration_finished")
        .unwrap()["data"]
        .clone();
    assert_eq!(first["outcome"], "aborted", "{first}");
    let reason = first["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("Slurm job {id} ended CANCELLED")),
        "{reason}"
    );
    // Redone, and not counted as a failed attempt.
    assert_eq!(jobs(&p).len(), 2);
    assert_eq!(s["tasks"][0]["attempts"], 1, "{}", s["tasks"][0]);
}

#[test]
fn stop_now_cancels_every_job() {
    let (p, _remote, conf) = project(SIX, 3, "echo started\nsleep 60\necho TASK_COMPLETE");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "three jobs at work", |p| {
        let j = jobs(p);
        j.len() == 3
            && j.iter().all(|(dir, _)| {
                std::fs::read_to_string(dir.join("agent.log")).is_ok_and(|l| l.contains("started"))
            })
    });
    // Each worker's lane names its job and where it stands.
    wait_for(&p, "three jobs seen running", |p| {
        let lanes = p.status()["workers"]["lanes"].clone();
        lanes.as_array().is_some_and(|l| {
            l.len() == 3
                && l.iter().all(|l| {
                    l["job"]
                        .as_str()
                        .is_some_and(|j| j.starts_with("Slurm job ") && j.ends_with(" RUNNING"))
                })
        })
    });
    let shown = p.run(&["status"]).stdout;
    assert!(
        shown.contains(" · agent · attempt 1 of at most "),
        "{shown}"
    );
    assert!(shown.contains(" RUNNING\n"), "{shown}");
    let t = std::time::Instant::now();
    assert_eq!(p.run(&["stop", "--now"]).code, Some(0));
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(30)).code(),
        Some(6)
    );
    assert!(t.elapsed() < Duration::from_secs(15), "{:?}", t.elapsed());
    assert_eq!(p.status()["status"], "stopped");
    for (_, id) in jobs(&p) {
        let state = job_state(&conf, &id);
        assert!(state.starts_with("CANCELLED"), "job {id}: {state}");
    }
    assert_eq!(jobs(&p).len(), 3, "no job after the stop");
}

#[test]
fn a_job_that_rewrites_its_own_check_gets_no_task_marked_done() {
    // The check is a script in the project; the agent makes it pass by rewriting it.
    let (p, _remote, _conf) = project(
        "# One\n\n## T1: One\nVerify: sh tests/t1.sh\n",
        1,
        "printf 'exit 0\\n' > tests/t1.sh\necho TASK_COMPLETE",
    );
    p.write("tests/t1.sh", "test -f one.txt\n");
    p.commit("the check");
    let r = p.run(&["run", "--quiet", "--no-wait"]);
    let s = p.status();
    assert_ne!(s["tasks"][0]["status"], "done", "{}", s["tasks"][0]);
    assert!(!jobs(&p).is_empty());
    // The rewrite came back from the node and was caught as a change to what
    // verifies the task: a question for a person.
    assert!(crate::support::journal_has(&p, "\"gate_opened\""));
    assert_eq!(r.code, Some(5), "waiting for a person: {}", r.stderr);
}

#[test]
fn a_killed_driver_leaves_a_job_that_resume_cancels_before_redoing_its_task() {
    let (p, _remote, conf) = project(ONE, 1, SLOW_FIRST);
    killed_at_work(&p);
    let (_, id) = jobs(&p).remove(0);
    assert_eq!(
        job_state(&conf, &id),
        "RUNNING",
        "the job outlives its driver"
    );
    // When it fails (under load in CI it once exited 1 with nothing said, and once
    // ran past the test's time), say why: how the run ended, its last records, and
    // Slurm's view of the jobs; for a hang, what each process waited on.
    let r = p
        .run_within(&["resume", "--quiet"], Duration::from_secs(100))
        .unwrap_or_else(|stuck| {
            panic!(
                "{stuck}\nlog: {}\njobs: {:?}\nsqueue: {}",
                p.run(&["log"]).stdout,
                jobs(&p)
                    .iter()
                    .map(|(_, id)| format!("{id} {}", job_state(&conf, id)))
                    .collect::<Vec<_>>(),
                slurm(
                    &conf,
                    "squeue",
                    &["--states=all", "-h", "-O", "JobID,State,Reason,Name"]
                ),
            )
        });
    assert_eq!(
        r.code,
        Some(0),
        "{}\n{}\nstatus: {}\nlog: {}\njobs: {:?}",
        r.stdout,
        r.stderr,
        p.run(&["status"]).stdout,
        p.run(&["log"]).stdout,
        jobs(&p)
            .iter()
            .map(|(_, id)| format!("{id} {}", job_state(&conf, id)))
            .collect::<Vec<_>>()
    );
    assert!(job_state(&conf, &id).starts_with("CANCELLED"));
    assert_eq!(p.status()["status"], "completed");
    assert_eq!(jobs(&p).len(), 2);
}

#[test]
fn an_executor_that_cannot_be_set_up_is_refused_before_the_run_exists() {
    let p = Scratch::new()
        .plan("# One\n\n## T1: One\nVerify: true\n")
        .build();
    for (config, says) in [
        (
            "[executor]\nkind = \"slurm\"\n",
            "[executor] remote `origin` is neither a remote of this repository nor a URL",
        ),
        (
            "[executor]\nkind = \"slurm\"\nremote = \"/nowhere/x.git\"\n[executor.slurm]\npartition = \"main --wrap=x\"\n",
            "executor.slurm.partition: `main --wrap=x` is not a plain value",
        ),
        (
            "[executor]\nkind = \"slurm\"\nremote = \"/nowhere/x.git\"\n[executor.slurm]\ncpus = 0\n",
            "executor.slurm.cpus: a job needs at least 1",
        ),
        (
            "[executor]\nkind = \"slurm\"\nremote = \"/nowhere/x.git\"\n[executor.slurm]\ntime_limit = \"forever\"\n",
            "executor.slurm.time_limit: `forever` is not a Slurm time",
        ),
        (
            "[executor]\nkind = \"slurm\"\nremote = \"/nowhere/x.git\"\n[executor.slurm]\nmemory = \"99999999999T\"\n",
            "executor.slurm.memory: `99999999999T` is not a Slurm memory size",
        ),
        (
            "[executor]\nkind = \"slurm\"\nremote = \"/nowhere/x.git\"\nprogram = \"\"\n",
            "executor.program: empty",
        ),
        (
            "[executor]\nkind = \"k8s\"\n",
            "executor.kind: unknown variant `k8s`",
        ),
        (
            "[executor]\nkind = \"slurm\"\nremote = \"/nowhere/x.git\"\n[sandbox]\nmode = \"workspace\"\n",
            "[sandbox] confines processes on this machine",
        ),
    ] {
        p.write(
            "agentloop.toml",
            format!("[run]\nagent = \"a\"\n[agents.a]\ncommand = [\"true\"]\n{config}"),
        );
        let r = p.run(&["run", "--quiet"]);
        assert_eq!(r.code, Some(2), "{config}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{config}: {}", r.stderr);
        assert!(!p.path().join(".agentloop/runs").exists(), "{config}");
    }
}

#[test]
fn a_job_lost_with_its_node_is_an_interrupted_iteration_and_the_task_is_redone() {
    // A cluster of its own: its one node goes down.
    let conf = cluster_in("slurm-node-down", "ensure");
    let (p, _remote, conf) = project_on(conf, ONE, 1, SLOW_FIRST);
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(&p);
    let (_, id) = jobs(&p).remove(0);
    let node = slurm(&conf, "sinfo", &["-h", "-o", "%n"]);
    let down = Command::new("scontrol")
        .args([
            "update",
            &format!("nodename={node}"),
            "state=down",
            "reason=agentloop-test",
        ])
        .env("SLURM_CONF", &conf)
        .output()
        .unwrap();
    assert!(
        down.status.success(),
        "{}",
        String::from_utf8_lossy(&down.stderr)
    );
    // The node comes back by itself (ReturnToService=2, its slurmd still answers), or
    // is told to.
    wait_for(&p, "the node back", |_| {
        let _ = Command::new("scontrol")
            .args(["update", &format!("nodename={node}"), "state=resume"])
            .env("SLURM_CONF", &conf)
            .output();
        slurm(&conf, "sinfo", &["-h", "-o", "%T"]).starts_with("idle")
            || slurm(&conf, "sinfo", &["-h", "-o", "%T"]).starts_with("mixed")
    });
    let st = wait_exit(&mut driver, Duration::from_secs(60));
    assert_eq!(st.code(), Some(0));
    assert_eq!(job_state(&conf, &id), "NODE_FAIL");
    assert!(crate::support::journal_has(
        &p,
        &format!("interrupted: Slurm job {id} ended NODE_FAIL before its result was pushed")
    ));
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(s["tasks"][0]["attempts"], 1, "{}", s["tasks"][0]);
    cluster_in("slurm-node-down", "stop");
}

#[test]
fn a_node_without_agentloop_stops_the_run_with_what_the_job_said() {
    let (p, _remote, _conf) = project(ONE, 1, "touch one.txt\necho TASK_COMPLETE");
    let mut config = p.read("agentloop.toml");
    config.push_str("program = \"/nowhere/agentloop\"\n");
    p.write("agentloop.toml", config);
    p.commit("agentloop is not on the nodes");
    let r = p.run(&["run", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("ended without a result") && r.stderr.contains("/nowhere/agentloop"),
        "{}",
        r.stderr
    );
    assert_ne!(p.status()["tasks"][0]["status"], "done");
}

#[test]
fn a_result_planted_by_an_earlier_agent_is_never_taken_for_a_later_jobs() {
    // The first attempt's agent pushes, from its node, a made-up result for the next
    // iteration (the work done, a claim) and fails; the next attempt's agent kills its
    // own job so that it pushes nothing. The planted result must not be judged.
    let plant = r#"if [ $n = 1 ]; then
  base=$(git rev-parse HEAD)
  echo done > one.txt
  git add one.txt
  tree=$(git write-tree)
  git reset -q
  rm one.txt
  out='{"exit_code":0,"signal":null,"timed_out":false,"killed":false,"duration_ms":1,"output_bytes":1,"truncated":false,"tail":"","stderr_tail":"","final_message":"TASK_COMPLETE","usage":{"input_tokens":0,"cached_input_tokens":0,"cache_write_tokens":0,"output_tokens":0},"cost_usd":0.0,"session_id":null,"error":null,"resets_at_ms":null}'
  c=$(printf 'agentloop: result of iteration 2 of run %s\n\n%s\n' "$AGENTLOOP_RUN" "$out" | git -c user.name=a -c user.email=a@a commit-tree $tree -p $base)
  git push -q --force "$(git remote get-url origin)" $c:refs/agentloop/$AGENTLOOP_RUN/2 && echo planted
  exit 1
fi
kill -TERM $PPID
sleep 10"#;
    let (p, _remote, _conf) = project(ONE, 1, plant);
    let r = p.run(&["run", "--no-wait"]);
    let log = p.run(&["log"]).stdout;
    assert_ne!(r.code, Some(0), "{}\n{log}", r.stderr);
    let first = std::fs::read_to_string(jobs(&p)[0].0.join("agent.log")).unwrap();
    assert!(first.contains("planted"), "{first}");
    assert_ne!(p.status()["tasks"][0]["status"], "done", "{log}");
    assert!(r.stderr.contains("ended without a result"), "{}", r.stderr);
}
