//! What a run needs before it starts or resumes (each refusal says how to go on): a
//! terminal for `--interactive`, budgets within their ceilings, its held-out checks
//! ready, no other run driving the tree, and confined checks where it demands them.

use std::path::Path;

use agentloop_plan::Plan;
use agentloop_workspace::Workspace;

use crate::cli::OutputArgs;
use crate::error::CliError;

/// The menu of `--interactive` is asked on a terminal.
pub(crate) fn interactive_needs_a_terminal(out: &OutputArgs) -> Result<(), CliError> {
    use std::io::IsTerminal;
    if out.interactive && !std::io::stdin().is_terminal() {
        return Err(CliError::user("--interactive asks between iterations on a terminal, and there is none")
            .hint("run it in a terminal, or leave --interactive out (`agentloop next` takes one step at a time)"));
    }
    Ok(())
}

pub(crate) fn ceiling(limit: Option<f64>, force: bool) -> Result<(), CliError> {
    agentloop_ground::values::cost_ceiling(limit, force).map_err(|e| {
        CliError::user(e).hint("pass --force to allow it, or lower [budgets] max_cost_usd")
    })
}

/// The iteration budget's ceiling for a plan of `tasks` tasks.
pub(crate) fn iterations_ceiling(limit: u32, tasks: usize, force: bool) -> Result<(), CliError> {
    agentloop_ground::values::iterations_ceiling(limit, tasks, force).map_err(|e| {
        CliError::user(e).hint("pass --force to allow it, or lower [budgets] max_iterations")
    })
}

/// Held-out checks the plan names can run: `[verify] holdout` is a directory outside
/// the project with each `NAME.sh`, and checks run on a clean copy.
pub(crate) fn held_out_ready(
    config: &agentloop_config::Config,
    plan: &Plan,
    root: &Path,
) -> Result<(), CliError> {
    let names: Vec<String> = plan
        .tasks
        .iter()
        .flat_map(|t| t.holdout.iter().cloned())
        .collect();
    let Some(first) = plan.tasks.iter().find(|t| !t.holdout.is_empty()) else {
        return Ok(());
    };
    let Some(dir) = &config.verify.holdout else {
        return Err(CliError::user(format!(
            "task {} names held-out checks (`Holdout:`), and `[verify] holdout` names no directory for them",
            first.id
        ))
        .hint("set `[verify] holdout = \"~/holdout/PROJECT\"` (outside the project), with NAME.sh for each check"));
    };
    if !config.verify.clean_copy || !agentloop_exec::git::is_repo(root) {
        return Err(CliError::user(
            "held-out checks run only on a clean copy of the agent's work (a git work tree, `[verify] clean_copy = true`): anywhere else the agent would see them",
        ));
    }
    let dir = root.join(agentloop_ground::fsutil::expand_home(dir));
    match agentloop_verify::verify::holdout_problem(&dir, root, &names) {
        Some(p) => Err(CliError::user(p)),
        None => Ok(()),
    }
}

/// One run drives a work tree at a time: two would each take the other's changes for
/// their own. (Parallel runs need their own worktrees.)
pub(crate) fn one_run_per_tree(ws: &Workspace) -> Result<(), CliError> {
    for id in ws.run_ids() {
        let run = ws.resolve(Some(&id))?;
        let Ok(loaded) = run.load_cached() else {
            continue;
        };
        let s = &loaded.state;
        if s.is_finished() {
            continue;
        }
        let how = match run.lock_holder() {
            Some(pid) => format!("driven by pid {pid}"),
            None if s.settings.hook => "in hook mode".to_string(),
            None => s.status.as_str().to_string(),
        };
        return Err(CliError::user(format!(
            "run {id} is active in this work tree ({how}); one run drives a work tree at a time"
        ))
        .hint(format!(
            "go on with it (`agentloop resume`), or end it first (`agentloop stop --run {id}`)"
        )));
    }
    Ok(())
}

/// `[sandbox] verify = true`: the run starts only where its checks can be confined.
pub(crate) fn judge_confinable(sandbox: &agentloop_config::SandboxConfig) -> Result<(), CliError> {
    if sandbox.verify != agentloop_config::ConfineChecks::Always {
        return Ok(());
    }
    agentloop_exec::sandbox::judge::works(&sandbox.bwrap).map_err(|e| {
        CliError::user(format!("[sandbox] verify = true: {e}")).hint(
            "or let the checks run unconfined where they cannot be confined: [sandbox] verify = \"auto\" (the verdict is MONITOR then)",
        )
    })
}
