//! A test project in a temp dir, and the real binary run inside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_agentloop");

pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/demo")
}

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad-input")
}

pub struct Project {
    pub dir: tempfile::TempDir,
}

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Run {
    fn from(o: Output) -> Run {
        Run {
            code: o.status.code(),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Project {
    /// An empty git repository.
    pub fn git() -> Project {
        let p = Project {
            dir: tempfile::Builder::new()
                .prefix("agentloop-it-")
                .tempdir()
                .unwrap(),
        };
        p.git_cmd(&["init", "-q", "-b", "main"]);
        p
    }

    /// The bundled example project, committed.
    pub fn example() -> Project {
        let p = Project::git();
        copy_dir(&examples_dir(), p.path());
        p.write(".gitignore", ".agentloop/\n");
        p.commit("example project");
        p
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, rel: &str, text: impl AsRef<[u8]>) {
        let p = self.path().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path().join(rel)).unwrap()
    }

    pub fn git_cmd(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .current_dir(self.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn commit(&self, msg: &str) {
        self.git_cmd(&["add", "-A"]);
        self.git_cmd(&["commit", "-q", "-m", msg]);
    }

    /// The binary, run in the project with an isolated environment.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.args(args)
            .current_dir(self.path())
            .env("XDG_CONFIG_HOME", self.path().join(".xdg-config-not-there"))
            .env("XDG_STATE_HOME", self.path().join(".git/xdg-state"))
            .env("NO_COLOR", "1")
            .env_remove("AGENTLOOP_FAILPOINT")
            .stdin(Stdio::null());
        c
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.cmd(args).output().unwrap().into()
    }

    /// The newest run's status as JSON.
    pub fn status(&self) -> serde_json::Value {
        let r = self.run(&["status", "--json"]);
        assert_eq!(r.code, Some(0), "status failed: {}", r.stderr);
        serde_json::from_str(&r.stdout).unwrap()
    }

    pub fn run_dir(&self) -> PathBuf {
        let runs = self.path().join(".agentloop/runs");
        let mut ids: Vec<_> = std::fs::read_dir(&runs)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        ids.sort();
        ids.pop().unwrap()
    }

    /// Every file under the project (including .git and .agentloop) with its bytes.
    pub fn tree(&self) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        walk(self.path(), self.path(), &mut out);
        out
    }
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            out.insert(
                p.strip_prefix(root).unwrap().display().to_string(),
                std::fs::read(&p).unwrap_or_default(),
            );
        }
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// Replaces what changes from run to run (paths, ids, times, pids) for snapshots.
pub fn redact(p: &Project, text: &str) -> String {
    let mut t = text.replace(p.path().to_str().unwrap(), "[DIR]");
    for (re, to) in [
        (r"\d{8}-\d{6}-\d{3}-[0-9a-f]{4}", "[RUN]"),
        (r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z", "[TIME]"),
        (r"\b\d{2}:\d{2}:\d{2}\b", "[HH:MM:SS]"),
        (r"pid \d+", "pid [PID]"),
        (r"\d+\.\d+s\b", "[SECS]"),
        (r"\b[0-9a-f]{12}\b", "[COMMIT]"),
        (r"fingerprint [0-9a-f]{8}", "fingerprint [FP]"),
        (r"\d+ bytes", "[N] bytes"),
    ] {
        t = regex_lite(re, to, &t);
    }
    t
}

fn regex_lite(re: &str, to: &str, text: &str) -> String {
    regex::Regex::new(re)
        .unwrap()
        .replace_all(text, to)
        .into_owned()
}

/// Writes a plan and an agentloop.toml whose `scripted` agent runs `script` (sh).
pub fn scripted(p: &Project, plan: &str, script: &str, extra_config: &str) {
    p.write("PLAN.md", plan);
    p.write("agent.sh", script);
    p.write(
        "agentloop.toml",
        format!(
            "[run]\nagent = \"scripted\"\n\n[agents.scripted]\ncommand = [\"sh\", \"agent.sh\"]\ntimeout = \"60s\"\n\n{extra_config}"
        ),
    );
    p.write(".gitignore", ".agentloop/\n");
    p.commit("setup");
}

/// Processes whose working directory is inside `dir`.
pub fn processes_in(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|c| c.starts_with(dir)))
        .filter(|e| {
            std::fs::read_to_string(e.path().join("stat")).is_ok_and(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
        })
        .map(|e| {
            let cmd = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            format!("{} {}", e.file_name().to_string_lossy(), cmd.trim())
        })
        .collect()
}

/// Starts a run, waits until the agent CLI is waiting on the (stalled) mock model,
/// then `stop --now`: the driver must exit 6 within seconds, leaving no process behind.
pub fn stop_now_during_a_model_call(
    p: &Project,
    server: &agentloop_testkit::MockServer,
    cli: &str,
) {
    use std::time::{Duration, Instant};
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    let t = Instant::now();
    while server.requests().iter().all(|r| r.step.is_none()) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{cli} never asked the model"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let driver_pid = format!("{} ", driver.id());
    assert!(
        processes_in(p.path())
            .iter()
            .any(|pid| !pid.starts_with(&driver_pid)),
        "{cli} is running"
    );
    let t = Instant::now();
    assert_eq!(p.run(&["stop", "--now"]).code, Some(0));
    let code = loop {
        if let Some(st) = driver.try_wait().unwrap() {
            break st.code();
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the driver did not stop"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(code, Some(6));
    assert!(
        t.elapsed() < Duration::from_secs(12),
        "stop --now took {:?}",
        t.elapsed()
    );
    assert_eq!(
        processes_in(p.path()),
        Vec::<String>::new(),
        "{cli}'s whole process group is gone"
    );
    assert_eq!(p.status()["status"], "stopped");
}

/// `agentloop serve` on a free loopback port for a project; killed when dropped.
pub struct Serve {
    pub child: std::process::Child,
    pub addr: String,
    pub token: String,
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn serve(p: &Project) -> Serve {
    use std::io::BufRead;
    let mut child = p
        .cmd(&["serve", "--port", "0"])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    let addr = line.trim().rsplit("http://").next().unwrap().to_string();
    std::thread::spawn(move || for _ in err.lines() {});
    let token = std::fs::read_to_string(p.path().join(".git/xdg-state/agentloop/token")).unwrap();
    Serve { child, addr, token }
}

/// (status, body) of one HTTP/1.1 request with a JSON body.
pub fn http_request(
    addr: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: Option<&str>,
) -> (u16, String) {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .unwrap();
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let body = body.unwrap_or("");
    write!(c, "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len()).unwrap();
    // Read what the headers announce: some servers (chromedriver) keep the
    // connection open whatever the request says.
    let mut r = std::io::BufReader::new(c);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if std::io::BufRead::read_line(&mut r, &mut line).unwrap() == 0 || line == "\r\n" {
            break;
        }
        head.push_str(&line.to_ascii_lowercase());
    }
    let status = head[9..12].parse().unwrap();
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
    };
    let mut body = Vec::new();
    if let Some(n) = header("content-length:").and_then(|v| v.parse::<usize>().ok()) {
        body.resize(n, 0);
        r.read_exact(&mut body).unwrap();
    } else if header("transfer-encoding:").is_some_and(|v| v.contains("chunked")) {
        loop {
            let mut size = String::new();
            std::io::BufRead::read_line(&mut r, &mut size).unwrap();
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).unwrap();
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    } else {
        r.read_to_end(&mut body).unwrap();
    }
    let body = String::from_utf8_lossy(&body).into_owned();
    (status, body)
}
