//! The shape a shaping step leaves for a run (`.loop/shape/SHAPE.md`): its front
//! matter, the same fields as a plan's, taken in under the plan's own.

use std::path::Path;

use super::front::parse_front_matter;
use super::parse::MAX_PLAN_BYTES;
use crate::error::PlanError;
use crate::model::Plan;

/// Where a shaping step leaves the run's shape, under the project's root.
pub const SHAPE_FILE: &str = ".loop/shape/SHAPE.md";

/// Puts `lower`'s keys under `upper`'s: a key `upper` has stays as it is; tables merge.
fn under(
    upper: &mut serde_json::Map<String, serde_json::Value>,
    lower: serde_json::Map<String, serde_json::Value>,
) {
    for (k, v) in lower {
        match (upper.get_mut(&k), v) {
            (None, v) => {
                upper.insert(k, v);
            }
            (Some(serde_json::Value::Object(u)), serde_json::Value::Object(l)) => under(u, l),
            (Some(_), _) => {}
        }
    }
}

impl Plan {
    /// Takes in the shape a shaping step wrote (`.loop/shape/SHAPE.md` under `root`),
    /// when there is one: its front matter holds the same fields as the plan's, and
    /// the plan's own win, key by key. Merged into the plan, it is recorded with it, so
    /// a resumed run keeps it.
    pub fn with_shape(mut self, root: &Path) -> Result<Plan, PlanError> {
        let path = root.join(SHAPE_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(self),
            Err(e) => return Err(PlanError::whole(SHAPE_FILE, format!("cannot read it: {e}"))),
        };
        if bytes.len() > MAX_PLAN_BYTES {
            return Err(PlanError::whole(
                SHAPE_FILE,
                format!("it is {} bytes; the limit is {MAX_PLAN_BYTES}", bytes.len()),
            ));
        }
        let text = std::str::from_utf8(&bytes).map_err(|e| {
            PlanError::whole(
                SHAPE_FILE,
                format!("not valid UTF-8 (byte {})", e.valid_up_to()),
            )
        })?;
        let lines: Vec<&str> = text
            .strip_prefix('\u{feff}')
            .unwrap_or(text)
            .split('\n')
            .map(|l| l.strip_suffix('\r').unwrap_or(l))
            .collect();
        let mut shape = parse_front_matter(SHAPE_FILE, &lines, &mut 0)?;
        // Its lines as the plan's own, beside the plan's: `mustNot:`, `criteria:`.
        let must_not = super::front::front_lines(
            SHAPE_FILE,
            &mut shape,
            &["mustNot", "must_not", "must-not"],
            |t| crate::tripwire::Tripwire::parse(t).map(|_| ()),
        )?;
        let criteria = super::front::front_lines(SHAPE_FILE, &mut shape, &["criteria"], |t| {
            crate::criteria::Requirement::parse(t).map(|_| ())
        })?;
        for (lines, into) in [
            (must_not, &mut self.must_not),
            (criteria, &mut self.criteria),
        ] {
            for l in lines {
                if !into.contains(&l) {
                    into.push(l);
                }
            }
        }
        // Its phrases as the plan's own: `proceed: without confirmation`, `linear: …`.
        super::front::proceed(SHAPE_FILE, &mut shape)?;
        super::front::linear(SHAPE_FILE, &mut shape)?;
        self.shaped = shape.clone();
        under(&mut self.settings, shape);
        Ok(self)
    }
}

#[cfg(test)]
mod tests {
    /// `criteria:` and `mustNot:` in the shape are the plan's own lines, beside the
    /// plan's, not settings.
    #[test]
    fn the_shapes_criteria_and_tripwires_join_the_plans() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".loop/shape")).unwrap();
        std::fs::write(
            dir.path().join(super::SHAPE_FILE),
            "---\ncriteria:\n  - \"execution: true\"\nmustNot: touch migrations/\nrun:\n  workflow: bug\n---\nShaped.\n",
        )
        .unwrap();
        let plan = crate::Plan::parse(
            "PLAN.md",
            "---\nmustNot: touch vendor/\n---\n# P\n\n## T1: a\nVerify: true\n",
        )
        .unwrap()
        .with_shape(dir.path())
        .unwrap();
        assert_eq!(plan.must_not, ["touch vendor/", "touch migrations/"]);
        assert_eq!(plan.criteria, ["execution: true"]);
        assert_eq!(
            serde_json::Value::Object(plan.settings),
            serde_json::json!({"run": {"workflow": "bug"}})
        );
    }

    #[test]
    fn the_plans_keys_win_and_tables_merge() {
        let mut upper = serde_json::json!({"run": {"workflow": "feature"}, "budgets": 3});
        let lower = serde_json::json!({"run": {"workflow": "bug", "shape": "tool"}, "budgets": {"x": 1}, "gates": {"final_review": true}});
        super::under(
            upper.as_object_mut().unwrap(),
            lower.as_object().unwrap().clone(),
        );
        assert_eq!(
            upper,
            serde_json::json!({"run": {"workflow": "feature", "shape": "tool"}, "budgets": 3, "gates": {"final_review": true}})
        );
    }
}
