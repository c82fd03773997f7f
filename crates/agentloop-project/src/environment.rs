//! What a check's environment takes from the user's tree: the ignored directories
//! `[verify] carry` names (`node_modules`, `.venv`), linked into the clean copy as
//! they are, when the user's tree has them.

use std::path::Path;

/// The entries of `carry` that the clean copy of the project at `root` links: each as
/// a path relative to the project (slashes at either end dropped), when it is there.
pub fn carried<'a>(root: &'a Path, carry: &'a [String]) -> impl Iterator<Item = &'a str> + 'a {
    carry
        .iter()
        .map(|c| c.trim_matches('/'))
        .filter(move |c| !c.is_empty() && root.join(c).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_there_is_carried() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("node_modules")).unwrap();
        let carry = ["/node_modules/".to_string(), ".venv".into(), "".into()];
        assert_eq!(
            carried(dir.path(), &carry).collect::<Vec<_>>(),
            ["node_modules"]
        );
    }
}
