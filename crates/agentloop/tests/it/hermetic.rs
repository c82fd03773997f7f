//! agentloop's own git runs no code the agent planted: a clean/smudge filter set in the
//! repository's configuration, hooks (`core.hooksPath`, `.git/hooks/`), the user's
//! global configuration, replace objects. Each attack rewrites the task's test, in the
//! clean copy only, into `exit 0`; none gets the task done.

use crate::support::*;

/// One task whose check fails until `done.txt` exists; the agent never makes it and
/// runs `attack` instead, then claims the task.
fn attacked(attack: &str, env: &[(&str, String)]) -> Project {
    let mut p = Scratch::new()
        .plan("# One\n\n## T1: Make done.txt\nMax-iterations: 2\n\nVerify: sh tests/t1.sh\n")
        .file("tests/t1.sh", "test -f done.txt\n")
        // The hook the agent installs, ready where it can copy it from.
        .file(".git/evil-hook", HOOK)
        .agent(&agent(&format!("{attack}\necho TASK_COMPLETE\n")))
        // Only agentloop's own git is under test here: the surface (which also
        // catches git's configuration and hooks, `it::surface_traced`) stands aside.
        .config("[breakers]\ndebug_after = 0\n[verify]\non_protected_change = \"allow\"\n")
        .build();
    for (k, v) in env {
        p.env.push((k.to_string(), v.clone()));
    }
    let r = p.run(&["run", "--no-wait"]);
    assert!(r.code.is_some(), "{}", r.stderr);
    let s = p.status();
    assert_ne!(s["tasks"][0]["status"], "done", "{s:#}\n{}", r.stderr);
    // The check ran the real test, and it failed.
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(log.contains("[exit 1 after"), "{log}");
    p
}

/// A hook script that rewrites the test in whatever tree it runs in.
const HOOK: &str = "#!/bin/sh\nprintf 'exit 0\\n' > tests/t1.sh\n";

#[test]
fn a_filter_the_agent_configured_does_not_run_in_agentlooops_git() {
    // `.git/info/attributes` (not a tracked file, so not on the surface) sends the test
    // through a smudge filter that replaces it, and the clean filter too.
    attacked(
        "printf 'tests/t1.sh filter=pass\\n' > .git/info/attributes\ngit config filter.pass.smudge \"printf 'exit 0\\\\n'\"\ngit config filter.pass.clean \"printf 'exit 0\\\\n'\"",
        &[],
    );
}

#[test]
fn hooks_the_agent_installed_do_not_run_in_agentloops_git() {
    // A post-checkout hook in the shared `.git/hooks/`, and one through `core.hooksPath`.
    attacked(
        "mkdir -p .git/hooks && cp .git/evil-hook .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout",
        &[],
    );
    attacked(
        "mkdir -p .git/evil-hooks && cp .git/evil-hook .git/evil-hooks/post-checkout && chmod +x .git/evil-hooks/post-checkout\ngit config core.hooksPath \"$PWD/.git/evil-hooks\"",
        &[],
    );
}

#[test]
fn the_users_global_git_configuration_is_not_read_by_agentloops_git() {
    // The agent writes the user's `~/.gitconfig` (an unsandboxed agent can).
    let home = tempfile::tempdir().unwrap();
    let hooks = home.path().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let attack = format!(
        "cp .git/evil-hook {hooks}/post-checkout && chmod +x {hooks}/post-checkout\nprintf '[core]\\n\\thooksPath = {hooks}\\n' > \"$HOME/.gitconfig\"",
        hooks = hooks.display()
    );
    attacked(&attack, &[("HOME", home.path().display().to_string())]);
}

#[test]
fn a_replace_object_does_not_swap_the_test_agentloop_checks_out() {
    // `git replace` makes every read of the test's blob return another one.
    attacked(
        "old=$(git rev-parse HEAD:tests/t1.sh)\nnew=$(printf 'exit 0\\n' | git hash-object -w --stdin)\ngit replace \"$old\" \"$new\"",
        &[],
    );
}

#[test]
fn a_loose_object_overwritten_in_place_does_not_become_the_test() {
    // The test's blob in the object database holds another test under the same id:
    // git reads it without checking, so a checkout of the baseline gets `exit 0`
    // (the agent removes the clean copy too, so that it is checked out again).
    // agentloop keeps its own copy of the baseline and checks what the checkout wrote.
    let p = Scratch::new()
        .plan("# One\n\n## T1: Make done.txt\nMax-iterations: 2\n\nVerify: sh tests/t1.sh\n")
        .file("tests/t1.sh", "test -f done.txt\n")
        .agent(&agent(
            "old=$(git rev-parse HEAD:tests/t1.sh)\n\
             new=$(printf 'exit 0\\n' | git hash-object -w --stdin)\n\
             at=.git/objects/$(echo $old | cut -c1-2)/$(echo $old | cut -c3-)\n\
             chmod u+w \"$at\"\n\
             cp -f .git/objects/$(echo $new | cut -c1-2)/$(echo $new | cut -c3-) \"$at\"\n\
             git worktree list --porcelain | sed -n 's/^worktree //p' | grep checkouts | xargs rm -rf\n\
             echo TASK_COMPLETE\n",
        ))
        .config("[breakers]\ndebug_after = 0\n")
        .build();
    let r = p.run(&["run", "--no-wait"]);
    assert!(r.code.is_some(), "{}", r.stderr);
    // The attack took: git itself now gives the forged test for the baseline's id.
    let old = p.git_cmd(&["rev-parse", "HEAD:tests/t1.sh"]);
    assert_eq!(p.git_cmd(&["cat-file", "blob", old.trim()]), "exit 0\n");
    let s = p.status();
    assert_ne!(s["tasks"][0]["status"], "done", "{s:#}\n{}", r.stderr);
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/verify.log")).unwrap();
    assert!(log.contains("[exit 1 after"), "{log}");
    assert!(
        r.stderr.contains(
            "the repository's objects for tests/t1.sh are not the baseline's (changed in place): the checks got agentloop's own copy"
        ),
        "{}",
        r.stderr
    );
}

#[test]
fn the_persons_global_ignore_file_still_counts() {
    // The person's `~/.gitconfig` names a global ignore file: agentloop's git skips the
    // rest of that configuration, but what they ignore everywhere stays ignored.
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("ignore"), "*.scratch\n").unwrap();
    std::fs::write(
        home.path().join(".gitconfig"),
        format!(
            "[core]\n\texcludesFile = {}/ignore\n",
            home.path().display()
        ),
    )
    .unwrap();
    let mut p = Scratch::new()
        .plan("# One\n\n## T1: Make done.txt\n\nVerify: sh tests/t1.sh\n")
        .file("tests/t1.sh", "test -f done.txt\n")
        .agent(&agent("touch done.txt notes.scratch\necho TASK_COMPLETE\n"))
        .build();
    p.env
        .push(("HOME".into(), home.path().display().to_string()));
    let r = p.run(&["run", "--no-wait"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let journal = std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap();
    let finished = journal
        .lines()
        .find(|l| l.contains("\"kind\":\"agent_finished\""))
        .unwrap();
    assert!(finished.contains("done.txt"), "{finished}");
    assert!(!finished.contains("notes.scratch"), "{finished}");
}
