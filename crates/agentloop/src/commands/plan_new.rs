//! `agentloop plan new "GOAL"` (or `--from SPEC.md`): the configured agent drafts
//! PLAN.md once, reading the repository in a throwaway copy (Claude Code and Codex
//! also held to their read-only tools); agentloop then checks the draft itself — the
//! plan must parse and validate, and every check it names is run once on the current
//! tree: one that cannot run is refused, one that already passes is flagged as testing
//! nothing — and waits for a person's approval (Gate 1) unless `--yes`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};

use agentloop_ground::words::{money, plural};
use agentloop_plan::Plan;
use agentloop_verify::verify;
use agentloop_workspace::Workspace;

use crate::error::{CliError, ExitKind};

/// The most of a spec file that is read.
const SPEC_CAP: u64 = 256 * 1024;

pub struct NewArgs {
    pub goal: Option<String>,
    pub from: Option<PathBuf>,
    pub output: PathBuf,
    pub agent: Option<String>,
    /// The most tasks of the draft.
    pub tasks: u32,
    pub yes: bool,
    pub force: bool,
}

/// A check of the draft, run once on the current tree.
#[derive(Debug, PartialEq)]
enum Finding {
    /// Exit 126/127: the command is not there.
    CannotRun { task: String, command: String },
    /// It passes before any work: it does not test its task.
    AlreadyPasses { task: String, command: String },
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    agentloop_exec::git::run(dir, args).ok()
}

/// The plan in the agent's answer: a fenced block holding one, else the text from
/// its front matter or `# Title` line on.
fn extract(message: &str) -> Option<String> {
    let text = message.replace("\r\n", "\n");
    let lines: Vec<&str> = text.lines().collect();
    // A fenced block with a `# ` line in it.
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_start().starts_with("```") {
            let start = i + 1;
            let end = lines[start..]
                .iter()
                .position(|l| l.trim_start().starts_with("```"))
                .map(|p| start + p)?;
            let block = &lines[start..end];
            if block.iter().any(|l| l.starts_with("# ")) {
                return Some(block.join("\n") + "\n");
            }
            i = end + 1;
            continue;
        }
        i += 1;
    }
    let title = lines.iter().position(|l| l.starts_with("# "))?;
    // Front matter just before the title.
    let start = (0..title)
        .find(|&s| {
            lines[s].trim_end() == "---"
                && lines[s + 1..title].iter().any(|l| l.trim_end() == "---")
        })
        .unwrap_or(title);
    Some(lines[start..].join("\n").trim_end().to_string() + "\n")
}

