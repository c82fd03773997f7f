//! What the crate's tests share.

use std::path::Path;

/// Runs git `args` in `root` as agentloop's own git runs (hermetic), with a fixed
/// identity; panics with git's words when it fails.
pub fn git(root: &Path, args: &[&str]) {
    let mut c = crate::exec::git::git_command(root);
    c.args(["-c", "user.name=t", "-c", "user.email=t@t"]);
    let out = c.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The state of a run just created from `plan` (PLAN.md's text) with `settings`.
pub fn created(plan: &str, settings: crate::config::Settings) -> crate::journal::RunState {
    let plan = crate::plan::Plan::parse("PLAN.md", plan).unwrap();
    crate::journal::RunState::from_first(&crate::journal::Record {
        seq: 1,
        time: "2026-11-27T10:00:00.000Z".into(),
        event: crate::journal::Event::RunCreated {
            run_id: "r".into(),
            plan_file: "PLAN.md".into(),
            workdir: "/w".into(),
            plan,
            settings,
            head: None,
            tree: None,
        },
    })
    .unwrap()
}

/// `event` applied to `s` as the run's next record.
pub fn then(s: &mut crate::journal::RunState, event: crate::journal::Event) {
    let seq = s.last_seq + 1;
    s.apply(&crate::journal::Record {
        seq,
        time: "2026-11-27T10:00:01.000Z".into(),
        event,
    });
}
