//! The project model of a run: its settings and its plan as they stand now.

use std::path::Path;

use agentloop_project::Project;

use crate::state::RunState;

impl RunState {
    /// The project at `root` as this run's checks see it.
    pub fn project(&self, root: &Path) -> Project {
        let plan_file = Path::new(&self.plan_file);
        let plan_file = plan_file
            .strip_prefix(root)
            .unwrap_or(plan_file)
            .to_string_lossy()
            .into_owned();
        let commands = self
            .plan
            .tasks
            .iter()
            .flat_map(|t| self.plan.checks_of(Some(t)))
            .chain(self.settings.verify_commands.iter().cloned())
            .collect();
        Project::from_names(
            root,
            &self.settings.protected,
            &plan_file,
            commands,
            &self.settings.check_files,
        )
    }
}
