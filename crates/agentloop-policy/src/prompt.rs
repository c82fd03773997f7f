//! The prompt of one iteration: everything the fresh agent process knows comes from
//! here and from the files in the working tree.

use std::fmt::Write as _;

use agentloop_journal::{Event, IterationKind, Record, RunState, TaskStatus};
use agentloop_plan::Mode;

const TDD_PREAMBLE: &str = "Work test-first (red, green, refactor): write or extend a test that fails for the \
missing behaviour, run it and see it fail, write the simplest code that makes it pass, then tidy up. The task \
is not complete unless your changes include tests.";

/// Where a DEBUG iteration's logging points write (NDJSON), in the project's root;
/// agentloop keeps it with the iteration as `debug.log`.
pub const DEBUG_LOG: &str = "agentloop-debug.log";

/// A refactor's rule (the seeds' workflow C): deletion before redesign.
const REFACTOR_PREAMBLE: &str = "This is a refactor: what the code does stays as it is. Delete before you redesign: first remove what is dead, duplicated or unused (and nothing that is used), with every test still passing; only then reshape what is left. Change no test's expectations: a test that passes now must pass after your change, unchanged.";

/// The prompt iteration `iteration` was given, made again from the records before it
/// began: the driver makes it from the run's state alone, so the journal keeps what an
/// iteration's `prompt.md` (a view, not fsynced) said. `None`: no such iteration.
pub fn of_iteration(records: &[Record], iteration: u32) -> Option<String> {
    let at = records
        .iter()
        .position(|r| matches!(&r.event, Event::IterationStarted(i) if i.iteration == iteration))?;
    let Event::IterationStarted(started) = &records[at].event else {
        return None;
    };
    let state = RunState::fold(&records[..at]).ok()?;
    Some(build(&state, &started.task, started.kind))
}

