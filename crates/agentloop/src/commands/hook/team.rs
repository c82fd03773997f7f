//! Agent teams: TaskCompleted refuses a completion agentloop cannot verify, and
//! TeammateIdle keeps a teammate working while a task it can take is ready.

use agentloop_journal::{Event, RunState, TaskStatus};
use agentloop_plan::{Mode, Task};
use agentloop_verify::verify::Runner;
use agentloop_workspace::{Loaded, RunDir, Workspace};

use super::drive::{find_run, run_config};
use super::input::{Common, TaskCompleted, TeammateIdle};

/// The plan task a team task stands for: its id in the subject, or the same title.
fn plan_task_for<'a>(s: &'a RunState, subject: &str) -> Option<&'a Task> {
    s.plan.tasks.iter().find(|t| {
        subject
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .any(|w| w == t.id)
            || subject.trim().eq_ignore_ascii_case(&t.title)
    })
}

/// The hook-mode run a team event belongs to (team events may come without a session).
fn team_run(ws: &Workspace, common: &Common) -> Result<Option<(RunDir, Loaded)>, String> {
    find_run(ws, common)
}

/// TaskCompleted: refused (exit 2) when the files that verify the task changed since
/// the run began, its checks fail on a clean copy of the work or, in tdd mode, no test
/// file changed. Accepted, it is recorded: the run counts the task done (in pair mode,
/// waiting for a person's review at the gate after it).
pub(super) fn task_completed(input: &TaskCompleted) -> Result<Option<String>, String> {
    let ws = Workspace::find(&input.common.cwd());
    let Some((run, loaded)) = team_run(&ws, &input.common)? else {
        return Ok(None);
    };
    let s = &loaded.state;
    // `[hook] task_gate = false`: the teammate's completion is not checked here; the
    // task is verified when the lead stops, as any other.
    if !s.settings.task_gate {
        return Ok(None);
    }
    let Some(task) = plan_task_for(s, &input.task_subject) else {
        return Ok(None);
    };
    if s.task(&task.id)
        .is_some_and(|t| t.status == TaskStatus::Done)
    {
        return Ok(None);
    }
    if let Some(base) = &s.baseline {
        use agentloop_verify::surface;
        let changes = surface::check(&ws.root, base, &s.project(&ws.root))?;
        if !changes.is_empty() {
            let list: Vec<String> = changes.iter().map(|c| c.describe()).collect();
            return Ok(Some(format!(
                "agentloop: task {} is not complete: files that verify it changed since the run began: {}. Put them back; a person who wants the change runs `agentloop verify-surface --accept`.",
                task.id,
                list.join(", ")
            )));
        }
    }
    let commands: Vec<String> = s
        .plan
        .checks(&task.id)
        .into_iter()
        .chain(s.settings.verify_commands.iter().cloned())
        .collect();
    let measures = s.plan.measures(&task.id);
    let dir = run.path.join("team");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let config = run_config(&ws, &loaded)?;
    // The checks run on a clean copy of the work, as the driver's do.
    let copy = agentloop_verify::clean_copy::CleanCopy::for_run(&ws.root, &run.id)
        .filter(|_| s.settings.clean_copy);
    let admission = agentloop_verify::clean_copy::admission(s, &ws.root, &[task.id.as_str()])?;
    let judge = agentloop_verify::clean_copy::Judge {
        overlay: s.baseline.as_ref(),
        admission: admission.as_ref(),
    };
    let workdir = match &copy {
        Some(c) => c
            .refresh_judged(judge, &s.settings.carry)
            .map(|_| c.dir.clone())?,
        None => ws.root.clone(),
    };
    let runner = Runner {
        workdir: &workdir,
        timeout: config.verify.timeout,
        output_cap: config.verify.output_cap,
        jobs: config.verify.jobs_for(1),
        log: &dir.join(format!("{}-verify.log", task.id)),
        // Confined as the driver's checks are (no report: its copy is its place).
        wrap: agentloop_exec::sandbox::judge::wrap(
            &s.settings.sandbox,
            &ws.root,
            &workdir,
            &workdir,
            &agentloop_exec::sandbox::judge::WarmCaches::Fresh,
        ),
        bytecode: Default::default(),
        tests: None,
    };
    let v = runner
        .run_measured(0, &commands, &measures, || false)
        .map_err(|e| e.to_string())?;
    if !v.passed {
        return Ok(Some(format!(
            "agentloop: task {} is not complete: verification failed.\n{}",
            task.id,
            v.digest.unwrap_or_default()
        )));
    }
    if s.mode_of(&task.id) == Mode::Tdd && !tests_touched(&ws, s, &task.id) {
        return Ok(Some(format!(
            "agentloop: task {} is in tdd mode and no test file changed; write the failing test first",
            task.id
        )));
    }
    let mut w = loaded.writer(&run).map_err(|e| e.to_string())?;
    w.append(&Event::TeamTaskCompleted {
        task: task.id.clone(),
        teammate: input.teammate_name.clone(),
    })
    .map_err(|e| e.to_string())?;
    Ok(None)
}

/// Whether the task's work touched a test: in the tree now, in the commits made since
/// the task began (or, with no iteration of it recorded, since the run was created),
/// or in an iteration agentloop saw.
fn tests_touched(ws: &Workspace, s: &RunState, task: &str) -> bool {
    let is_test = |f: &String| agentloop_project::is_test_path(f, &s.settings.test_patterns);
    if s.task(task).is_some_and(|t| t.tests_touched) {
        return true;
    }
    let dirty = agentloop_exec::git::Snapshots::new(&ws.root)
        .and_then(|g| g.take())
        .is_some_and(|snap| snap.dirty.keys().any(is_test));
    let base = s
        .task(task)
        .and_then(|t| t.head_at_start.clone())
        .or_else(|| s.head_at_create.clone());
    let committed = base.is_some_and(|b| {
        agentloop_exec::git::changed_files(&ws.root, &b, "HEAD")
            .iter()
            .any(is_test)
    });
    dirty || committed
}

/// TeammateIdle: keeps a teammate working while a task it can take is pending.
pub(super) fn teammate_idle(input: &TeammateIdle) -> Result<Option<String>, String> {
    let ws = Workspace::find(&input.common.cwd());
    let Some((_, loaded)) = team_run(&ws, &input.common)? else {
        return Ok(None);
    };
    let s = &loaded.state;
    let busy = s.current().map(|o| o.started.task.clone());
    let next = s.plan.tasks.iter().zip(&s.tasks).find(|(pt, st)| {
        st.status == TaskStatus::Pending
            && Some(&pt.id) != busy.as_ref()
            && pt
                .depends
                .iter()
                .all(|d| s.task(d).is_some_and(|t| t.status.is_settled()))
    });
    Ok(next.map(|(pt, _)| {
        format!(
            "agentloop: task {} ({}) is pending and ready; take it next",
            pt.id, pt.title
        )
    }))
}
