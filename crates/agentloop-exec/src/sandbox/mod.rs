//! `[sandbox] mode = "workspace"`: each agent process runs under bubblewrap with the
//! root file system read-only; writable only its working directory (the task's
//! worktree, or the project), a private `/tmp`, the tools' caches and `[sandbox]
//! writable`; the agent CLIs' own directories a private copy (`homes.rs`); `.agentloop/` read-only but for the
//! iteration's own directory (where `agentloop mcp` writes its reports); hidden: the
//! secrets in the home directory (`~/.ssh`, `~/.aws`, … and `[sandbox] hidden`), other
//! people's home directories, agentloop's state (the journal key, the API token) and
//! cache (other workers' worktrees, the checks' clean copies), the sockets of the
//! user's session and of container engines; the repository's hooks and config
//! read-only. Its network is a namespace of its own whose only way out is agentloop's
//! proxy (`net.rs`, reached through `bridge.rs`), which lets through the hosts of
//! `[sandbox] allow_hosts` and the agent's own model API; what was refused is read
//! back by `denials.rs`.

mod bridge;
pub mod bytecode;
mod denials;
mod gitview;
mod homes;
pub mod judge;
mod near;
mod net;
mod tmp;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use agentloop_config::SandboxConfig;
pub use agentloop_config::sandbox::{AllowList, split_host};
use tmp::{programs_in_tmp, shown_program};

pub use bridge::Bridge;
pub use denials::{MAX_PER_ITERATION, NETWORK_FILE, of_iteration as denials_of};
pub use gitview::GitView;
use homes::{CACHES, prepare_caches};
pub use homes::{Caches, Homes, remove_all};
use near::other_repositories;
pub use net::Proxy;

/// Every sandbox's base: the root read-only, its own `/dev` and `/proc`.
const BASE: &[&str] = &["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"];

/// A confined check's home: fresh, in its private `/tmp`.
const JUDGE_HOME: &str = "/tmp/home";

/// Where the proxy's socket is inside the sandbox (its private `/tmp`).
const SOCKET_INSIDE: &str = "/tmp/.agentloop-net.sock";
/// The proxy's port on the sandbox's own loopback (another when an allowed loopback
/// port is this one).
const PROXY_PORT: u16 = 3128;

/// Secrets no agent reads.
const SECRETS: &[&str] = &[
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.azure",
    "~/.gnupg",
    "~/.netrc",
    "~/.docker/config.json",
    "~/.kube",
    "~/.git-credentials",
    // Sockets of services that would run a command outside the sandbox (a container,
    // a user unit) or hand out keys (the SSH agent, the keyring).
    "/run/user",
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
];

fn expand(p: &str, home: &Path) -> PathBuf {
    match p.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(p),
    }
}

/// What a `[sandbox]` configuration does on this machine: bubblewrap checked, the
/// paths it hides, and the command lines that confine an agent or a check.
/// An agent's own files outside the places every agent has.
#[derive(Debug, Clone, Copy, Default)]
pub struct AgentPaths<'a> {
    /// The files its command line names (a command agent's program or script): one
    /// under `/tmp` is seen, read-only, through the sandbox's own `/tmp`, where it
    /// would not be.
    pub programs: &'a [PathBuf],
    /// Its CLI's own directory where its environment puts it elsewhere than the home
    /// directory (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, `COPILOT_HOME`), with the one of
    /// the home it stands for (`.codex`): a private copy, as `~/.codex` is, whose
    /// refreshed login goes back as that one's does.
    pub homes: &'a [(PathBuf, &'static str)],
}

