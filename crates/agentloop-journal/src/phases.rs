//! The VALIDATE phase in the state: the last validation (when, whether it passed, its
//! first failing command) and the fix tasks a failed one added.

use super::event::Event;
use super::state::RunState;

impl RunState {
    pub(super) fn apply_phase(&mut self, event: &Event) {
        match event {
            Event::Validated {
                passed,
                commands,
                digest,
                not_the_work,
            } => {
                self.validation = Some((self.iterations, *passed));
                self.validation_not_the_work = not_the_work.clone().filter(|_| !passed);
                self.validation_failure = (!passed).then(|| {
                    // The runner stops at the first failure: the last command is it,
                    // when it failed (a coverage step's report can fail the validation
                    // after every command passed: then no command is to blame).
                    let failing = commands
                        .last()
                        .filter(|c| !c.passed())
                        .map(|c| c.command.clone())
                        .unwrap_or_default();
                    (digest.clone().unwrap_or_default(), failing)
                });
            }
            Event::ValidationFixAdded {
                version,
                plan,
                task,
            } => {
                self.plan_version = *version;
                self.validation_fixes += 1;
                self.set_plan(plan.clone());
                let digest = self.validation_failure.as_ref().map(|(d, _)| d.clone());
                if let Some(t) = self.task_mut(task) {
                    t.last_digest = digest;
                }
            }
            _ => {}
        }
    }
}
