//! `agentloop plan check` and `agentloop plan import`.

use std::path::Path;

use agentloop_ground::words::plural;

use crate::error::{CliError, ExitKind};

pub fn check(cwd: &Path, path: &Path, as_json: bool, baseline: bool) -> Result<ExitKind, CliError> {
    let ws = agentloop_workspace::Workspace::find(cwd);
    // The front matter must be valid configuration too (and says whether planners may
    // grow a plan that has its goal alone).
    let (plan, layered) =
        super::plan_and_config(&ws.root, &cwd.join(path), path, serde_json::Map::new())?;
    super::plan_agents_exist(&layered.config, &plan, &path.display().to_string())?;
    checks_can_start(&ws.root, &plan, &layered.config)?;
    hermetic(&ws.root, &layered.config)?;
    if as_json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&plan).unwrap_or_default()
        );
        return Ok(ExitKind::Completed);
    }
    outln!(
        "{}: {} · {} · valid",
        path.display(),
        plan.title,
        plural(plan.tasks.len(), "task", "tasks")
    );
    let width = plan.tasks.iter().map(|t| t.id.len()).max().unwrap_or(2);
    for t in &plan.tasks {
        let mut extra = Vec::new();
        if !t.depends.is_empty() {
            extra.push(format!("after {}", t.depends.join(", ")));
        }
        extra.push(format!("{} verify", t.verify.len()));
        if !t.acceptance.is_empty() {
            extra.push(plural(t.acceptance.len(), "criterion", "criteria"));
        }
        if let Some(g) = t.gate {
            extra.push(format!(
                "gate {}",
                if g == agentloop_plan::GatePoint::Before {
                    "before"
                } else {
                    "after"
                }
            ));
        }
        if let Some(m) = t.mode {
            extra.push(format!("mode {m}"));
        }
        if let Some(a) = &t.agent {
            extra.push(format!("agent {a}"));
        }
        let (class, _) = agentloop_plan::reversibility(t);
        extra.push(format!("class {}", class.as_str()));
        if agentloop_plan::interface_update(t).is_some() {
            extra.push(if layered.config.gates.architecture.enabled {
                "interface update: reviewed as architecture".into()
            } else {
                "interface update? `[gates] architecture` would review it".into()
            });
        }
        outln!("  {:width$}  {}  ({})", t.id, t.title, extra.join(" · "));
    }
    let plan_wide = plan
        .settings
        .get("verify")
        .and_then(|v| v.get("commands"))
        .and_then(|c| c.as_array())
        .is_some_and(|c| !c.is_empty());
    let clarity = agentloop_plan::assess(&plan);
    use agentloop_config::ShapeSetting;
    let gates = |shape: agentloop_plan::Shape| match shape {
        agentloop_plan::Shape::Tool => "no check-ins",
        agentloop_plan::Shape::Colleague => {
            "plan approval, its review, after each task, a final review"
        }
        agentloop_plan::Shape::Intent => {
            "waits at plan approval with its questions, then as a colleague"
        }
    };
    let taken = match layered.config.run.shape {
        ShapeSetting::Auto => None,
        ShapeSetting::Tool => Some(agentloop_plan::Shape::Tool),
        ShapeSetting::Colleague => Some(agentloop_plan::Shape::Colleague),
        ShapeSetting::Intent => Some(agentloop_plan::Shape::Intent),
    };
    match taken {
        None => outln!(
            "clarity {} · shape {}{}: {}",
            clarity.describe(),
            clarity.shape.as_str(),
            if clarity.runnable && agentloop_plan::Shape::of(clarity.score) != clarity.shape {
                " (every task has a check and names its tests)"
            } else {
                ""
            },
            gates(clarity.shape)
        ),
        Some(s) => outln!(
            "clarity {} (shape {}) · shape {} as `[run] shape` sets it: {}",
            clarity.describe(),
            clarity.shape.as_str(),
            s.as_str(),
            gates(s)
        ),
    }
    if !layered.config.run.confirm {
        outln!("proceeds without confirmation: none of the gates that only confirm");
    }
    use agentloop_config::WorkflowSetting;
    let set = layered.config.run.workflow;
    if set == WorkflowSetting::Auto {
        let (workflow, why) = agentloop_plan::workflow(&plan);
        if workflow.taken_from_words() {
            outln!(
                "workflow {} ({why}; `[run] workflow` sets it)",
                workflow.as_str()
            );
        } else {
            outln!(
                "workflow feature · suggested: {} ({why}; it {}): `[run] workflow = \"{}\"` or the plan's front matter takes it",
                workflow.as_str(),
                workflow.effect(),
                workflow.as_str()
            );
        }
    } else {
        let name = serde_json::to_value(set)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default();
        outln!("workflow {name} (set by `[run] workflow`)");
    }
    for d in clarity.dimensions.iter().filter(|d| d.score < 2) {
        outln!(
            "  {} {}: {} — {}",
            d.name,
            d.score,
            d.why,
            d.question.unwrap_or_default()
        );
    }
    if baseline {
        super::plan_baseline::check(&ws.root, &plan, &layered.config)?;
    }
    if let Some(t) = plan.tasks.iter().find(|t| !t.holdout.is_empty())
        && !layered.config.sandbox.on()
    {
        let logs = agentloop_ground::fsutil::state_dir()
            .map(|d| d.join("held-out").display().to_string())
            .unwrap_or_else(|| "agentloop's state directory".into());
        crate::render::warn(&format!(
            "task {} names held-out checks, and they are kept from the agent only under `[sandbox] mode = \"workspace\"`: without it the agent's processes run as you and can read `[verify] holdout` and the held-out checks' logs ({logs})",
            t.id
        ));
    }
    for t in plan.tasks.iter().filter(|t| t.verify.is_empty()) {
        if !plan_wide && layered.config.verify.commands.is_empty() {
            crate::render::warn(&format!(
                "task {} has no `Verify:` command; unless agentloop.toml sets [verify] commands, its completion rests on the agent's word",
                t.id
            ));
        }
    }
    Ok(ExitKind::Completed)
}

