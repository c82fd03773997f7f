//! The surface of a plan that grew: a planner's task whose check names a file that was
//! already in the tree (`sh files.sh t2`, a test module) makes that file part of the
//! surface from then on, at its version in the tree the run was created on (what no
//! agent had touched), so a task that rewrote it earlier, or rewrites it now, is seen.

use std::collections::BTreeSet;
use std::path::Path;

use agentloop_journal::{Baseline, SurfaceFile};
use agentloop_project::Project;

use super::{keep, tree_files};

/// `base` with every file of `tree` that `project` (the grown plan's) puts on the
/// surface and `base` lacks, at its version there; `None`: nothing to add.
/// `not_tests`: the files the test baseline learned are no tests though named like
/// them (`agentloop_project::learned`), which their name alone does not put back.
pub fn grow(
    root: &Path,
    base: &Baseline,
    tree: &str,
    project: &Project,
    not_tests: &BTreeSet<String>,
) -> Result<Option<Baseline>, String> {
    let mut grown = base.clone();
    for (path, (mode, id)) in tree_files(root, tree)? {
        if grown.contains_key(&path) {
            continue;
        }
        let Some(why) = project.classify(&path) else {
            continue;
        };
        if why == agentloop_project::TEST_BY_NAME && not_tests.contains(&path) {
            continue;
        }
        // Kept in agentloop's own copy, as the first baseline's files are.
        keep::blob(root, &id)?;
        grown.insert(
            path,
            SurfaceFile {
                blob: id,
                mode,
                why,
            },
        );
    }
    Ok((grown.len() > base.len()).then_some(grown))
}
