//! `[sandbox] mode = "workspace"` under the real bubblewrap: the agent's work inside
//! the project goes on; a write outside it, a read of a planted key and a write into
//! `.agentloop/` fail, and nothing outside the project changed.

use crate::support::{Scratch, agent};

const AGENT: &str = r#"echo x > "$HOME/outside" 2>/dev/null && echo WROTE_OUTSIDE
cat "$HOME/.ssh/id_rsa" 2>/dev/null | grep -q PRIVATE && echo READ_KEY
echo y > .agentloop/evil 2>/dev/null && echo WROTE_STATE
touch a.txt
echo TASK_COMPLETE
"#;

#[test]
fn a_sandboxed_agent_works_in_the_project_and_nowhere_else() {
    // A home outside /tmp (the sandbox's /tmp is its own) and outside the project.
    let home = tempfile::Builder::new()
        .prefix("agentloop-home-")
        .tempdir_in("/var/tmp")
        .unwrap();
    std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
    std::fs::write(
        home.path().join(".ssh/id_rsa"),
        "-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n",
    )
    .unwrap();
    let mut p = Scratch::new()
        .plan("# Boxed\n\n## T1: Make a.txt\nVerify: test -f a.txt\n")
        .agent(&agent(AGENT))
        .build();
    p.env
        .push(("HOME".into(), home.path().display().to_string()));
    let listing = |d: &std::path::Path| {
        let mut v: Vec<String> = walk(d);
        v.sort();
        v
    };
    let before = listing(home.path());
    let r = p.run(&["run", "--sandbox", "workspace"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let log = std::fs::read_to_string(p.run_dir().join("iterations/0001/agent.log")).unwrap();
    for bad in ["WROTE_OUTSIDE", "READ_KEY", "WROTE_STATE"] {
        assert!(!log.contains(bad), "{bad}: {log}");
    }
    assert_eq!(listing(home.path()), before, "nothing outside changed");
    assert!(!p.path().join(".agentloop/evil").exists());
    assert!(p.path().join("a.txt").exists());
    // Without bubblewrap, the mode refuses to start, and says how to get it.
    let p2 = Scratch::new()
        .plan("# Boxed\n\n## T1: Make a.txt\nVerify: test -f a.txt\n")
        .agent(&agent(AGENT))
        .config("\n[sandbox]\nmode = \"workspace\"\nbwrap = \"/nonexistent/bwrap\"\n")
        .build();
    let r = p2.run(&["run"]);
    assert_eq!(r.code, Some(2), "{}", r.stderr);
    assert!(
        r.stderr.contains("apt-get install bubblewrap"),
        "{}",
        r.stderr
    );
    assert_eq!(p2.run(&["status"]).code, Some(2), "no run was made");
}

fn walk(d: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
        let p = e.path();
        out.push(p.display().to_string());
        if p.is_dir() {
            out.extend(walk(&p));
        }
    }
    out
}

/// `agentloop agents` says whether the sandbox can work here.
#[test]
fn the_probe_reports_sandbox_support() {
    let p = crate::support::Project::git();
    let r = p.run(&["agents"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("sandbox: bwrap works here"),
        "{}",
        r.stdout
    );
    p.write(
        "agentloop.toml",
        "[sandbox]\nbwrap = \"/nonexistent/bwrap\"\n",
    );
    let r = p.run(&["agents"]);
    assert!(
        r.stdout
            .contains("sandbox: not available: bubblewrap (/nonexistent/bwrap) is not installed"),
        "{}",
        r.stdout
    );
}
