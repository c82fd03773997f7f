//! JavaScript workspaces installed by the real package managers, as people install
//! them: pnpm, which links each package's dependencies (its sibling packages among
//! them) into the package's own `node_modules`, and yarn (classic), which links them
//! into the root's. `init` carries what was installed; the checks import the package
//! the task changed, in the tree judged, not the user's.

use crate::projects::ships;
use crate::support::*;

/// A workspace of two packages, `app`'s tests using `util`'s `double`, whose root
/// `package.json` is `root`; `app` depends on `util` as `dep`.
fn workspace(root: &str, dep: &str) -> Project {
    let mut p = Scratch::new()
        .file("package.json", root)
        .file(
            "packages/util/package.json",
            "{\"name\": \"@acme/util\", \"version\": \"1.0.0\", \"main\": \"index.js\"}\n",
        )
        .file("packages/util/index.js", "exports.double = (n) => n;\n")
        .file(
            "packages/app/package.json",
            format!(
                "{{\"name\": \"@acme/app\", \"version\": \"1.0.0\", \"dependencies\": {{\"@acme/util\": \"{dep}\"}}}}\n"
            ),
        )
        .file(
            "packages/app/test/app.test.js",
            "const { double } = require('@acme/util');\ntest('doubles', () => expect(double(2)).toBe(4));\ntest('zero', () => expect(double(0)).toBe(0));\n",
        )
        .build();
    p.write(".gitignore", ".agentloop/\nnode_modules\n");
    // The runners (jest) and the package managers, as a user's global install.
    let path = format!(
        "{}:{}",
        tools().join("js/node_modules/.bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    p.env.push(("PATH".into(), path));
    p
}

/// `PROGRAM ARGS` run in the project as its user would, offline.
fn install(p: &Project, program: &str, args: &[&str]) {
    let home = p.cache.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = std::process::Command::new(tools().join("js/node_modules/.bin").join(program))
        .args(args)
        .current_dir(p.path())
        .env("PATH", &p.env.iter().find(|(k, _)| k == "PATH").unwrap().1)
        .env("HOME", &home)
        .env("XDG_DATA_HOME", home.join("data"))
        .env("XDG_CACHE_HOME", home.join("cache"))
        .env("npm_config_store_dir", home.join("store"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

const PLAN: &str = "# Util\n\n## T1: Double\n\nMake `double` in packages/util/index.js double its number.\n\nTests: packages/app/test/app.test.js::doubles\n";
const WORK: &str =
    "sed -i 's/(n) => n;/(n) => n * 2;/' packages/util/index.js\necho TASK_COMPLETE\n";

#[test]
fn a_pnpm_workspace_carries_each_packages_own_node_modules() {
    let p = workspace(
        "{\"name\": \"mono\", \"private\": true, \"scripts\": {\"test\": \"jest\"}}\n",
        "workspace:*",
    );
    p.write("pnpm-workspace.yaml", "packages:\n  - \"packages/*\"\n");
    install(&p, "pnpm", &["install", "--offline"]);
    assert!(
        std::fs::symlink_metadata(p.path().join("packages/app/node_modules/@acme/util"))
            .unwrap()
            .file_type()
            .is_symlink(),
        "pnpm links util into app's own node_modules"
    );
    p.commit("a pnpm workspace");
    let config = init_with_scripted(&p, PLAN, WORK);
    assert!(
        config.contains("\"pnpm test\",  # from package.json: read test by test (jest)"),
        "{config}"
    );
    assert!(
        config.contains("\ncarry = [\"node_modules\", \"packages/app/node_modules\"]"),
        "{config}"
    );
    // The agents work in worktrees of their own; util in the user's tree still holds
    // the old `double`, and app's node_modules links to it there.
    ships(&p, &["--workers", "3"]);
    ships(&p, &[]);
}

#[test]
fn a_yarn_workspace_judges_the_package_the_task_changed() {
    let p = workspace(
        "{\"name\": \"mono\", \"private\": true, \"workspaces\": [\"packages/*\"], \"scripts\": {\"test\": \"jest\"}}\n",
        "1.0.0",
    );
    install(&p, "yarn", &["install", "--offline", "--no-progress"]);
    p.commit("a yarn workspace");
    let config = init_with_scripted(&p, PLAN, WORK);
    assert!(
        config.contains("\"yarn test\",  # from package.json: read test by test (jest)"),
        "{config}"
    );
    assert!(config.contains("\ncarry = [\"node_modules\"]"), "{config}");
    ships(&p, &["--workers", "3"]);
    ships(&p, &[]);
}
