//! What `[sandbox] mode = "workspace"` costs per iteration: the same plan of trivial
//! tasks driven by the real binary without and with the sandbox (bubblewrap, the
//! agent's own network namespace, the bridge and the host's proxy started for each
//! iteration), alternating, in one run; the figure is the difference in wall-clock
//! time per iteration.
//!
//! `cargo bench -p agentloop --bench sandbox` (env `TASKS`, default 100; `FILES`,
//! default 2,000; `ROUNDS`, default 3; `WORKERS`, default 0: with workers each agent
//! works in a worktree, seeing the repository through its own view, and commits a
//! file, which comes back when it ends)

#[path = "common/mod.rs"]
mod common;

use std::process::Command;
use std::time::Instant;

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let tasks = common::env_usize("TASKS", 100);
    let files = common::env_usize("FILES", 2000);
    let rounds = common::env_usize("ROUNDS", 3);
    let workers = common::env_usize("WORKERS", 0);
    let state = tempfile::tempdir().unwrap();
    common::isolate(state.path());
    // The agent also reaches its (listed) model host through the proxy once, as a
    // real agent's first request does.
    let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = server.local_addr().unwrap().port();
    std::thread::spawn(move || {
        use std::io::{Read, Write};
        for c in server.incoming().flatten() {
            let mut c = c;
            let mut buf = [0u8; 2048];
            let _ = c.read(&mut buf);
            let _ =
                c.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    let commit = if workers > 0 {
        "echo x > \"w-$$.txt\"; git add -A; git -c user.name=a -c user.email=a@b commit -qm w; "
    } else {
        ""
    };
    let agent = format!(
        "cat >/dev/null; curl -fsS -o /dev/null http://127.0.0.1:{port}/v1; {commit}echo TASK_COMPLETE"
    );
    let per = |sandbox: &str| -> f64 {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let config = format!("[sandbox]\nallow_hosts = [\"127.0.0.1:{port}\"]\n");
        common::trivial_project(root, tasks, files, &agent, &config);
        let t = Instant::now();
        let mut args = vec!["run", "--quiet", "--sandbox", sandbox];
        let n = workers.to_string();
        if workers > 0 {
            args.extend(["--workers", &n]);
        }
        let out = Command::new(env!("CARGO_BIN_EXE_agentloop"))
            .args(&args)
            .current_dir(root)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        t.elapsed().as_secs_f64() * 1000.0 / tasks as f64
    };
    let mut off = Vec::new();
    let mut on = Vec::new();
    for _ in 0..rounds {
        off.push(per("off"));
        on.push(per("workspace"));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (off, on) = (median(&mut off), median(&mut on));
    println!(
        "sandbox overhead: {tasks} tasks, {files}-file repository, {workers} workers, median of {rounds} runs each"
    );
    println!("  per iteration without the sandbox: {off:.2} ms (agent included)");
    println!("  per iteration in workspace mode:   {on:.2} ms");
    println!(
        "  the sandbox adds {:.2} ms per iteration (target: under 20 ms)",
        on - off
    );
}
