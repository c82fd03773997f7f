//! The project's tree watched between snapshots: an iteration that touched nothing
//! costs no git process, one that touched a few files one narrow question, and a
//! claim is judged on a full look — a file changed where the kernel does not report it
//! (through a hard link from outside the tree) is still seen by the iteration that claims.

use crate::support::{Project, Scratch};

/// A scripted agent that counts its iterations (`$n`) in an ignored directory, out of
/// git's sight (the usual prelude keeps its count under `.git`, and the repository
/// changing sends every snapshot back to git for the whole tree).
fn counting(body: &str) -> String {
    format!(
        "cat > /dev/null\nmkdir -p .state\nn=$(cat .state/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > .state/n\necho working on it\n{body}"
    )
}

/// Every git command the driver runs, logged by a stand-in that runs the real one (in
/// the ignored `.state/`: a log under `.git` would be a change of the repository).
fn log_git(mut p: Project) -> (Project, std::path::PathBuf) {
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v git"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let shim = p.path().join(".state/shim");
    std::fs::create_dir_all(&shim).unwrap();
    let log = p.path().join(".state/git.log");
    p.write(
        ".state/shim/git",
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n",
            log.display(),
            real.trim()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(shim.join("git"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", shim.display(), std::env::var("PATH").unwrap());
    p.env.push(("PATH".into(), path));
    (p, log)
}

#[test]
fn a_watched_project_asks_git_only_about_what_an_iteration_touched() {
    // Three iterations without a claim (the first two write a note, the second also
    // nothing else, the third nothing at all), then the claim.
    let p = Scratch::new()
        .plan("# W\n\n## T1: Notes\nVerify: true\n")
        .file("src/lib.txt", "lib\n")
        .file(".state/.gitignore", "*\n")
        .agent(&counting(
            "case $n in\n1|2) echo $n > note$n.txt ;;\n3) : ;;\n*) echo TASK_COMPLETE ;;\nesac\n",
        ))
        .build();
    let (p, log) = log_git(p);
    let r = p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(p.status()["tasks"][0]["status"], "done");
    assert_eq!(p.status()["iterations"], 4);
    let log = std::fs::read_to_string(log).unwrap();
    // The snapshots' `git status` (not the one-off look for uncommitted work at start).
    let statuses: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(" status --porcelain=v2"))
        .collect();
    let narrow: Vec<&&str> = statuses.iter().filter(|l| l.contains(" -- ")).collect();
    // The first look and the claim ask about the whole tree; iterations 1 and 2 about
    // their note only; iteration 3 asks nothing.
    assert_eq!(statuses.len() - narrow.len(), 2, "{log}");
    assert_eq!(narrow.len(), 2, "{log}");
    assert!(narrow[0].ends_with(" -- note1.txt"), "{log}");
    assert!(narrow[1].ends_with(" -- note2.txt"), "{log}");
}

#[test]
fn a_file_changed_behind_the_watch_is_still_judged_by_the_claim() {
    // Iteration 1 rewrites src/lib.txt through a hard link made outside the tree (the
    // kernel reports that write to no watch of the tree) and does not claim;
    // iteration 2 claims. The task's scope is notes/.
    let behind = "ln src/lib.txt ../behind-$$ && printf 'LIB\\n' > ../behind-$$ && rm ../behind-$$";
    let p = Scratch::new()
        .plan("# W\n\n## T1: Notes\nScope: notes/\nVerify: true\n")
        .file("src/lib.txt", "lib\n")
        .file(".state/.gitignore", "*\n")
        .agent(&counting(&format!(
            "if [ \"$n\" = 1 ]; then\nmkdir -p notes && echo a > notes/a.txt\n{behind}\nelse\necho TASK_COMPLETE\nfi\n"
        )))
        .build();
    p.run(&["run", "--no-wait", "--quiet"]);
    assert_eq!(p.read("src/lib.txt"), "LIB\n");
    let journal = p.read(&format!(
        ".agentloop/runs/{}/journal.jsonl",
        p.status()["run_id"].as_str().unwrap()
    ));
    let judged = journal
        .lines()
        .find(|l| l.contains("\"iteration_finished\"") && l.contains("\"iteration\":2,"))
        .unwrap_or_default();
    assert!(
        judged.contains("changed files outside the task's scope (notes/): src/lib.txt"),
        "{journal}"
    );
}