pub trait Sandbox {
    /// Whether bubblewrap runs here (installed, and user namespaces allowed).
    fn check(&self) -> Result<(), String>;
    /// The secrets and other people's home directories, as absolute paths.
    fn hidden_paths(&self) -> Vec<PathBuf>;
    /// The paths whose "not found" in an agent's output is a refusal: the hidden
    /// ones, and agentloop's cache (other workers' worktrees, the checks' copies).
    fn unreachable_paths(&self) -> Vec<PathBuf>;
    /// An agent's confinement for one iteration: the proxy started (its refusals go
    /// to `own/sandbox-network.jsonl`) and the command to run the agent under. `root`
    /// is the project, `workdir` where the agent works, `own` its iteration's
    /// directory, `allow` what it may reach, `paths` its own files elsewhere.
    fn confine(
        &self,
        root: &Path,
        workdir: &Path,
        own: &Path,
        caches: Caches<'_>,
        allow: AllowList,
        paths: AgentPaths<'_>,
    ) -> std::io::Result<Confinement>;
    /// The confinement of a verification command (`[sandbox] verify`): its working
    /// copy writable, and `reports` (the directory its runner's report goes to, made
    /// here first), no network at all.
    fn confine_check(
        &self,
        root: &Path,
        workdir: &Path,
        reports: &Path,
        warm: &judge::WarmCaches,
    ) -> Confinement;
}

impl Sandbox for SandboxConfig {
    /// Whether bubblewrap runs here (installed, and user namespaces allowed).
    fn check(&self) -> Result<(), String> {
        probe(&self.bwrap, &["--unshare-user", "--unshare-net", "--unshare-ipc"]).map_err(|u| match u {
            Unable::Refused(said) => format!(
                "bubblewrap cannot make a sandbox here ({said}); enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run without [sandbox]"
            ),
            Unable::Missing(e) => format!(
                "bubblewrap ({}) is not installed ({e}); install it (Debian: apt-get install bubblewrap)",
                self.bwrap
            ),
        })
    }

    /// The secrets and other people's home directories, as absolute paths.
    fn hidden_paths(&self) -> Vec<PathBuf> {
        let home = home();
        SECRETS
            .iter()
            .map(|p| p.to_string())
            .chain(self.hidden.iter().cloned())
            .map(|p| expand(&p, &home))
            // The journal's key: with it an agent could seal lines of its own.
            .chain(agentloop_ground::fsutil::state_dir())
            .collect()
    }

    /// The paths whose "not found" in an agent's output is a refusal: the hidden
    /// ones, and agentloop's cache (other workers' worktrees, the checks' copies).
    fn unreachable_paths(&self) -> Vec<PathBuf> {
        let mut v = self.hidden_paths();
        v.extend(agentloop_ground::fsutil::cache_dir());
        v
    }

    /// An agent's confinement for one iteration: the proxy started (its refusals go
    /// to `own/sandbox-network.jsonl`) and the command to run the agent under. `root`
    /// is the project, `workdir` where the agent works, `own` its iteration's
    /// directory, `caches` the tools' caches it writes, `allow` what it may reach.
    fn confine(
        &self,
        root: &Path,
        workdir: &Path,
        own: &Path,
        caches: Caches<'_>,
        allow: AllowList,
        paths: AgentPaths<'_>,
    ) -> std::io::Result<Confinement> {
        let forwards = allow.loopback_ports();
        let proxy_port = (PROXY_PORT..)
            .find(|p| !forwards.contains(p))
            .unwrap_or(PROXY_PORT);
        let homes = Homes::make_with(&home(), &state_base().join("homes"), paths.homes)?;
        // (A check writes nothing of the project's repository; an agent working in
        // the project writes it as it is.)
        let git = if workdir.starts_with(root) {
            None
        } else {
            GitView::make(root, workdir, &state_base().join("gits"))?
        };
        own_reports(own)?;
        if let Caches::Run(dir) = caches {
            prepare_caches(dir, &homes)?;
        }
        let proxy = Proxy::start(allow, own.join(NETWORK_FILE))?;
        let mut a = files(
            self,
            root,
            workdir,
            Some(Agent {
                own,
                homes: &homes,
                caches,
                git: git.as_ref(),
            }),
        );
        for p in paths
            .programs
            .iter()
            .filter(|p| shown_program(self, root, workdir, p))
        {
            bind(&mut a, "--ro-bind", p, p);
        }
        // A process namespace of its own: it signals, and reads the command lines of,
        // no process outside (the driver, another worker, the person's).
        push(&mut a, &["--unshare-net", "--unshare-pid", "--bind"]);
        a.push(proxy.socket().into());
        a.push(SOCKET_INSIDE.into());
        let url = format!("http://127.0.0.1:{proxy_port}");
        for var in [
            "HTTPS_PROXY",
            "HTTP_PROXY",
            "ALL_PROXY",
            "https_proxy",
            "http_proxy",
            "all_proxy",
        ] {
            push(&mut a, &["--setenv", var, &url]);
        }
        push(
            &mut a,
            &["--unsetenv", "NO_PROXY", "--unsetenv", "no_proxy", "--"],
        );
        a.push(
            std::env::current_exe()
                .unwrap_or_else(|_| PathBuf::from("agentloop"))
                .into(),
        );
        push(&mut a, &["sandbox-net", "--socket", SOCKET_INSIDE]);
        push(&mut a, &["--proxy-port", &proxy_port.to_string()]);
        for p in forwards {
            push(&mut a, &["--forward", &p.to_string()]);
        }
        a.push("--".into());
        Ok(Confinement {
            prefix: a,
            _proxy: Some(proxy),
            _homes: Some(homes),
            _git: git,
        })
    }

