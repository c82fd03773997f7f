//! A test project in a temp dir, and the real binary run inside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_agentloop");

/// The tests' user configuration (see [`Project::git`]).
pub const USER_CONFIG: &str = "[run]\nshape = \"tool\"\n";

pub fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("demo")
}

pub fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/bad-input")
}

pub struct Project {
    pub dir: tempfile::TempDir,
    /// `$XDG_CACHE_HOME` of the project's commands (clean copies, worktrees): outside
    /// the repository, and not under a `.git` directory, whose files agent CLIs treat
    /// as sensitive.
    pub cache: tempfile::TempDir,
    /// `$XDG_STATE_HOME` of its commands (the journal's key, the API token, the
    /// judges' copies): outside the repository too — a copy under a `.git` directory
    /// is one Jest's crawler never looks into.
    pub state: tempfile::TempDir,
    /// More variables for its commands: what a user exported in their shell (an agent
    /// CLI's key and endpoint), which agentloop passes on to the agent.
    pub env: Vec<(String, String)>,
    /// The home directory a real agent CLI runs with, when the test gives it one: on
    /// the disk, where a home is (a sandbox has a `/dev` of its own, and the tests'
    /// scratch directories may be under `/dev/shm`), outside the repository.
    pub cli_home: Option<tempfile::TempDir>,
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
            cache: tempfile::Builder::new()
                .prefix("agentloop-it-cache-")
                .tempdir()
                .unwrap(),
            state: tempfile::Builder::new()
                .prefix("agentloop-it-state-")
                .tempdir()
                .unwrap(),
            env: Vec::new(),
            cli_home: None,
        };
        p.git_cmd(&["init", "-q", "-b", "main"]);
        // The tests' plans are small and say little (a title, a task, a check): with
        // the default shape (`auto`) most would wait for a person at plan approval.
        // Their user runs them as tools; a test of the defaults drops this.
        let user = p.user_config();
        std::fs::create_dir_all(user.parent().unwrap()).unwrap();
        std::fs::write(&user, USER_CONFIG).unwrap();
        p
    }

    /// `$XDG_STATE_HOME` of the project's commands.
    pub fn state_home(&self) -> PathBuf {
        self.state.path().to_path_buf()
    }

    /// The user's configuration file (`$XDG_CONFIG_HOME/agentloop/config.toml`).
    pub fn user_config(&self) -> PathBuf {
        self.xdg_config_home().join("agentloop/config.toml")
    }

    /// The `XDG_CONFIG_HOME` the binary runs with.
    pub fn xdg_config_home(&self) -> PathBuf {
        self.cache.path().join("config")
    }

    /// The tests' user configuration under another `XDG_CONFIG_HOME` too.
    pub fn write_user_config_in(&self, xdg_config: &Path) {
        if self.user_config().exists() {
            std::fs::create_dir_all(xdg_config.join("agentloop")).unwrap();
            std::fs::write(xdg_config.join("agentloop/config.toml"), USER_CONFIG).unwrap();
        }
    }

    /// No user configuration: every default as a new user has it.
    pub fn with_defaults(self) -> Project {
        std::fs::remove_file(self.user_config()).ok();
        self
    }

    /// The bundled example project, committed, with every default.
    pub fn example() -> Project {
        let p = Project::git().with_defaults();
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
            .env("XDG_CONFIG_HOME", self.xdg_config_home())
            .env("XDG_STATE_HOME", self.state_home())
            .env("XDG_CACHE_HOME", self.cache.path())
            .env("NO_COLOR", "1")
            .env_remove("AGENTLOOP_FAILPOINT")
            // CI builds these tests through clippy's driver (scripts/test with
            // AGENTLOOP_TEST_LINT): a project's own cargo is not.
            .env_remove("RUSTC_WORKSPACE_WRAPPER")
            .env_remove("CLIPPY_ARGS")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        c
    }

    /// `args` run to their end with the driver's failpoint set (`at`:
    /// `before-append:7`): what the process ended with, a SIGKILL when the point came.
    pub fn run_failing_at(&self, args: &[&str], at: &str) -> Output {
        self.cmd(args)
            .env("AGENTLOOP_FAILPOINT", at)
            .output()
            .unwrap()
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.cmd(args).output().unwrap().into()
    }

    /// `args` run to their end, or killed after `limit`: then `None`, with where the
    /// process and its children were waiting (their kernel wait channels and command
    /// lines) in the second value, so a hang says what it hung on.
    pub fn run_within(&self, args: &[&str], limit: Duration) -> Result<Run, String> {
        let mut child = self
            .cmd(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let t = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if t.elapsed() > limit {
                let stuck = processes_below(child.id());
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("still running after {limit:?}:\n{stuck}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(child.wait_with_output().unwrap().into())
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

/// A scripted agent's prelude: reads the task id from the prompt; `$n` counts this task's iterations.
pub const PRELUDE: &str = r#"prompt=$(cat)
task=$(printf '%s\n' "$prompt" | sed -n 's/^## Your task: \([A-Za-z0-9_-]*\) .*/\1/p' | head -n 1)
mkdir -p .git/agent-state
n=$(cat .git/agent-state/$task 2>/dev/null || echo 0); n=$((n+1)); echo $n > .git/agent-state/$task
echo $$ > .git/agent-state/pid
"#;

pub fn agent(body: &str) -> String {
    format!("{PRELUDE}{body}")
}

pub fn wait_for(p: &Project, what: &str, f: impl Fn(&Project) -> bool) {
    let t = Instant::now();
    while !f(p) {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "timed out waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn journal_has(p: &Project, needle: &str) -> bool {
    let runs = p.path().join(".agentloop/runs");
    std::fs::read_dir(&runs)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            std::fs::read_to_string(e.path().join("journal.jsonl"))
                .is_ok_and(|j| j.contains(needle))
        })
}

pub fn wait_exit(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if t.elapsed() > limit {
            let _ = child.kill();
            panic!("the driver did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process that exists and is not a zombie waiting to be reaped.
pub fn alive(pid: &str) -> bool {
    // An empty string would read /proc//stat, that is /proc/stat: "alive" for ever.
    assert!(pid.trim().parse::<u32>().is_ok(), "not a pid: {pid:?}");
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
    })
}

/// `agentloop run --quiet` in the project, once its scripted agent is running.
pub fn started(p: &Project) -> Child {
    let driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    pid_in(p, ".git/agent-state/pid");
    driver
}

/// The pid a script writes to `rel` (`echo $$ > rel`), once it is all there: the file
/// exists, empty, before the shell writes the number into it.
pub fn pid_in(p: &Project, rel: &str) -> String {
    let path = p.path().join(rel);
    let whole = |s: &str| s.ends_with('\n') && s.trim().parse::<u32>().is_ok();
    wait_for(p, &format!("a pid in {rel}"), |_| {
        std::fs::read_to_string(&path).is_ok_and(|s| whole(&s))
    });
    std::fs::read_to_string(&path).unwrap().trim().to_string()
}

/// Asserts that a process succeeded, showing its stderr when it did not.
pub fn assert_ok(out: &Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Runs `agentloop hook EVENT` with `input` on stdin; (exit code, stdout, stderr).
pub fn hook(p: &Project, event: &str, input: &[u8]) -> (Option<i32>, String, String) {
    use std::io::Write;
    let mut child = p
        .cmd(&["hook", event])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A tool call of the mock Claude model (`Bash`, `Task`, …).
pub fn claude_tool(name: &str, input: serde_json::Value) -> agentloop_testkit::Step {
    agentloop_testkit::Step::Tool {
        name: name.into(),
        input,
        tokens: agentloop_testkit::Tokens {
            input: 10,
            output: 2,
            ..agentloop_testkit::Tokens::default()
        },
    }
}

/// The repository's own tools directory, where `scripts/test` installs the test
/// runners (`.tools/`, a link into the tools' cache).
pub fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../.tools")
        .canonicalize()
        .expect("the tools scripts/test installs (run scripts/test)")
}

/// A PATH whose `python3` has pytest (the virtual environment's), in front.
pub fn python_path() -> String {
    let venv = tools().join("pytest/bin");
    assert!(
        venv.join("pytest").exists(),
        "pytest is not installed in {}: run scripts/test, which installs it",
        venv.display()
    );
    format!(
        "{}:{}",
        venv.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// `agentloop init` on the project as a user runs it, then `plan` and the scripted
/// agent (`body`) in the configuration init wrote, everything committed; returns
/// what init wrote.
pub fn init_with_scripted(p: &Project, plan: &str, body: &str) -> String {
    let r = p.run(&["init"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let config = p.read("agentloop.toml");
    p.write(
        "agentloop.toml",
        config.replace("agent = \"claude\"", "agent = \"scripted\"")
            + "\n[agents.scripted]\ncommand = [\"sh\", \"agent.sh\"]\ntimeout = \"60s\"\n",
    );
    p.write("agent.sh", agent(body));
    p.write("PLAN.md", plan);
    p.commit("init");
    config
}

/// A committed project whose agent runs the scripted `body` after [`PRELUDE`].
pub fn scripted(plan: &str, body: &str) -> Project {
    Scratch::new().plan(plan).agent(&agent(body)).build()
}

/// A scratch project, built fluently: a plan, a scripted agent, configuration and
/// files, committed in a new git repository.
///
/// ```ignore
/// let p = Scratch::new().plan(PLAN).agent("touch a.txt; echo TASK_COMPLETE").build();
/// ```
#[derive(Default)]
pub struct Scratch {
    files: Vec<(String, Vec<u8>)>,
    agent: Option<String>,
    config: String,
}

impl Scratch {
    pub fn new() -> Scratch {
        Scratch::default()
    }

    /// `PLAN.md`.
    pub fn plan(self, markdown: &str) -> Scratch {
        self.file("PLAN.md", markdown)
    }

    /// The run's agent: `sh agent.sh` with the prompt on stdin.
    pub fn agent(mut self, script: &str) -> Scratch {
        self.agent = Some(script.to_string());
        self
    }

    /// More of `agentloop.toml` (after the scripted agent's tables, when there is one).
    pub fn config(mut self, toml: &str) -> Scratch {
        self.config.push_str(toml);
        self
    }

    pub fn file(mut self, rel: &str, text: impl AsRef<[u8]>) -> Scratch {
        self.files.push((rel.to_string(), text.as_ref().to_vec()));
        self
    }

    /// The repository, with everything committed and `.agentloop/` ignored.
    pub fn build(self) -> Project {
        let p = Project::git();
        for (rel, bytes) in &self.files {
            p.write(rel, bytes);
        }
        let mut config = String::new();
        if let Some(script) = &self.agent {
            p.write("agent.sh", script);
            config.push_str(
                "[run]\nagent = \"scripted\"\n\n[agents.scripted]\ncommand = [\"sh\", \"agent.sh\"]\ntimeout = \"60s\"\n\n",
            );
        }
        config.push_str(&self.config);
        if !config.is_empty() {
            p.write("agentloop.toml", config);
        }
        p.write(".gitignore", ".agentloop/\n");
        p.commit("setup");
        p
    }
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
    let token = std::fs::read_to_string(p.state_home().join("agentloop/token")).unwrap();
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

/// Appends a record to a run's journal as an agent could (`python3 .git/forge.py
/// 'KIND {DATA}'`): the next sequence number, a correct CRC-32, no seal.
pub const FORGE_PY: &str = r#"import glob, json, sys, zlib
j = glob.glob('.agentloop/runs/*/journal.jsonl')[0]
seq = json.loads(open(j).read().splitlines()[-1])['seq'] + 1
kind, data = sys.argv[1].split(' ', 1)
body = '{"v":1,"seq":%d,"time":"2026-11-23T00:00:00.000Z","kind":"%s","data":%s' % (seq, kind, data)
open(j, 'a').write(body + ',"sum":"%08x"}\n' % zlib.crc32(body.encode()))
"#;

/// The paths of the changes a run waits on at its surface gate (`status --json`).
pub fn surface_paths(status: &serde_json::Value) -> Vec<String> {
    status["surface_changes"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["path"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// A project for a cluster executor: a scripted agent (`agent.sh`, reading its task
/// into `$task` and its attempt into `$n`, then running `body`), `agentloop.toml` as
/// `config` makes it from the script's path, and a bare repository beside it as
/// `origin` (its directory returned too).
pub fn remote_project(
    plan: &str,
    body: &str,
    config: impl FnOnce(&Path) -> String,
) -> (Project, tempfile::TempDir) {
    let p = Scratch::new().plan(plan).build();
    let remote = tempfile::Builder::new()
        .prefix("agentloop-it-remote-")
        .tempdir()
        .unwrap();
    let state = p.path().join(".git/agent-state");
    p.write(
        "agent.sh",
        format!(
            r#"prompt=$(cat)
task=$(printf '%s\n' "$prompt" | sed -n 's/^## Your task: \([A-Za-z0-9_-]*\) .*/\1/p' | head -n 1)
state={state}
mkdir -p "$state"
n=$(cat "$state/$task" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$state/$task"
echo "agent at $task, attempt $n, in $PWD, token ${{AGENT_TOKEN:-none}}, home $HOME"
{body}
"#,
            state = state.display()
        ),
    );
    p.write("agentloop.toml", config(&p.path().join("agent.sh")));
    p.write(".gitignore", ".agentloop/\n");
    p.commit("a project run on a cluster");
    let bare = remote.path().join("origin.git");
    let out = Command::new("git")
        .args(["init", "-q", "--bare"])
        .arg(&bare)
        .output()
        .unwrap();
    assert!(out.status.success());
    p.git_cmd(&["remote", "add", "origin", &bare.to_string_lossy()]);
    p.git_cmd(&["push", "-q", "origin", "main"]);
    (p, remote)
}

/// Each iteration's job so far, by iteration: its directory and the id its executor
/// wrote to `file` there (`slurm.job`, `kubernetes.job`).
pub fn iteration_jobs(p: &Project, file: &str) -> Vec<(PathBuf, String)> {
    let runs = p.path().join(".agentloop/runs");
    let Some(run) = std::fs::read_dir(runs)
        .ok()
        .and_then(|d| d.flatten().next())
    else {
        return Vec::new();
    };
    let Ok(rd) = std::fs::read_dir(run.path().join("iterations")) else {
        return Vec::new();
    };
    let mut v: Vec<(PathBuf, String)> = rd
        .flatten()
        .filter_map(|e| {
            let id = std::fs::read_to_string(e.path().join(file)).ok()?;
            Some((e.path(), id.trim().to_string()))
        })
        .collect();
    v.sort();
    v
}

/// The process `pid` and every process below it: pid, state, wait channel of each
/// thread, and command line.
pub fn processes_below(pid: u32) -> String {
    let mut out = String::new();
    let mut todo = vec![pid];
    while let Some(p) = todo.pop() {
        let read = |f: &str| std::fs::read_to_string(format!("/proc/{p}/{f}")).unwrap_or_default();
        let args = read("cmdline").replace('\0', " ");
        let state = read("stat")
            .rsplit(')')
            .next()
            .and_then(|r| r.split_whitespace().next().map(str::to_string))
            .unwrap_or_default();
        let waits: Vec<String> = std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|t| std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default())
            .collect();
        out.push_str(&format!("{p} {state} [{}] {args}\n", waits.join(",")));
        for t in std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let children = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            todo.extend(
                children
                    .split_whitespace()
                    .filter_map(|c| c.parse::<u32>().ok()),
            );
        }
    }
    out
}