/// The plan of a tracker's open issues.
/// A layout in which the checks would reach the user's own tree instead of the tree
/// judged is named, with the way out.
fn hermetic(root: &Path, config: &agentloop_config::Config) -> Result<(), CliError> {
    if !config.verify.clean_copy {
        return Ok(());
    }
    let leaks = agentloop_project::hermetic::leaks(root);
    if leaks.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = leaks
        .iter()
        .map(|l| format!("  {}: {}", l.what, l.fix))
        .collect();
    Err(CliError::user(format!(
        "the checks would read your working tree, not the tree judged:\n{}",
        list.join("\n")
    )))
}

/// A plan whose checks cannot start on this machine is not valid: every verification
/// would fail before it tested anything.
fn checks_can_start(
    root: &Path,
    plan: &agentloop_plan::Plan,
    config: &agentloop_config::Config,
) -> Result<(), CliError> {
    let commands = plan
        .tasks
        .iter()
        .flat_map(|t| {
            t.verify
                .iter()
                .map(move |v| (format!("{}'s Verify", t.id), v.as_str()))
        })
        .chain(
            config
                .verify
                .commands
                .iter()
                .map(|c| ("[verify] commands".to_string(), c.as_str())),
        );
    let mut wrong = Vec::new();
    for (whose, command) in commands {
        if let Some(why) = agentloop_project::installed::cannot_start(command, root) {
            wrong.push(format!("  {whose} `{command}`: {why}"));
        }
    }
    if wrong.is_empty() {
        return Ok(());
    }
    wrong.dedup();
    Err(CliError::user(format!(
        "{} cannot start on this machine:\n{}",
        plural(wrong.len(), "check", "checks"),
        wrong.join("\n")
    )))
}

fn from_tracker(
    source: &agentloop_forge::tracker::Source,
    api_url: Option<&str>,
) -> Result<agentloop_plan::Imported, CliError> {
    let tracker = agentloop_forge::tracker(source, api_url).map_err(CliError::user)?;
    let issues = tracker
        .issues(&source.filter)
        .map_err(|e| CliError::user(format!("{}: {e}", source.without_filter())))?;
    if issues.is_empty() {
        return Err(CliError::user(format!(
            "{}: no open issue matches{}",
            source.without_filter(),
            if source.filter.is_empty() {
                String::new()
            } else {
                format!(" `{}`", source.filter)
            }
        )));
    }
    let tasks: Vec<agentloop_plan::IssueTask> = issues
        .iter()
        .map(|i| agentloop_plan::IssueTask {
            id: source.task_id(&i.key),
            title: i.title.clone(),
            body: i.body.clone(),
            url: i.url.clone(),
        })
        .collect();
    let dep = |r: &str| match r.strip_prefix('#') {
        Some(n) => Some(source.task_id(n)),
        None => Some(r.to_ascii_uppercase()),
    };
    let mut plan = agentloop_plan::plan_from_issues(
        &source.without_filter(),
        &source.without_filter(),
        &tasks,
        &dep,
    );
    if let Some(url) = api_url {
        plan.settings["tracker"]["api_url"] = serde_json::json!(url);
    }
    Ok(agentloop_plan::Imported {
        plan,
        format: "the issue tracker",
        left_out: Vec::new(),
    })
}

pub fn import(
    file: &Path,
    output: &Path,
    force: bool,
    api_url: Option<&str>,
) -> Result<ExitKind, CliError> {
    let imported = match agentloop_forge::tracker::Source::parse(&file.to_string_lossy()) {
        Some(source) => from_tracker(&source, api_url)?,
        None => {
            let bytes = std::fs::read(file)
                .map_err(|e| CliError::user(format!("{}: {e}", file.display())))?;
            agentloop_plan::import(&file.display().to_string(), &bytes)
                .map_err(|e| CliError::user(e.to_string()))?
        }
    };
    let md = imported.plan.to_markdown();
    if output == Path::new("-") {
        print!("{md}");
    } else {
        if output.exists() && !force {
            return Err(CliError::user(format!("{} exists", output.display()))
                .hint("pass --force to overwrite it, or --output another path (`-` for stdout)"));
        }
        agentloop_ground::fsutil::write_atomic(output, md.as_bytes())?;
        eprintln!(
            "agentloop: wrote {} ({} from {})",
            output.display(),
            plural(imported.plan.tasks.len(), "task", "tasks"),
            imported.format
        );
    }
    if !imported.left_out.is_empty() {
        eprintln!(
            "  left out, already finished in the source: {}",
            imported.left_out.join(", ")
        );
    }
    eprintln!("  next: add `Verify:` commands to each task so agentloop can check the work itself");
    Ok(ExitKind::Completed)
}