    /// The confinement of a verification command (see [`judge`]).
    fn confine_check(
        &self,
        root: &Path,
        workdir: &Path,
        reports: &Path,
        warm: &judge::WarmCaches,
    ) -> Confinement {
        judge::confine(self, root, workdir, reports, warm)
    }
}

/// The file system part: `bwrap` with the root read-only and what is writable,
/// read-only or hidden laid over it.
/// `agent` is an agent's: see [`Agent`].
fn files(
    cfg: &SandboxConfig,
    root: &Path,
    workdir: &Path,
    agent: Option<Agent<'_>>,
) -> Vec<OsString> {
    let own = agent.as_ref().map(|a| a.own);
    let home = home();
    let mut a: Vec<OsString> = Vec::new();
    // A session of its own: no controlling terminal, so nothing it runs can push
    // keystrokes into the person's (TIOCSTI) or take the terminal over. A user
    // namespace of its own even when agentloop runs as root (bubblewrap makes one for
    // anyone else): the kernel's keyrings are the namespace's, so nothing run inside
    // reads or leaves a key that another sandbox, or the host, sees (as root without
    // one, the stop-74 attack carried a held-out test out word for word in the user
    // keyring, to the sandboxed agent of the next task).
    push(
        &mut a,
        &[
            cfg.bwrap.as_str(),
            "--die-with-parent",
            "--unshare-user",
            "--unshare-ipc",
            "--new-session",
        ],
    );
    push(&mut a, BASE);
    push(&mut a, &["--tmpfs", "/tmp"]);
    // Programs that live under `/tmp` (agentloop itself, agent CLIs on the PATH)
    // are seen through the private `/tmp`, read-only.
    for p in programs_in_tmp() {
        bind(&mut a, "--ro-bind", &p, &p);
    }
    // An agent's tools write the run's caches (or fresh ones), its CLIs a private
    // copy of their own directories; a check gets none of them. Laid first, so that
    // what is hidden below stays hidden whatever a copy holds.
    if let Some(Agent { homes, caches, .. }) = &agent {
        for (p, name) in CACHES {
            let real = expand(p, &home);
            if !real.is_dir() {
                continue;
            }
            match caches {
                Caches::Run(dir) => bind(&mut a, "--bind", &dir.join(name), &real),
                Caches::Fresh => {
                    a.push("--tmpfs".into());
                    a.push(real.into());
                }
            }
        }
        for (copy, real) in &homes.binds {
            bind(&mut a, "--bind", copy, real);
        }
        for p in &homes.read_only {
            bind(&mut a, "--ro-bind", p, p);
        }
    }
    for p in &cfg.writable {
        let p = expand(p, &home);
        if p.exists() {
            bind(&mut a, "--bind", &p, &p);
        }
    }
    // Other people's home directories (and root's, when it is not ours).
    // (The programs on the PATH stay where they are.)
    let path: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .filter_map(|d| d.canonicalize().ok())
        .collect();
    let keep = |p: &Path| {
        [home.as_path(), root, workdir]
            .into_iter()
            .chain(path.iter().map(PathBuf::as_path))
            .any(|k| k.starts_with(p))
            || std::env::current_exe().is_ok_and(|e| e.starts_with(p))
    };
    let others = std::fs::read_dir("/home")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .chain([PathBuf::from("/root")]);
    for p in others {
        if p.is_dir() && !keep(&p) {
            a.push("--tmpfs".into());
            a.push(p.into());
        }
    }
    // Other repositories: in the home directory (two levels down) and beside the
    // project.
    for p in other_repositories(&home, root, workdir) {
        a.push("--tmpfs".into());
        a.push(p.into());
    }
    // agentloop's own cache (the other workers' worktrees, the clean copies the
    // checks run in) is hidden, though `~/.cache` is writable; the agent's own
    // worktree is laid back over it.
    if let Some(cache) = agentloop_ground::fsutil::cache_dir().filter(|c| c.is_dir()) {
        a.push("--tmpfs".into());
        a.push(cache.into());
    }
    bind(&mut a, "--bind", workdir, workdir);
    // The project is seen (read-only) from a worktree, wherever it lives (a
    // project under `/tmp` too). An agent's commits go into the project's
    // repository through a view of its own (`gitview.rs`); its hooks and config
    // (which run code at the next git command) stay read-only.
    let git = root.join(".git");
    if !workdir.starts_with(root) {
        bind(&mut a, "--ro-bind", root, root);
        for (flag, from, to) in agent.iter().filter_map(|a| a.git).flat_map(GitView::binds) {
            bind(&mut a, flag, &from, &to);
        }
    }
    for p in ["hooks", "config", "info"] {
        let p = git.join(p);
        if p.exists() {
            bind(&mut a, "--ro-bind", &p, &p);
        }
    }
    let state = root.join(".agentloop");
    if state.is_dir() {
        bind(&mut a, "--ro-bind", &state, &state);
        // Of its own directory only the file `agentloop mcp` appends its reports to
        // is writable (made by `confine`): a link the agent left there would have the
        // driver, which writes its records there after it, write through it.
        if let Some(reports) = own
            .map(agentloop_ground::reports::path)
            .filter(|r| std::fs::symlink_metadata(r).is_ok_and(|m| m.is_file()))
        {
            bind(&mut a, "--bind", &reports, &reports);
        }
    }
    let hidden = cfg.hidden_paths();
    for p in &hidden {
        if p.is_dir() {
            a.push("--tmpfs".into());
            a.push(p.into());
        } else if p.exists() {
            bind(&mut a, "--ro-bind", Path::new("/dev/null"), p);
        }
    }
    // A judge's copy lives in agentloop's state directory, hidden above: laid back
    // over it.
    if hidden.iter().any(|h| workdir.starts_with(h)) {
        bind(&mut a, "--bind", workdir, workdir);
    }
    // A worktree's (or a judge's copy's) link to its repository stays as agentloop
    // made it: pointed elsewhere, agentloop's own git, outside any sandbox, would
    // read a repository of the agent's making, with a filter of its own.
    let link = workdir.join(".git");
    if link.is_file() {
        bind(&mut a, "--ro-bind", &link, &link);
    }
    a
}

