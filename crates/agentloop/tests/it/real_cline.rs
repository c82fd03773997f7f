//! The real Cline CLI (`cline`, pinned, from the npm registry) driven by agentloop
//! against the testkit's mock Chat Completions API, set up as a new user would: an
//! OpenAI-compatible provider in its settings as `cline auth` writes them, and
//! `agentloop.toml` naming the agent and the model's price.

use std::path::Path;

use crate::real_cli::{Cli, say};

/// Cline's processes whose environment names `home`: none may outlive the run (without
/// `CLINE_SESSION_BACKEND_MODE=local` its first run starts a hub daemon in a session of
/// its own, which lives on).
fn clines_of(home: &Path) -> Vec<String> {
    let home = home.display().to_string();
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let dir = e.path();
            let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let environ = std::fs::read(dir.join("environ")).ok()?;
            (cmdline.contains("cline") && String::from_utf8_lossy(&environ).contains(&home))
                .then_some(cmdline)
        })
        .collect()
}

/// Each iteration's task id is its session; nothing of Cline's is left running.
#[test]
fn two_tasks_done_through_clines_own_tools_with_cost_from_the_price_table() {
    let p = crate::real_cli::two_tasks_priced(Cli::Cline);
    let ids = crate::real_cli::sessions_recorded(&p);
    assert!(ids.iter().all(|id| id.starts_with("conv_")), "{ids:?}");
    let home = Cli::Cline.home(&p);
    assert_eq!(clines_of(&home), Vec::<String>::new());
}

#[test]
fn a_false_claim_to_cline_is_caught_and_the_next_process_told() {
    crate::real_cli::false_completion(Cli::Cline);
}

/// Cline retries a 429 five times itself (honouring `retry-after`), then gives up; the
/// run waits as the message says and goes on without spending a retry.
#[test]
fn cline_rate_limit_waits_then_completes() {
    crate::real_cli::rate_limit_after_its_own_retries(Cli::Cline, 6, |_| {});
}

#[test]
fn a_200_kib_prompt_reaches_cline_and_an_auth_error_waits_for_a_person() {
    crate::real_cli::auth_error_blocks(
        Cli::Cline,
        "invalid_api_key",
        "Incorrect API key provided: not-a-real-key.",
    );
}

/// A hub daemon the user's own Cline left running (`cline hub start`) does not take
/// the iteration: its commands would run inside the hub, in the hub's environment and
/// outside whatever confines the agent. agentloop runs Cline with its session backend
/// local, so the command sees the iteration's own environment.
#[test]
fn a_hub_the_user_left_running_does_not_run_the_iterations_commands() {
    let server = Cli::Cline.mock(vec![
        Cli::Cline.shell("echo \"run=$AGENTLOOP_RUN\" > hello.txt", 10, 1),
        say("TASK_COMPLETE", 10, 1, 0),
    ]);
    let plan = "# One\n\n## T1: Hello\nVerify: grep -q 'run=2' hello.txt\n\nCreate hello.txt.\n";
    let p = Cli::Cline.project(&server, plan, "[budgets]\nmax_iterations = 1\n");
    let hub = |verb: &str| {
        std::process::Command::new("cline")
            .args(["hub", verb])
            .envs(p.env.iter().map(|(k, v)| (k, v)))
            .current_dir(p.path())
            .output()
            .unwrap()
    };
    struct Stop<F: Fn()>(F);
    impl<F: Fn()> Drop for Stop<F> {
        fn drop(&mut self) {
            (self.0)()
        }
    }
    let started = hub("start");
    assert!(started.status.success(), "{started:?}");
    let _stop = Stop(|| {
        hub("stop");
    });
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        p.read("hello.txt").starts_with("run=2"),
        "{}",
        p.read("hello.txt")
    );
}

/// The reviewer runs in its plan mode: offered no editor. (Not held to reading: a script
/// it runs could still write, so it works in a copy.)
#[test]
fn cline_reviews_the_verified_work_in_its_plan_mode() {
    crate::real_cli::reviewed_read_only(Cli::Cline, "cline", &["\"name\":\"editor\""]);
}