/// What the agent is asked.
fn prompt(root: &Path, goal: &str, spec: Option<(&Path, &str)>, most: u32) -> String {
    let top: Vec<String> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') || n == ".github")
        .collect();
    let mut top = top;
    top.sort();
    let detected = agentloop_project::detect(root);
    let mut p = String::new();
    p.push_str("You are drafting the plan for agentloop, which runs coding agents through it task by task and marks a task done only when the commands on its `Verify:` lines, run by agentloop itself, pass.\n\n");
    p.push_str(&format!("## The goal\n\n{}\n\n", goal.trim()));
    if let Some((path, text)) = spec {
        p.push_str(&format!(
            "## The spec ({})\n\n{}\n\n",
            path.display(),
            text.trim()
        ));
    }
    p.push_str("## What to do\n\nRead the repository as much as you need (you can only read: change nothing). Then answer with the plan and nothing else, in this format:\n\n```\n# A short title\n\nOne paragraph: what the whole plan achieves.\n\n## T1: A task's title\nDepends: T0 (the ids of tasks that must be done first; leave the line out if none)\nVerify: a shell command run in the repository's root that exits 0 only once this task is done\nTests: the tests this task must make pass, as the test runner names them (`tests/test_x.py::test_y`, `mod::test_*`, `pkg::TestX`), comma-separated; `(new)` after a test the task adds (leave the line out if the project has no test runner)\nCriteria: execution: COMMAND | measurement: NAME < VALUE by COMMAND | observation: TEXT | assumption: TEXT (optional, repeatable)\n\nWhat to do, for the agent who will do it.\n\nAcceptance:\n- [ ] something a reviewer can check\n```\n\nRules:\n- Small tasks, each verifiable on its own, ids T1, T2, …; a task depends only on tasks before it.\n");
    p.push_str(&format!(
        "- A first decomposition: {} tasks. A task too big for one session is split later, when it is worked on; do not plan further ahead than that.\n",
        if most >= 3 { format!("3 to {most}") } else { format!("at most {most}") }
    ));
    p.push_str("- Every task has at least one `Verify:` line. Each command must exist in this repository or its toolchain, and must FAIL now, before the work is done: a check that passes already tests nothing.\n- No placeholders: no TODO, no `true`, no `exit 0`.\n- Where the project has tests, name on a `Tests:` line the ones each task must make pass: agentloop reads each test's result from the runner's own report, and the task is done only when those pass and every test that passed before still does.\n");
    if !detected.checks.is_empty() {
        p.push_str(&format!(
            "- The project's own commands (from {}): {}.\n",
            detected.sources().join(", "),
            detected
                .commands()
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    p.push_str(&format!(
        "\nThe repository's top level: {}.\n",
        if top.is_empty() {
            "(empty)".to_string()
        } else {
            top.join(", ")
        }
    ));
    p
}

/// Where the agent reads: a detached worktree of HEAD, or (no git, no commit) the
/// project itself.
struct Copy {
    root: PathBuf,
    dir: PathBuf,
    worktree: bool,
}

impl Copy {
    fn make(root: &Path, drafts: &Path) -> Copy {
        let dir = drafts.join("tree");
        let made = git(root, &["rev-parse", "--verify", "-q", "HEAD"]).is_some()
            && git(
                root,
                &[
                    "worktree",
                    "add",
                    "--detach",
                    "--quiet",
                    &dir.to_string_lossy(),
                    "HEAD",
                ],
            )
            .is_some();
        Copy {
            root: root.to_path_buf(),
            dir: if made { dir } else { root.to_path_buf() },
            worktree: made,
        }
    }
}

impl Drop for Copy {
    fn drop(&mut self) {
        if self.worktree {
            let _ = git(
                &self.root,
                &["worktree", "remove", "--force", &self.dir.to_string_lossy()],
            );
        }
    }
}

/// Each check the draft names, run once where the agent read.
fn check_commands(
    plan: &Plan,
    dir: &Path,
    logs: &Path,
    cfg: &agentloop_config::Config,
) -> Vec<Finding> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for t in &plan.tasks {
        for command in plan.checks(&t.id) {
            if seen.contains(&command) {
                continue;
            }
            seen.push(command.clone());
            let log = logs.join(format!("check-{}.log", seen.len()));
            let runner = verify::Runner {
                workdir: dir,
                timeout: cfg.verify.timeout,
                output_cap: cfg.verify.output_cap,
                jobs: cfg.verify.jobs_for(1),
                log: &log,
                // Confined as the run's checks will be (no report: the logs'
                // directory is its place).
                wrap: agentloop_exec::sandbox::judge::wrap(
                    &cfg.sandbox,
                    dir,
                    dir,
                    logs,
                    &agentloop_exec::sandbox::judge::WarmCaches::Fresh,
                ),
                bytecode: Default::default(),
                tests: None,
            };
            let Ok(r) = runner.run(0, std::slice::from_ref(&command), || false) else {
                continue;
            };
            let code = r.commands.first().and_then(|c| c.exit_code);
            let task = t.id.clone();
            match code {
                Some(126 | 127) => out.push(Finding::CannotRun { task, command }),
                Some(0) => out.push(Finding::AlreadyPasses { task, command }),
                _ => {}
            }
        }
    }
    out
}

pub fn new(cwd: &Path, args: NewArgs) -> Result<ExitKind, CliError> {
    let ws = Workspace::find(cwd);
    let output = if args.output.is_absolute() {
        args.output.clone()
    } else {
        cwd.join(&args.output)
    };
    if output.exists() && !args.force {
        return Err(CliError::user(format!(
            "{} exists; nothing was asked of the agent",
            args.output.display()
        ))
        .hint("pass --force to replace it, or -o NEW.md to write the draft elsewhere"));
    }
    let spec = match &args.from {
        Some(path) => {
            let full = cwd.join(path);
            let bytes = std::fs::read(&full)
                .map_err(|e| CliError::user(format!("cannot read {}: {e}", path.display())))?;
            if bytes.len() as u64 > SPEC_CAP {
                return Err(CliError::user(format!(
                    "{} is {} bytes; a spec is at most {SPEC_CAP}",
                    path.display(),
                    bytes.len()
                )));
            }
            let text = String::from_utf8(bytes).map_err(|e| {
                CliError::user(format!(
                    "{} is not UTF-8 text (byte {})",
                    path.display(),
                    e.utf8_error().valid_up_to()
                ))
            })?;
            Some((path.clone(), text))
        }
        None => None,
    };
    let goal = match (&args.goal, &spec) {
        (Some(g), _) if !g.trim().is_empty() => g.clone(),
        (_, Some((path, _))) => format!("What the spec in {} asks for.", path.display()),
        _ => {
            return Err(CliError::user("say what the plan is for")
                .hint("agentloop plan new \"add a --json flag to the CLI\", or --from SPEC.md"));
        }
    };
    let layered = super::load_config(
        &ws.root,
        &args.output,
        &serde_json::Map::new(),
        serde_json::Map::new(),
    )?;
    let config = layered.config;
    let name = args
        .agent
        .clone()
        .unwrap_or_else(|| config.run.agent.clone());
    let (agent, held) = agentloop_agents::resolve_read_only(&config, &name)
        .map_err(|e| CliError::user(e.to_string()).hint(e.hint()))?;
    let drafts = ws
        .dir
        .join("drafts")
        .join(agentloop_ground::clock::now_ms().to_string());
    std::fs::create_dir_all(&drafts)
        .map_err(|e| CliError::internal(format!("cannot create {}: {e}", drafts.display())))?;
    let copy = Copy::make(&ws.root, &drafts);
    let text = prompt(
        &copy.dir,
        &goal,
        spec.as_ref().map(|(p, t)| (p.as_path(), t.as_str())),
        args.tasks,
    );
    let prompt_file = drafts.join("prompt.md");
    agentloop_ground::fsutil::write_atomic(&prompt_file, text.as_bytes())
        .map_err(|e| CliError::internal(format!("cannot write the prompt: {e}")))?;
    eprintln!(
        "agentloop: {name} drafts the plan, reading {}{}",
        if copy.worktree {
            "a copy of the repository at HEAD"
        } else {
            "the project in place (not a git repository with a commit)"
        },
        if held {
            ", with its read-only tools"
        } else {
            ""
        }
    );
    let inv = agentloop_agents::Invocation {
        run_id: "plan-new",
        run_dir: &drafts,
        iteration: 0,
        workdir: &copy.dir,
        prompt: &text,
        prompt_file: &prompt_file,
        log: &drafts.join("agent.log"),
        pid_file: &drafts.join("agent.pid"),
        wrap: Vec::new(),
    };
    let run = agent.run(&inv, &mut || false);
    if let Some(e) = &run.error {
        return Err(
            CliError::user(format!("{name} could not draft the plan: {}", e.message)).hint(
                format!("its output is in {}", drafts.join("agent.log").display()),
            ),
        );
    }
    eprintln!(
        "agentloop: drafted in {:.1}s · {}",
        run.finished.duration.as_secs_f64(),
        money(run.cost_usd)
    );
    let draft_file = drafts.join("PLAN.md");
    let Some(draft) = extract(&run.final_message) else {
        let _ = agentloop_ground::fsutil::write_atomic(&draft_file, run.final_message.as_bytes());
        return Err(CliError::internal(format!(
            "{name}'s answer has no plan in it (no `# Title` line); it is in {}",
            draft_file.display()
        )));
    };
    agentloop_ground::fsutil::write_atomic(&draft_file, draft.as_bytes())
        .map_err(|e| CliError::internal(format!("cannot keep the draft: {e}")))?;
    let plan = Plan::parse(&draft_file.display().to_string(), &draft).map_err(|e| {
        CliError::internal(format!("the draft is not a valid plan: {}", e.located()))
            .hint(format!("the draft is in {}", draft_file.display()))
    })?;
    super::plan_agents_exist(&config, &plan, &draft_file.display().to_string())?;
    let findings = check_commands(&plan, &copy.dir, &drafts, &config);
    drop(copy);
    outln!("{}", draft.trim_end());
    eprintln!(
        "agentloop: the draft: {} · {}",
        plan.title,
        plural(plan.tasks.len(), "task", "tasks")
    );
    let mut refused = false;
    for f in &findings {
        match f {
            Finding::CannotRun { task, command } => {
                refused = true;
                eprintln!("  refused: {task}: `{command}` cannot run here (command not found)");
            }
            Finding::AlreadyPasses { task, command } => eprintln!(
                "  warning: {task}: `{command}` passes before any work: it does not test its task"
            ),
        }
    }
    for t in plan.tasks.iter().filter(|t| plan.checks(&t.id).is_empty()) {
        eprintln!(
            "  warning: {}: nothing checks it: it rests on the agent's word",
            t.id
        );
    }
    if plan.tasks.len() > args.tasks as usize {
        return Err(CliError::user(format!(
            "the draft has {} tasks, more than a first plan's {}; {} was not written",
            plan.tasks.len(),
            args.tasks,
            args.output.display()
        ))
        .hint(format!(
            "ask again, or take a plan this size with --tasks {} (the draft is in {})",
            plan.tasks.len(),
            draft_file.display()
        )));
    }
    if refused {
        return Err(CliError::user(format!(
            "the draft names checks that cannot run; {} was not written",
            args.output.display()
        ))
        .hint(format!(
            "the draft is in {}: fix its Verify: lines, or ask again",
            draft_file.display()
        )));
    }
    let approved = if args.yes {
        true
    } else if std::io::stdin().is_terminal() {
        eprint!("Write it to {}? [y/N] ", args.output.display());
        let _ = std::io::stderr().flush();
        let mut answer = String::new();
        let _ = std::io::stdin().lock().read_line(&mut answer);
        matches!(answer.trim(), "y" | "Y" | "yes")
    } else {
        eprintln!(
            "agentloop: the plan waits for your approval; nothing was written to {}",
            args.output.display()
        );
        eprintln!(
            "  hint: run again with --yes to accept a draft as it is, or copy {} to {}",
            draft_file.display(),
            args.output.display()
        );
        return Ok(ExitKind::Waiting);
    };
    if !approved {
        eprintln!(
            "agentloop: not written; the draft stays in {}",
            draft_file.display()
        );
        return Ok(ExitKind::Waiting);
    }
    agentloop_ground::fsutil::write_atomic(&output, draft.as_bytes())
        .map_err(|e| CliError::internal(format!("cannot write {}: {e}", args.output.display())))?;
    eprintln!(
        "agentloop: wrote {}; `agentloop run` works through it",
        args.output.display()
    );
    Ok(ExitKind::Completed)
}

#[cfg(test)]
mod tests {
    use super::extract;

    #[test]
    fn the_plan_is_found_in_the_answer() {
        assert_eq!(
            extract("Here it is:\n\n# P\n\n## T1: x\nVerify: make\n").as_deref(),
            Some("# P\n\n## T1: x\nVerify: make\n")
        );
        assert_eq!(
            extract("Sure.\n```markdown\n# P\n\n## T1: x\n```\nDone.").as_deref(),
            Some("# P\n\n## T1: x\n")
        );
        assert_eq!(
            extract("---\nbudgets:\n  max_iterations: 3\n---\n# P\n").as_deref(),
            Some("---\nbudgets:\n  max_iterations: 3\n---\n# P\n")
        );
        assert_eq!(extract("no plan here"), None);
    }
}