/// Why bubblewrap could not make a sandbox.
enum Unable {
    /// It is not there to run.
    Missing(std::io::Error),
    /// It ran and refused (what it said): user namespaces not allowed, most often.
    Refused(String),
}

/// Runs `true` under `bwrap` with `flags` (the namespaces a sandbox needs).
fn probe(bwrap: &str, flags: &[&str]) -> Result<(), Unable> {
    let out = std::process::Command::new(bwrap)
        .args(flags)
        .args(BASE)
        .arg("true")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(Unable::Missing)?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Unable::Refused(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ))
    }
}

/// A command's confinement: the `bwrap … --` to run it under, and the proxy that
/// lives as long as this value.
#[derive(Default)]
pub struct Confinement {
    pub prefix: Vec<OsString>,
    _proxy: Option<Proxy>,
    /// The copies of the CLIs' directories, thrown away (a refreshed login taken
    /// back) with this value.
    _homes: Option<Homes>,
    /// Its view of the project's repository, its work taken back with this value.
    _git: Option<GitView>,
}

/// What an agent's sandbox has that a check's has not.
struct Agent<'a> {
    /// Its directory in the run's (its iteration's).
    own: &'a Path,
    /// The copies of its CLIs' directories.
    homes: &'a Homes,
    /// The tools' caches it writes.
    caches: Caches<'a>,
    /// Its view of the project's repository.
    git: Option<&'a GitView>,
}

