//! Scenarios from a seed: a plan with dependencies, gates and tripwires, a
//! configuration (workers, shape, kind of work, reviewer), and what each attempt of
//! each task does — all drawn from the seed, so a failing seed replays exactly.

use agentloop_config::{
    AfterMergeFailure, Config, Forge, MergeWhen, PrScope, ReviewConfig, ReviewWhen, ShapeSetting,
    WorkflowSetting,
};

use super::rng::Rng;

/// One simulated run's world before it starts.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub seed: u64,
    /// The plan's text (PLAN.md).
    pub plan: String,
    pub config: Config,
    pub tasks: Vec<String>,
    /// In percent: how often an attempt goes wrong in each way.
    trouble: u64,
    /// What its attempts are like.
    pub profile: Profile,
    /// With planners (`[run] planners`): the tasks they add, a round at a time — a
    /// planner proposes the first round not yet in the plan, then nothing.
    pub growth: Vec<Vec<String>>,
    /// What a person asks of the run unprompted (`steer`, `pause`, `skip`…), each
    /// once a number of tasks are done: a point of the run that is the same with
    /// faults or without.
    pub requests: Vec<Asked>,
    /// Runs that ship (`[ship]` on): in percent, how often the forge's checks are red
    /// on a pushed commit, the base branch red after a merge, and a forge call's first
    /// try refused. 0 without shipping.
    pub ship_trouble: u64,
    /// Runs kept in step with an issue tracker: in percent, how often a call's first
    /// try is refused. 0 without one.
    pub tracker_trouble: u64,
}

/// A person's request, made once `after_done` tasks are done — or, when `at_ms` says
/// so, at that moment (simulated ms from the run's start), whatever the run is doing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Asked {
    pub after_done: usize,
    pub what: Asking,
    pub at_ms: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Asking {
    Steer,
    /// Pause; the person resumes it when next asked.
    Pause,
    /// Skip the last task not started yet (one worker: the same task with or
    /// without faults).
    Skip,
    /// The next iteration of that task is a DEBUG one.
    Debug,
    /// Stop after the current iteration.
    Stop,
}

impl Asking {
    /// The kind a draw of 0 to 4 names.
    fn drawn(k: u64) -> Asking {
        match k {
            0 => Asking::Steer,
            1 => Asking::Pause,
            2 => Asking::Skip,
            3 => Asking::Debug,
            _ => Asking::Stop,
        }
    }
}

/// What a scenario's attempts are like.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Profile {
    /// Every kind of trouble, drawn from the seed (the fault tests).
    #[default]
    Random,
    /// Many workers on one plan, timed like real work: agents of 30 s to 10 min,
    /// checks of 20 s to 2 min, 15% of attempts failing their checks, 10% conflicting
    /// on merge, and the scenario's `red` percent red only once merged (the scale
    /// report).
    Scale,
}

/// What one attempt of a task does, and how long its parts take.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The agent's process fails (exit 1, nothing claimed).
    pub crashes: bool,
    /// The agent changes nothing and claims nothing.
    pub idle: bool,
    /// The agent asks a question instead of working.
    pub asks: bool,
    /// The agent claims the task is complete.
    pub claims: bool,
    /// The task's checks pass on its work.
    pub passes: bool,
    /// The agent edits a test (the verification surface).
    pub tampers: bool,
    /// The work trips the task's tripwire.
    pub trips: bool,
    /// Its merge onto the integration branch conflicts.
    pub conflicts: bool,
    /// Its checks fail once it is merged with what the branch has meanwhile.
    pub red_merged: bool,
    /// The reviewer rejects it.
    pub rejected: bool,
    /// Its first try is lost with its job (a node failed): redone, not counted.
    pub lost: bool,
    /// Its first try hits the model service's usage limit: the run waits an hour.
    pub limited: bool,
    pub agent_ms: u64,
    pub checks_ms: u64,
    pub merge_ms: u64,
}

