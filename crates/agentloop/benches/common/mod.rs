//! What the benches share: their settings from the environment and git in a scratch
//! repository.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tools `scripts/test` installs (`.tools/`: pytest, jest, …).
#[allow(dead_code)] // not every bench runs a test runner
pub fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.tools")
}

/// Writes `text` to `rel` under `root`, making its directories.
#[allow(dead_code)] // not every bench writes a fixture
pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// A whole-number setting from the environment, or its default.
#[allow(dead_code)] // not every bench takes one
pub fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A comma-separated list of numbers from the environment (`default` when unset).
#[allow(dead_code)] // not every bench takes a list
pub fn env_list<T: std::str::FromStr>(name: &str, default: &str) -> Vec<T> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect()
}

/// Runs git in `root` with a fixed identity; panics when it fails.
#[allow(dead_code)] // not every bench has a repository
pub fn git(root: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .current_dir(root)
        .output()
        .unwrap()
        .status
        .success();
    assert!(ok, "git {args:?}");
}

/// Keeps the bench's state (journal key, run registry) and caches (clean copies) in
/// `root`, for this process and the agentloop processes it starts, so the bench can
/// read the journals they seal. Call first, before any thread starts.
#[allow(dead_code)] // not every bench starts agentloop in a repository
pub fn isolate(root: &Path) {
    // SAFETY: called at the top of main, while the bench is still single-threaded.
    unsafe {
        std::env::set_var("XDG_STATE_HOME", root.join(".git/state"));
        std::env::set_var("XDG_CACHE_HOME", root.join(".git/cache"));
    }
}

/// The median time, in ms, of making one empty file in a new directory under `root`
/// (100 made, then removed): on some machines far from the same everywhere.
#[allow(dead_code)] // not every bench reports it
pub fn create_cost(root: &Path) -> f64 {
    let dir = root.join(".git/create-probe");
    std::fs::create_dir_all(&dir).unwrap();
    let mut ms: Vec<f64> = (0..100)
        .map(|i| {
            let t = std::time::Instant::now();
            std::fs::File::create(dir.join(i.to_string())).unwrap();
            t.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    std::fs::remove_dir_all(&dir).unwrap();
    ms.sort_by(f64::total_cmp);
    ms[50]
}

/// A committed git repository in `root` with `files` source files and a plan of
/// `tasks` trivial tasks, driven by an agent that runs `agent` through `sh -c`;
/// `config` is added to its `agentloop.toml`.
#[allow(dead_code)] // not every bench drives a plan
pub fn trivial_project(root: &Path, tasks: usize, files: usize, agent: &str, config: &str) {
    git(root, &["init", "-q"]);
    let mut plan = String::from("# Overhead\n\n");
    for i in 0..tasks {
        plan.push_str(&format!("## T{i}: task {i}\n\nNothing to do.\n\n"));
    }
    std::fs::write(root.join("PLAN.md"), plan).unwrap();
    for i in 0..files {
        let d = root.join(format!("src/m{}", i / 100));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join(format!("f{i}.rs")),
            format!("pub fn f{i}() -> u32 {{ {i} }}\n"),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("agentloop.toml"),
        format!(
            "[run]\nagent = \"noop\"\nshape = \"tool\"\n[budgets]\nmax_iterations = {}\n[agents.noop]\ncommand = [\"sh\", \"-c\", {agent:?}]\n{config}",
            // As many as the plan may have without `--force`.
            agentloop_ground::values::iteration_ceiling(tasks)
        ),
    )
    .unwrap();
    std::fs::write(root.join(".gitignore"), ".agentloop/\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "bench"]);
}

/// A git repository in `root` with `tasks` independent tasks (`Verify: test -f
/// out/tN`), whose scripted agent `fixed` sleeps `seconds` then makes its task's file;
/// `config` goes after its `[run]` (workers) and `[agents.fixed]` tables. Committed.
#[allow(dead_code)] // not every bench runs the parallel plan
pub fn parallel_project(
    root: &Path,
    tasks: usize,
    seconds: (usize, usize),
    workers: usize,
    config: &str,
) {
    git(root, &["init", "-q", "-b", "main"]);
    let mut plan = String::from("# Parallel\n\n");
    for i in 0..tasks {
        plan.push_str(&format!("## T{i}: task {i}\nVerify: test -f out/t{i}\n\n"));
    }
    std::fs::write(root.join("PLAN.md"), plan).unwrap();
    // Task i's agent takes `lo + i mod (hi - lo + 1)` seconds.
    let (lo, hi) = seconds;
    let span = hi.max(lo) - lo + 1;
    std::fs::write(
        root.join("agent.sh"),
        format!(
            "p=$(cat)\nt=$(printf '%s\\n' \"$p\" | sed -n 's/^## Your task: T\\([0-9]*\\) .*/\\1/p' | head -n 1)\nsleep $(({lo} + t % {span}))\nmkdir -p out && touch out/t$t\necho TASK_COMPLETE\n"
        ),
    )
    .unwrap();
    std::fs::write(
        root.join("agentloop.toml"),
        format!(
            "[run]\nagent = \"fixed\"\nshape = \"tool\"\nworkers = {workers}\n[budgets]\nmax_iterations = 500\n[agents.fixed]\ncommand = [\"sh\", \"{}\"]\n{config}",
            root.join("agent.sh").display()
        ),
    )
    .unwrap();
    std::fs::write(root.join(".gitignore"), ".agentloop/\n").unwrap();
    git(root, &["add", "-A"]);
    git(root, &["commit", "-qm", "bench"]);
}

/// Seconds `cmd` took to run to its end; panics with its output when it fails.
#[allow(dead_code)] // not every bench times a command
pub fn timed(cmd: &mut Command) -> f64 {
    let t = std::time::Instant::now();
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    t.elapsed().as_secs_f64()
}
