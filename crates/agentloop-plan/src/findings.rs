//! The plan's review (Gate 2): what agentloop finds reading a plan before any agent
//! works on it — the questions its clarity leaves open, tasks that nothing agentloop
//! runs would verify, work that rests on assumptions, and tasks that take hours to
//! undo. A person accepts them (or rejects the plan to change it) before the first
//! iteration; a plan with none has nothing to accept.

use crate::criteria::{Evidence, Requirement};
use crate::model::{Class, Plan};

/// The findings, one sentence each, in the plan's order. `run_checks`: the run has
/// `[verify] commands`, which check every task.
pub fn findings(plan: &Plan, run_checks: bool) -> Vec<String> {
    let mut out: Vec<String> = crate::clarity::assess(plan)
        .dimensions
        .iter()
        .filter_map(|d| {
            let q = d.question?;
            Some(format!("{} {}/2: {}. {q}", d.name, d.score, d.why))
        })
        .collect();
    for t in &plan.tasks {
        if !run_checks && plan.checks_of(Some(t)).is_empty() && t.tests.is_empty() {
            out.push(format!(
                "{}: no check agentloop runs verifies it, so it would be done on the agent's word (add `Verify:` or `Tests:`)",
                t.id
            ));
        }
        let assumed: Vec<&String> = t
            .criteria
            .iter()
            .filter(|c| Requirement::parse(c).is_ok_and(|r| r.kind == Evidence::Assumption))
            .collect();
        if !assumed.is_empty() {
            out.push(format!(
                "{}: rests on {} only assumed ({}): the run waits at the final review for a person to accept it",
                t.id,
                if assumed.len() == 1 { "a criterion" } else { "criteria" },
                assumed.iter().map(|c| c.as_str()).collect::<Vec<_>>().join("; ")
            ));
        }
        let (class, why) = crate::clarity::reversibility(t);
        if class == Class::One {
            out.push(format!(
                "{}: takes hours to undo (reversibility class 1, {why}): it waits for a person before it starts",
                t.id
            ));
        }
    }
    for c in &plan.criteria {
        if Requirement::parse(c).is_ok_and(|r| r.kind == Evidence::Assumption) {
            out.push(format!(
                "the run rests on an assumption ({c}): it waits at the final review for a person to accept it"
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(md: &str) -> Plan {
        Plan::parse("PLAN.md", md).unwrap()
    }

    #[test]
    fn a_clear_plan_has_nothing_to_accept() {
        let p = plan(
            "---\nmustNot:\n  - touch migrations/\n---\n# Greeter\n\nA CLI, greet.sh, that greets a person by name; nothing else changes.\n\n## T1: Greet by name in src/greet.sh\nVerify: ./tests/greet.sh\n\nAcceptance:\n- [ ] `greet.sh Ada` prints Hello, Ada\n",
        );
        assert_eq!(findings(&p, false), Vec::<String>::new());
    }

    #[test]
    fn a_vague_plan_names_its_questions_and_unverified_tasks() {
        let p = plan(
            "# P\n\n## T1: Make it better\n\n## T2: Migrate the database schema\nVerify: true\nCriteria: assumption: users like it\n",
        );
        let f = findings(&p, false);
        assert!(f.iter().any(|l| l.starts_with("outcome 0/2")), "{f:#?}");
        assert!(
            f.iter()
                .any(|l| l.starts_with("T1: no check agentloop runs")),
            "{f:#?}"
        );
        assert!(
            f.iter()
                .any(|l| l.starts_with("T2: rests on a criterion only assumed")),
            "{f:#?}"
        );
        assert!(
            f.iter().any(|l| l.starts_with("T2: takes hours to undo")),
            "{f:#?}"
        );
        // The run's own checks verify every task.
        assert!(!findings(&p, true).iter().any(|l| l.contains("no check")));
    }
}