impl Scenario {
    pub fn from_seed(seed: u64) -> Scenario {
        let mut r = Rng::new(seed);
        let n = r.range(1, 6) as usize;
        // Planners, from a stream of their own (the rest of a seed is as it was): a
        // quarter of the runs, some of them with the goal alone at first.
        let mut g = Rng::new(seed).fork(0x91a4);
        let planners = if g.chance(25) {
            g.range(1, 3) as u32
        } else {
            0
        };
        let n = if planners > 0 && g.chance(30) { 0 } else { n };
        let mut growth = Vec::new();
        if planners > 0 {
            let mut next = n + 1;
            for _ in 0..g.range(1, 3) {
                let k = g.range(1, 3) as usize;
                growth.push((next..next + k).map(|i| format!("T{i}")).collect());
                next += k;
            }
        }
        let tasks: Vec<String> = (1..=n).map(|i| format!("T{i}")).collect();
        let mut plan = format!("# Simulated plan {seed}\n\nBuild the simulated project.\n");
        for (i, t) in tasks.iter().enumerate() {
            plan.push_str(&format!("\n## {t}: part {t} of the project\n"));
            plan.push_str(&format!("Verify: sh tests/{}.sh\n", t.to_lowercase()));
            let deps: Vec<&str> = tasks[..i]
                .iter()
                .filter(|_| r.chance(30))
                .map(|d| d.as_str())
                .collect();
            if !deps.is_empty() {
                plan.push_str(&format!("Depends: {}\n", deps.join(", ")));
            }
            if r.chance(15) {
                plan.push_str("Gate: before\n");
            } else if r.chance(10) {
                plan.push_str("Gate: after\n");
            }
            if r.chance(20) {
                plan.push_str("Must-not: touch migrations/\n");
            }
        }
        let mut c = Config::default();
        c.run.agent = "sim".into();
        c.run.workers = Some(match r.range(0, 9) {
            0..=3 => 1,
            w => (w - 2) as u32,
        });
        c.run.shape = match r.range(0, 3) {
            0 => ShapeSetting::Colleague,
            1 => ShapeSetting::Auto,
            _ => ShapeSetting::Tool,
        };
        c.run.workflow = match r.range(0, 4) {
            0 => WorkflowSetting::Library,
            1 => WorkflowSetting::Bug,
            2 => WorkflowSetting::Auto,
            _ => WorkflowSetting::Feature,
        };
        c.gates.plan_approval = r.chance(20);
        c.gates.after_each = r.chance(15);
        c.gates.final_review = r.chance(20);
        c.verify.validate = r.chance(30);
        if r.chance(35) {
            c.review = ReviewConfig {
                agent: Some("reviewer".into()),
                second: None,
                when: ReviewWhen::Always,
                max_rounds: 2,
            };
        }
        // Some runs proceed without confirmation (`--yes`).
        c.run.confirm = !r.chance(15);
        let trouble = r.range(0, 40);
        c.merge.batch = match r.range(0, 3) {
            0 => Some(1),
            1 => Some(4),
            _ => None,
        };
        // Not this machine's cores: a seed runs the same everywhere.
        c.merge.bisect = Some(1);
        c.run.planners = planners;
        // A fifth of the runs are judged every task or two.
        if g.chance(20) {
            c.run.cycle = Some(format!("{} tasks", g.range(1, 3)));
        }
        c.gates.new_tasks = planners > 0 && g.chance(30);
        // A third of the runs get a person's requests, from a stream of their own.
        let mut q = Rng::new(seed).fork(0xc011);
        let mut requests = Vec::new();
        if q.chance(33) {
            let one = c.run.workers == Some(1);
            for _ in 0..q.range(1, 2) {
                let what = Asking::drawn(q.range(0, if one { 4 } else { 1 }));
                requests.push(Asked {
                    after_done: q.range(0, n as u64) as usize,
                    what,
                    at_ms: None,
                });
            }
        }
        // A sixth get requests at random moments instead, any kind with any workers:
        // a kill moves what the run is doing at that moment, so those runs are held
        // to the invariants only, not compared with the run without faults.
        let mut m = Rng::new(seed).fork(0x7153);
        if requests.is_empty() && m.chance(17) {
            let horizon = (n as u64).max(1) * 1_800_000;
            for _ in 0..m.range(1, 3) {
                let what = Asking::drawn(m.range(0, 4));
                requests.push(Asked {
                    after_done: 0,
                    what,
                    at_ms: Some(m.range(0, horizon)),
                });
            }
        }
        // A third of the runs ship through a simulated forge, from a stream of their
        // own.
        let mut f = Rng::new(seed).fork(0x5419);
        let mut ship_trouble = 0;
        if f.chance(33) {
            let s = &mut c.ship;
            s.forge = Forge::Github;
            s.pr = if f.chance(40) {
                PrScope::Task
            } else {
                PrScope::Run
            };
            s.merge = if f.chance(70) {
                MergeWhen::Auto
            } else {
                MergeWhen::Manual
            };
            s.after_merge_failure = if f.chance(50) {
                AfterMergeFailure::Fix
            } else {
                AfterMergeFailure::Block
            };
            s.fix_attempts = f.range(1, 3) as u32;
            if f.chance(50) {
                s.reviewers = vec!["lead".into()];
            }
            s.delete_branch = f.chance(50);
            c.gates.database.enabled = f.chance(30);
            c.gates.deploy.enabled = f.chance(15);
            ship_trouble = f.range(0, 30);
        }
        // A quarter keep an issue tracker in step, some with the run's own issue.
        let mut k = Rng::new(seed).fork(0x77ac);
        let mut tracker_trouble = 0;
        if k.chance(25) {
            c.tracker.source = Some("github:sim/tracker".into());
            c.tracker.sync = true;
            if k.chance(50) {
                c.tracker.issue = Some("#run".into());
            }
            tracker_trouble = k.range(0, 30);
        }
        let mut tasks = tasks;
        tasks.extend(growth.iter().flatten().cloned());
        Scenario {
            seed,
            plan,
            config: c,
            tasks,
            trouble,
            profile: Profile::Random,
            growth,
            requests,
            ship_trouble,
            tracker_trouble,
        }
    }