impl std::fmt::Debug for Confinement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Confinement")
            .field("prefix", &self.prefix)
            .finish()
    }
}

/// The file in `own` the agent's `agentloop mcp` appends to, made a plain empty file
/// of the driver's if it is not one already.
fn own_reports(own: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    if !own.is_dir() {
        return Ok(());
    }
    let path = agentloop_ground::reports::path(own);
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(&path)
        .and_then(|f| {
            if f.metadata()?.is_file() {
                Ok(())
            } else {
                Err(std::io::Error::other("not a regular file"))
            }
        })
        .map_err(|e| agentloop_ground::fsutil::named(&path, e))
}

/// agentloop's state directory, which the sandbox hides: where the copies of the CLIs'
/// directories (`homes/`) and the repository's views (`gits/`) are made.
fn state_base() -> PathBuf {
    agentloop_ground::fsutil::state_dir()
        .unwrap_or_else(|| std::env::temp_dir().join("agentloop-state"))
}

fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

fn push(a: &mut Vec<OsString>, words: &[&str]) {
    a.extend(words.iter().map(OsString::from));
}

fn bind(a: &mut Vec<OsString>, flag: &str, from: &Path, to: &Path) {
    a.push(flag.into());
    a.push(from.into());
    a.push(to.into());
}

/// The hosts an agent of `kind` may reach by default: its provider's API, and every
/// `http(s)://` address in `env_values` (its environment's values and its own config
/// files' text: the model endpoint it is configured with, such as a local server's
/// `127.0.0.1:PORT`).
pub fn agent_hosts<'a>(kind: &str, env_values: impl Iterator<Item = &'a str>) -> Vec<String> {
    let provider: &[&str] = match kind {
        "claude" => &["api.anthropic.com:443"],
        "codex" => &["api.openai.com:443", "chatgpt.com:443"],
        "gemini" => &[
            "generativelanguage.googleapis.com:443",
            "cloudcode-pa.googleapis.com:443",
            "oauth2.googleapis.com:443",
        ],
        "copilot" => &[
            "api.githubcopilot.com:443",
            "api.individual.githubcopilot.com:443",
            "api.github.com:443",
        ],
        "opencode" | "aider" => &["api.openai.com:443", "api.anthropic.com:443"],
        "qwen" => &[
            "dashscope.aliyuncs.com:443",
            "dashscope-intl.aliyuncs.com:443",
            "chat.qwen.ai:443",
        ],
        "droid" => &["api.factory.ai:443", "app.factory.ai:443"],
        "cline" => &["api.cline.bot:443"],
        _ => &[],
    };
    let mut v: Vec<String> = provider.iter().map(|s| s.to_string()).collect();
    for value in env_values {
        // Every address in the value: a whole URL, or one inside a config file's text.
        let lower = value.to_ascii_lowercase();
        for (at, _) in lower.match_indices("http") {
            let rest = &lower[at..];
            let (https, rest) = if let Some(r) = rest.strip_prefix("https://") {
                (true, r)
            } else if let Some(r) = rest.strip_prefix("http://") {
                (false, r)
            } else {
                continue;
            };
            let authority = rest
                .split(|c: char| "/?#\"' <>,;)]}".contains(c) || c.is_whitespace())
                .next()
                .unwrap_or("");
            let authority = authority.rsplit('@').next().unwrap_or("");
            if let Ok((host, port)) = split_host(authority) {
                let port = port.unwrap_or(if https { 443 } else { 80 });
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host
                };
                let entry = format!("{host}:{port}");
                if !v.contains(&entry) {
                    v.push(entry);
                }
            }
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_reaches_its_provider_and_the_endpoint_it_is_given() {
        let hosts = agent_hosts(
            "claude",
            [
                "http://127.0.0.1:4312/v1",
                "not a url",
                "https://proxy.corp/x",
            ]
            .into_iter(),
        );
        assert_eq!(
            hosts,
            vec!["api.anthropic.com:443", "127.0.0.1:4312", "proxy.corp:443"]
        );
        assert!(agent_hosts("command", std::iter::empty()).is_empty());
    }
}