/// Builds the prompt for an iteration of `task_id`.
pub fn build(s: &RunState, task_id: &str, kind: IterationKind) -> String {
    let mut p = String::new();
    let Some(task) = s.plan_task(task_id) else {
        return format!("Task {task_id} is not in the plan.\n");
    };
    let position = s.position(task_id);
    let _ = writeln!(p, "# {}\n", s.plan.title);
    if !s.plan.goal.is_empty() {
        let _ = writeln!(p, "Goal of the whole plan: {}\n", s.plan.goal);
    }
    if !s.settings.context.is_empty() {
        let files: Vec<String> = s
            .settings
            .context
            .iter()
            .map(|f| format!("`{f}`"))
            .collect();
        let _ = writeln!(
            p,
            "Read first, before you change anything: {} (the project's own instructions).\n",
            files.join(", ")
        );
    }
    let _ = writeln!(
        p,
        "## Your task: {} — {} (task {position} of {})\n",
        task.id,
        task.title,
        s.plan.tasks.len()
    );
    if !task.body.is_empty() {
        let _ = writeln!(p, "{}\n", task.body);
    }
    if !task.acceptance.is_empty() {
        p.push_str("Acceptance criteria (all must hold):\n");
        for c in &task.acceptance {
            let _ = writeln!(p, "- {}", c.text);
        }
        p.push('\n');
    }
    let mut commands = s.plan.checks_of(s.plan_task(task_id));
    commands.extend(s.settings.verify_commands.iter().cloned());
    if !commands.is_empty() {
        p.push_str("agentloop will verify your work by running these commands itself; they must all exit 0:\n");
        for c in commands {
            let _ = writeln!(p, "- `{c}`");
        }
        p.push('\n');
    }
    let others: Vec<String> = s
        .plan
        .requirements(task_id)
        .into_iter()
        .filter_map(|r| match r.kind {
            agentloop_plan::Evidence::Measurement => Some(format!("{} (measured)", r.describe())),
            agentloop_plan::Evidence::Observation => {
                Some(format!("{} (a person will confirm it)", r.text))
            }
            agentloop_plan::Evidence::Assumption => Some(format!("{} (assumed)", r.text)),
            agentloop_plan::Evidence::Execution => None,
        })
        .collect();
    if !others.is_empty() {
        p.push_str("Criteria:\n");
        for c in others {
            let _ = writeln!(p, "- {c}");
        }
        p.push('\n');
    }
    if !task.scope.is_empty() {
        let _ = writeln!(p, "Only change files under: {}\n", task.scope.join(", "));
    }
    if s.mode_of(task_id) == Mode::Tdd {
        let _ = writeln!(p, "## Mode: test-driven\n\n{TDD_PREAMBLE}\n");
    }
    if let Some(v) = s.task(task_id).and_then(|t| t.unknown_next.as_deref()) {
        let _ = writeln!(
            p,
            "## What agentloop could not act on\n\nYour last answer said `NEXT_ACTION_NEEDED: {v}`; agentloop acts on {}. Nothing was done about it.\n",
            agentloop_ground::signals::NEXT_ACTIONS
        );
    }
    if s.settings.workflow.as_deref() == Some(agentloop_plan::Workflow::Refactor.as_str()) {
        let _ = writeln!(p, "## Workflow: refactor\n\n{REFACTOR_PREAMBLE}\n");
    }
    let phase = if kind == IterationKind::Debug {
        "debug"
    } else if task_id.starts_with("VALIDATE-") {
        "validate"
    } else {
        "develop"
    };
    p.push_str(&agentloop_config::skills_section(
        &s.required_skills(),
        phase,
    ));

    let done: Vec<_> = s
        .tasks
        .iter()
        .filter(|t| t.status == TaskStatus::Done)
        .collect();
    if !done.is_empty() {
        p.push_str("## Progress so far\n\nThese tasks are done and verified; do not redo them:\n");
        for t in done {
            let _ = writeln!(p, "- {}: {}", t.id, t.title);
        }
        p.push('\n');
    }
    if !s.learnings.is_empty() {
        p.push_str("## Learnings from earlier iterations\n\n");
        for l in s
            .learnings
            .iter()
            .rev()
            .take(20)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
        {
            let _ = writeln!(p, "- {l}");
        }
        p.push('\n');
    }
    if let Some(d) = s.task(task_id).and_then(|t| t.last_digest.as_ref()) {
        if kind == IterationKind::Debug {
            let _ = writeln!(p, "## The failure that keeps coming back\n\n{d}\n");
        } else {
            let _ = writeln!(
                p,
                "## Last attempt failed\n\n{d}\n\nFix this before anything else.\n"
            );
        }
    }
    // This task's last iteration's refusals, else those of the iteration just before.
    let denials: Vec<&agentloop_journal::Denial> = match s.task(task_id) {
        Some(t) if !t.denials.is_empty() => t.denials.iter().collect(),
        _ => s
            .sandbox
            .recent
            .iter()
            .filter(|(i, _)| *i == s.iterations)
            .map(|(_, d)| d)
            .collect(),
    };
    if !denials.is_empty() {
        p.push_str("## The sandbox refused these in the last iteration\n\n");
        for d in denials {
            let _ = writeln!(p, "- {}", d.describe());
        }
        p.push_str("\nWork inside your working directory and reach only the allowed hosts; if the task needs more, say `BLOCKED:` with what and why.\n\n");
    }
    if let Some(pat) = s
        .task(task_id)
        .and_then(|t| t.last_fingerprint.as_ref())
        .and_then(|fp| s.patterns.get(fp))
        .filter(|pat| pat.learnable())
    {
        let _ = writeln!(
            p,
            "## A failure that keeps coming back\n\nIn this run {}. When you find what causes it, say it in a `LEARNING:` line.\n",
            pat.hint()
        );
    }
    if kind != IterationKind::Debug
        && let Some(u) = s.task(task_id).and_then(|t| t.understanding.as_ref())
    {
        let _ = writeln!(
            p,
            "## What a debug iteration found about this failure\n\n{u}\n\nUse it: fix the cause it points to, and remove any temporary instrumentation it left.\n"
        );
    }
    if let Some(q) = s.task(task_id).and_then(|t| t.question.as_ref()) {
        let _ = writeln!(
            p,
            "## Your question\n\nIn the last iteration you asked: {q}"
        );
        if s.steer.is_empty() {
            p.push_str("No answer was given: go on with your best judgement.\n\n");
        } else {
            p.push_str("A person's answer is in the notes below.\n\n");
        }
    }
    if !s.steer.is_empty() {
        p.push_str("## Notes from a person\n\n");
        for n in &s.steer {
            let _ = writeln!(p, "- {n}");
        }
        p.push('\n');
    }
    match kind {
        IterationKind::Replan => p.push_str(
            "## This task keeps failing: replan it\n\nDo not try the same approach again. Explain in one paragraph \
             why the task fails as written, then end your reply with a line `REPLAN` followed by the tasks that \
             should replace it, in PLAN.md syntax (`## ID: Title`, `Verify: command`, `Depends: ID`, an \
             `Acceptance:` checklist). Use new ids. The original task's verification commands will still be run \
             after the last of your tasks.\n\n",
        ),
        IterationKind::Fallback => p.push_str(
            "## You are taking over\n\nAnother agent could not complete this task; the failure above is what it \
             left. Look at the working tree with fresh eyes.\n\n",
        ),
        IterationKind::Debug => {
            let failed = s.task(task_id).is_some_and(|t| t.last_fingerprint.is_some());
            p.push_str(&format!(
                "## DEBUG: find the cause, do not fix it yet\n\n{} This iteration is for \
                 understanding it, not for a fix: nothing you change now is verified.\n\n\
                 1. Hypotheses: list what could explain it; for each, a condition that would confirm or refute it.\n\
                 2. Instrument: add temporary logging points where the hypotheses say to look. Each appends one \
                 JSON object per line (NDJSON) to `{DEBUG_LOG}` in the project's root: \
                 `{{\"at\": \"file:line\", \"hypothesis\": 1, \"values\": {{…}}}}`.\n\
                 3. Run what fails, then read `{DEBUG_LOG}`: which hypotheses does it confirm, which refute?\n\
                 4. Take the logging points out again (agentloop keeps `{DEBUG_LOG}` with this iteration and \
                 removes it from the tree).\n\n\
                 Write each hypothesis on a line of its own:\n\n`HYPOTHESIS: <what might cause it> | TEST: <how it \
                 was tested> | RESULT: confirmed, refuted or untested`\n\nThen what you now understand of the \
                 cause, under a line `UNDERSTANDING:`. The next iteration gets all of it.\n\n",
                if failed {
                    "The same failure came back."
                } else {
                    "This is a bug: find its cause before anyone fixes it."
                }
            ));
            return p;
        }
        _ => {}
    }
    p.push_str(
        "## How to report back\n\nEnd your final message with exactly one of these, on a line of its own:\n\
         - `TASK_COMPLETE` when every acceptance criterion holds and the verification commands pass. agentloop \
         runs them itself: a claim that does not verify is retried with the failure.\n\
         - `BLOCKED: <question>` when only a person can decide how to go on.\n\
         - `REPLAN` followed by replacement tasks in PLAN.md syntax, when the task cannot be done as written.\n\
         You may add lines `LEARNING: <fact>` for things the next iteration should know (build quirks, \
         conventions).\n",
    );
    p
}