    /// `tasks` independent tasks on `workers` workers merging in batches of `batch`,
    /// with no person in the loop: the scale report's run ([`Profile::Scale`]), with
    /// `red` percent of attempts whose checks fail only on the merged result, a red
    /// batch bisected `bisect` prefixes at a time.
    pub fn scale(
        seed: u64,
        tasks: usize,
        workers: u32,
        batch: u32,
        red: u64,
        bisect: u32,
    ) -> Scenario {
        let ids: Vec<String> = (1..=tasks).map(|i| format!("T{i}")).collect();
        let mut plan = String::from("# Scale\n");
        for id in &ids {
            plan.push_str(&format!("\n## {id}: work {id}\nVerify: cargo test {id}\n"));
        }
        let mut c = Config::default();
        c.run.agent = "sim".into();
        c.run.workers = Some(workers);
        c.run.shape = ShapeSetting::Tool;
        c.run.workflow = WorkflowSetting::Feature;
        c.run.confirm = false;
        c.merge.batch = Some(batch);
        c.merge.bisect = Some(bisect);
        c.budgets.max_iterations = (tasks as u32).saturating_mul(20).max(100);
        c.budgets.max_cost_usd = Some(1e6);
        Scenario {
            seed,
            plan,
            config: c,
            tasks: ids,
            trouble: red,
            profile: Profile::Scale,
            growth: Vec::new(),
            requests: Vec::new(),
            ship_trouble: 0,
            tracker_trouble: 0,
        }
    }

    /// What attempt `n` (from 1) of `task` does: the same in every run of the
    /// scenario, whatever happened before it. From the fifth attempt on it works.
    pub fn attempt(&self, task: &str, n: u32) -> Attempt {
        let mut r = self.stream(task, u64::from(n));
        if self.profile == Profile::Scale {
            let clean = n >= 5;
            let checks_ms = r.range(20_000, 120_000);
            return Attempt {
                crashes: false,
                idle: false,
                asks: false,
                claims: true,
                passes: clean || !r.chance(15),
                tampers: false,
                trips: false,
                conflicts: !clean && r.chance(10),
                rejected: false,
                lost: false,
                limited: false,
                agent_ms: r.range(30_000, 600_000),
                checks_ms,
                merge_ms: checks_ms,
                red_merged: !clean && r.chance(self.trouble),
            };
        }
        let p = if n >= 5 { 0 } else { self.trouble };
        let crashes = r.chance(p / 4);
        let idle = !crashes && r.chance(p / 4);
        let asks = !crashes && !idle && r.chance(p / 8);
        let working = !crashes && !idle && !asks;
        Attempt {
            crashes,
            idle,
            asks,
            claims: working && !r.chance(p / 2),
            passes: working && !r.chance(p),
            tampers: working && r.chance(p / 3),
            trips: working && r.chance(p / 3),
            conflicts: r.chance(p / 3),
            rejected: r.chance(p / 2),
            lost: r.chance(p / 4),
            limited: r.chance(p / 6),
            agent_ms: r.range(30_000, 1_200_000),
            checks_ms: r.range(2_000, 60_000),
            merge_ms: r.range(1_000, 30_000),
            red_merged: r.chance(p / 4),
        }
    }

