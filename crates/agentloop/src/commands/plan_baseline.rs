//! `agentloop plan check --baseline`: the plan's checks run once on a clean copy of
//! the tree as it is (or taken from agentloop's cache for that tree), and each task's
//! `Tests:` checked against the tests they report.

use std::path::Path;

use agentloop_config::Config;
use agentloop_evidence::names::{NameCheck, check_names};
use agentloop_ground::words::plural;
use agentloop_plan::Plan;
use agentloop_verify::clean_copy::CleanCopy;
use agentloop_verify::verify::{self, BaselineCache};

use crate::error::CliError;

/// Prints the baseline and each named test's standing; a name that matches no test
/// the checks collect is an error.
pub fn check(root: &Path, plan: &Plan, config: &Config) -> Result<(), CliError> {
    let commands = agentloop_policy::evidence::plan_checks(plan, &config.verify.commands);
    if commands.is_empty() {
        outln!("baseline: no checks to run");
        return Ok(());
    }
    let id = format!("plan-check-{}", std::process::id());
    let copy = agentloop_exec::git::is_repo(root)
        .then(|| CleanCopy::for_run(root, &id))
        .flatten();
    // The tree first: a baseline cached for it needs no checkout at all.
    let tree = copy.as_ref().and_then(|c| c.tree_now(None).ok());
    // The tree's files: what the checks are traced on in the clean copy, as the
    // run's baseline traces them (the two share agentloop's cache).
    let files = tree
        .as_deref()
        .and_then(|t| agentloop_verify::surface::tree_files(root, t).ok())
        .unwrap_or_default();
    let traced = copy.is_some() && !files.is_empty();
    let scratch = agentloop_ground::fsutil::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("reports")
        .join(&id);
    let taken = BaselineCache::cached_or(tree.as_deref(), &commands, traced, || {
        // A check that runs a part of another's tests is read from that one's run.
        let parts = commands
            .iter()
            .filter(|c| {
                commands.iter().any(|w| {
                    agentloop_evidence::runner::subset::selected_from(c, w, root).is_some()
                })
            })
            .count();
        let read = if parts > 0 {
            format!(" ({parts} more read from their runs)")
        } else {
            String::new()
        };
        eprintln!(
            "  running {}{read} on a clean copy of the tree…",
            plural(commands.len() - parts, "check", "checks")
        );
        let dir = match (&copy, &tree) {
            (Some(c), Some(t)) => match c.refresh_to(t, &config.verify.carry) {
                Ok(out) => {
                    if let Some(words) =
                        agentloop_verify::clean_copy::lfs_missing_words(&out.lfs_missing)
                    {
                        crate::render::warn(&words);
                    }
                    c.dir.clone()
                }
                Err(e) => {
                    crate::render::warn(&format!(
                        "cannot make a clean copy ({e}); running the checks in the project"
                    ));
                    root.to_path_buf()
                }
            },
            _ => root.to_path_buf(),
        };
        let trace: Vec<String> = if traced && dir != root {
            files.keys().cloned().collect()
        } else {
            Vec::new()
        };
        std::fs::create_dir_all(&scratch)?;
        let log = scratch.join("baseline.log");
        let runner = verify::Runner {
            workdir: &dir,
            timeout: config.verify.timeout,
            output_cap: config.verify.output_cap,
            jobs: config.verify.jobs_for(1),
            log: &log,
            // Confined as the run's baseline will be, so the two agree.
            wrap: agentloop_exec::sandbox::judge::wrap(
                &config.sandbox,
                root,
                &dir,
                &scratch.join("reports"),
                &agentloop_exec::sandbox::judge::WarmCaches::Fresh,
            ),
            bytecode: Default::default(),
            tests: None,
        };
        runner.baseline(
            &scratch.join("reports"),
            &commands,
            tree.clone(),
            &trace,
            || false,
        )
    });
    if let Some(c) = &copy {
        c.remove();
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let baseline = taken?.ok_or_else(|| CliError::internal("the baseline was cut short"))?;
    outln!("baseline: {}", baseline.words());
    // The test files each runner says it ran: what the run protects as tests.
    let paths: std::collections::BTreeSet<&str> = files.keys().map(String::as_str).collect();
    for (c, collected) in
        agentloop_project::collected::of_commands(root, &paths, &baseline.commands)
    {
        let in_files = if collected.is_empty() {
            String::new()
        } else {
            format!(" in {}", plural(collected.len(), "test file", "test files"))
        };
        let how = match (&c.runner, &c.problem) {
            (Some(r), None) => format!("{r}: {}{in_files}", c.counts().words()),
            (Some(r), Some(p)) => format!("{r}: no per-test evidence: {p}"),
            (None, _) => format!(
                "exit code only: no per-test evidence (exit {})",
                c.exit_code
                    .map(|e| e.to_string())
                    .unwrap_or_else(|| "by a signal".into())
            ),
        };
        outln!("  `{}` — {how}", c.command);
    }
    show_model(root, plan, &baseline, &files)?;
    // A check that did not start in the clean copy for want of what the project has
    // installed: that, not the test names, is what to mend.
    if copy.is_some()
        && let Some(why) = baseline.commands.iter().find_map(|c| {
            agentloop_project::did_not_start(
                &c.command,
                c.exit_code,
                c.problem.is_some(),
                root,
                &config.verify.carry,
            )
        })
    {
        return Err(CliError::user(why));
    }
    let collected = baseline.all_tests();
    let mut unmatched = Vec::new();
    for t in plan.tasks.iter().filter(|t| !t.tests.is_empty()) {
        for (name, check) in t.tests.iter().zip(check_names(&t.tests, &collected)) {
            let said = match &check {
                NameCheck::Matched {
                    failing,
                    passing: 0,
                } => {
                    format!("{} failing at baseline", plural(*failing, "test", "tests"))
                }
                NameCheck::Matched { failing, passing } => {
                    crate::render::warn(&format!(
                        "task {}: `{}` names {} that already {} at baseline: nothing for the task to make pass there",
                        t.id,
                        name.pattern,
                        plural(*passing, "test", "tests"),
                        if *passing == 1 { "passes" } else { "pass" }
                    ));
                    format!("{failing} failing, {passing} already passing at baseline")
                }
                NameCheck::NotCollected { file } => format!(
                    "not collected at baseline: {file} does not import yet (judged once it does)"
                ),
                NameCheck::New => "a test the task adds (not there yet)".into(),
                // A test in a file the tree does not hold: the task creates it (and
                // its file reaches the checks: docs/SECURITY.md, default-deny).
                NameCheck::Unmatched
                    if name.pattern.split_once("::").is_some_and(|(file, _)| {
                        file.rsplit('/').next().is_some_and(|f| f.contains('.'))
                            && !file.contains('*')
                            && !root.join(file.trim_start_matches("./")).exists()
                    }) =>
                {
                    "a test in a file the task creates (not there yet)".into()
                }
                NameCheck::Unmatched => {
                    unmatched.push(format!("{}: `{}`", t.id, name.pattern));
                    "matches no test the checks collect".into()
                }
            };
            outln!("  {} {} — {said}", t.id, name.pattern);
        }
    }
    if !unmatched.is_empty() {
        return Err(CliError::user(format!(
            "{} no test the checks collect: {}",
            if unmatched.len() == 1 {
                "a name matches"
            } else {
                "names match"
            },
            unmatched.join(", ")
        ))
        .hint("name tests as the runner reports them (ids are listed in docs/EVIDENCE.md), or mark a test the task adds with `(new)`"));
    }
    Ok(())
}

/// What the checks showed of the project (`agentloop_project::learned`): the count of
/// each role, each plugin loaded by name, each file named like a test that is none,
/// and where names still stand in.
fn show_model(
    root: &Path,
    plan: &Plan,
    baseline: &agentloop_evidence::TestsBaseline,
    files: &agentloop_verify::surface::TreeFiles,
) -> Result<(), CliError> {
    if files.is_empty() {
        return Ok(());
    }
    let harness = agentloop_verify::surface::harness_of(root, baseline, files);
    let words: Vec<String> = plan
        .tasks
        .iter()
        .map(|t| {
            let tests = t.tests.iter().map(|n| n.pattern.as_str());
            [t.title.as_str(), t.body.as_str()]
                .into_iter()
                .chain(tests)
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    let model = agentloop_verify::surface::learn(root, baseline, files, &harness, &words);
    outln!(
        "project (learned from the checks' reports and what they opened): {}",
        model.words()
    );
    for (path, f) in &model.files {
        if f.role == agentloop_evidence::Role::Plugin {
            outln!("  plugin {path} — {}", f.how);
        }
    }
    for path in model.not_tests.iter().take(10) {
        outln!(
            "  not a test: {path} — {}",
            agentloop_evidence::learned::NOT_A_TEST
        );
    }
    if model.not_tests.len() > 10 {
        outln!(
            "  not a test: {} more (`status --json` lists them once a run has taken the baseline)",
            model.not_tests.len() - 10
        );
    }
    for why in &model.names_stand_in {
        outln!("  names stand in: {why}");
    }
    Ok(())
}