    /// A simulated planner's answer to the plan `ids` (its tasks so far): the first
    /// round of the scenario's growth not yet in it, in the plan's format, else
    /// nothing.
    pub fn planner_answer(&self, ids: &[&str]) -> String {
        let Some(round) = self
            .growth
            .iter()
            .find(|round| round.iter().any(|t| !ids.contains(&t.as_str())))
        else {
            return "Nothing more.\nNO_NEW_TASKS\n".into();
        };
        let mut out = String::from("NEW_TASKS\n");
        for t in round.iter().filter(|t| !ids.contains(&t.as_str())) {
            out.push_str(&format!(
                "## {t}: part {t} of the project\nVerify: sh tests/{}.sh\nTests: {}\n\n",
                t.to_lowercase(),
                t.to_lowercase()
            ));
        }
        out.push_str("END_NEW_TASKS\n");
        out
    }

    /// How long a planner takes to answer: less than any agent's turn, so that it
    /// answers before the iteration it was asked beside ends, with faults or without
    /// (a slower one makes what the run does depend on timing, which the comparison
    /// cannot judge: a person's request finds the tasks it added, or not yet).
    pub fn planner_ms(&self, k: u64) -> u64 {
        Rng::new(self.seed).fork(0x9a11 ^ k).range(5_000, 25_000)
    }

    /// Some of its requests come at random moments (see [`Asked`]).
    pub fn at_random_moments(&self) -> bool {
        self.requests.iter().any(|a| a.at_ms.is_some())
    }

    /// A draw of the scenario's own about `what` (a commit, a task, a forge call):
    /// true `percent` of the time, the same in every run of it.
    fn draws(&self, what: &str, salt: u64, percent: u64) -> bool {
        self.stream(what, salt).chance(percent)
    }

    /// The scenario's stream of draws about `what`.
    fn stream(&self, what: &str, salt: u64) -> Rng {
        let h = what.bytes().fold(salt, |h, b| {
            h.wrapping_mul(1_000_003).wrapping_add(u64::from(b))
        });
        Rng::new(self.seed).fork(h)
    }

    /// The forge's checks pass on pushed commit `commit`.
    pub fn forge_checks_pass(&self, commit: &str) -> bool {
        !self.draws(commit, 0xc1, self.ship_trouble)
    }

    /// The run's checks pass on the base branch at `head` after a merge.
    pub fn base_passes(&self, head: &str) -> bool {
        !self.draws(head, 0xba5e, self.ship_trouble / 2)
    }

    /// The first try of forge call `call` is refused (a 502, a push rejected).
    pub fn forge_refuses_first(&self, call: &str) -> bool {
        self.draws(call, 0x502, self.ship_trouble / 2)
    }

    /// The first try of tracker call `call` is refused.
    pub fn tracker_refuses_first(&self, call: &str) -> bool {
        self.draws(call, 0x7ac, self.tracker_trouble)
    }

    /// Task `task`'s change holds a migration (the database diff gate's business).
    pub fn touches_database(&self, task: &str) -> bool {
        self.draws(task, 0xdb, 40)
    }

    /// The person approves pull request `number` on the forge rather than with
    /// `agentloop approve`.
    pub fn approves_on_forge(&self, number: u64) -> bool {
        self.draws(&number.to_string(), 0xa99, 50)
    }

    /// How long the forge's checks take on `commit`.
    pub fn forge_checks_ms(&self, commit: &str) -> u64 {
        self.stream(commit, 0xc4).range(60_000, 900_000)
    }

    /// How long a person takes to answer the `k`-th question of the run.
    pub fn answer_ms(&self, k: u64) -> u64 {
        // The scale report measures the queue and the workers, not a person: one is
        // at hand (a task its breakers block is skipped at once).
        if self.profile == Profile::Scale {
            return 1_000;
        }
        Rng::new(self.seed)
            .fork(0xa5a5 ^ k)
            .range(60_000, 1_800_000)
    }
}
