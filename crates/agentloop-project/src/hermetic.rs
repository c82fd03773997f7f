//! Layouts a check cannot be made hermetic in: what would make a check in a clean
//! copy (or a worker's tree) build or import the user's own working tree instead of
//! the tree judged. A relative path resolves inside whichever tree the check runs in;
//! an absolute one into the project does not, and neither does a Python path entry
//! into the project that agentloop does not put the judged tree's copy in front of.
//! `plan check` names each with the way out; `run` warns of it.

use std::path::{Path, PathBuf};

use crate::environment::python_first;

/// One way a check would reach the user's tree, and how to mend it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leak {
    pub what: String,
    pub fix: String,
}

/// Every leak of the project at `root` that can be told from its files (and, for a
/// Python project, from `python3`'s path as the checks would start it).
pub fn leaks(root: &Path) -> Vec<Leak> {
    let mut out = Vec::new();
    let Ok(real) = root.canonicalize() else {
        return out;
    };
    let inside = |p: &str| {
        let p = Path::new(p);
        p.is_absolute()
            && p.canonicalize()
                .unwrap_or_else(|_| p.to_path_buf())
                .starts_with(&real)
    };
    let relative = |p: &str| {
        let p = Path::new(p)
            .canonicalize()
            .unwrap_or_else(|_| PathBuf::from(p));
        p.strip_prefix(&real)
            .map(|r| r.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    // Cargo: `path = "/…"` dependencies.
    {
        let manifest = "Cargo.toml";
        for (n, line) in lines(root, manifest) {
            if let Some(p) = quoted_after(&line, "path").filter(|p| inside(p)) {
                out.push(Leak {
                    what: format!(
                        "{manifest}:{n}: the dependency path {p} is absolute, into the project"
                    ),
                    fix: format!(
                        "make it relative (`path = \"{}\"`), so it resolves in the tree judged",
                        relative(&p)
                    ),
                });
            }
        }
    }
    // Go: `replace X => /…` in go.mod or go.work, and go.work's `use /…`.
    for manifest in ["go.mod", "go.work"] {
        for (n, line) in lines(root, manifest) {
            let target = line
                .split_once("=>")
                .map(|(_, t)| t.split_whitespace().next().unwrap_or("").to_string())
                .or_else(|| {
                    line.trim()
                        .strip_prefix("use ")
                        .map(|t| t.trim().trim_matches(['(', ')']).to_string())
                });
            if let Some(p) = target.filter(|p| inside(p)) {
                out.push(Leak {
                    what: format!("{manifest}:{n}: {p} is an absolute path into the project"),
                    fix: format!("write it relative (`./{}`)", relative(&p)),
                });
            }
        }
    }
    // npm: `"file:/…"` dependencies.
    for (n, line) in lines(root, "package.json") {
        if let Some(at) = line.find("\"file:") {
            let p: String = line[at + 6..].chars().take_while(|c| *c != '"').collect();
            if inside(&p) {
                out.push(Leak {
                    what: format!(
                        "package.json:{n}: the dependency file:{p} is absolute, into the project"
                    ),
                    fix: format!("make it relative (`\"file:./{}\"`)", relative(&p)),
                });
            }
        }
    }
    out.extend(python_path_leaks(root, &real, &[]));
    out
}

/// Python's path as a check starts `python3` in the project: an entry into the
/// project (an editable install's `.pth`, `PYTHONPATH`) that is not where agentloop
/// puts the judged tree first (`src/`, or the root of a flat layout).
/// What python3 says of its path: each entry after its own directory, then `--`, then
/// the package directories setuptools' editable finders map (`__editable___*_finder.py`,
/// which put no entry on the path).
const PYTHON_PATH: &str = r#"
import ast, glob, os, re, sys
print("\n".join(sys.path[1:]))
print("--")
for d in sys.path[1:]:
    for f in glob.glob(os.path.join(d, "__editable___*_finder.py")):
        try:
            m = re.search(r"^MAPPING[^=]*=\s*(\{.*?\})\s*$", open(f).read(), re.S | re.M)
            for v in (ast.literal_eval(m.group(1)).values() if m else ()):
                print(v)
        except Exception:
            pass
"#;

fn python_path_leaks(root: &Path, real: &Path, env: &[(&str, &str)]) -> Vec<Leak> {
    let first = python_first(root);
    if first.is_empty() {
        return Vec::new();
    }
    let Ok(out) = std::process::Command::new("python3")
        .args(["-c", PYTHON_PATH])
        .envs(env.iter().copied())
        .current_dir(root)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    let first: Vec<PathBuf> = first.iter().filter_map(|p| p.canonicalize().ok()).collect();
    let text = String::from_utf8_lossy(&out.stdout);
    let (entries, mapped) = text.split_once("\n--\n").unwrap_or((&text, ""));
    // A mapped package is imported from its parent directory.
    let dirs = entries
        .lines()
        .filter_map(|l| Path::new(l).canonicalize().ok())
        .map(|p| {
            (
                p,
                "an entry of its path: an editable install's `.pth`, or PYTHONPATH",
            )
        })
        .chain(mapped.lines().filter_map(|l| {
            let p = Path::new(l).canonicalize().ok()?;
            Some((
                p.parent()?.to_path_buf(),
                "a package setuptools' editable finder maps there",
            ))
        }));
    let mut out: Vec<Leak> = Vec::new();
    for (p, how) in dirs {
        let foreign = p.starts_with(real)
            && !first.contains(&p)
            && !p.components().any(|c| {
                matches!(
                    c.as_os_str().to_str(),
                    Some(".venv" | "venv" | "site-packages" | "node_modules")
                )
            });
        let rel = p
            .strip_prefix(real)
            .unwrap_or(&p)
            .to_string_lossy()
            .into_owned();
        if !foreign
            || out
                .iter()
                .any(|l| l.what.contains(&format!("from {rel}/ ")))
        {
            continue;
        }
        out.push(Leak {
            what: format!(
                "python3 imports from {rel}/ of your tree ({how}), which agentloop does not put the judged tree's copy of in front of"
            ),
            fix: "move the package under src/ (the src layout) or to the project's root, or set the path relative in the tests' own configuration (pytest's `pythonpath`)".into(),
        });
    }
    out
}

/// The lines of `root/name`, numbered from 1, comments (`#`, `//`) left out.
fn lines(root: &Path, name: &str) -> Vec<(usize, String)> {
    let Ok(text) = std::fs::read_to_string(root.join(name)) else {
        return Vec::new();
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| {
            let t = l.trim_start();
            !t.starts_with('#') && !t.starts_with("//")
        })
        .map(|(i, l)| (i + 1, l.to_string()))
        .collect()
}

/// The quoted value after `key =` on a TOML line (`path = "x"`, or inside an inline
/// table: `{ path = "x" }`).
fn quoted_after(line: &str, key: &str) -> Option<String> {
    let at = line
        .find(&format!("{key} ="))
        .or_else(|| line.find(&format!("{key}=")))?;
    let before = line[..at].chars().last();
    if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
        return None;
    }
    let rest = line[at..].split_once('=')?.1.trim_start();
    let rest = rest.strip_prefix('"')?;
    Some(rest.chars().take_while(|c| *c != '"').collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_into_the_project_are_named_with_the_way_out() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("crates/x")).unwrap();
        let abs = root.join("crates/x").display().to_string();
        std::fs::write(
            root.join("Cargo.toml"),
            format!("[dependencies]\nx = {{ path = \"{abs}\" }}\ny = {{ path = \"crates/y\" }}\nserde = \"1\"\n# z = {{ path = \"{abs}\" }}\n"),
        )
        .unwrap();
        std::fs::write(
            root.join("go.mod"),
            format!("module m\n\nreplace example.com/x => {abs}\nreplace example.com/y => ./y\n"),
        )
        .unwrap();
        std::fs::write(
            root.join("package.json"),
            format!("{{\"dependencies\": {{\"x\": \"file:{abs}\", \"y\": \"file:./y\"}}}}\n"),
        )
        .unwrap();
        let found = leaks(&root);
        let what: Vec<&str> = found
            .iter()
            .map(|l| l.what.split(':').next().unwrap())
            .collect();
        assert_eq!(what, ["Cargo.toml", "go.mod", "package.json"], "{found:#?}");
        assert_eq!(
            found[0].fix,
            "make it relative (`path = \"crates/x\"`), so it resolves in the tree judged"
        );
        assert_eq!(found[1].fix, "write it relative (`./crates/x`)");
        // Outside the project: not the tree judged either way, not a leak of it.
        std::fs::write(
            root.join("Cargo.toml"),
            "[dependencies]\nx = { path = \"/opt/x\" }\n",
        )
        .unwrap();
        std::fs::remove_file(root.join("go.mod")).unwrap();
        std::fs::remove_file(root.join("package.json")).unwrap();
        assert!(leaks(&root).is_empty());
    }

    #[test]
    fn a_python_path_into_the_project_outside_the_usual_layouts() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src/pkg")).unwrap();
        std::fs::write(root.join("src/pkg/__init__.py"), "").unwrap();
        std::fs::create_dir_all(root.join("lib/other")).unwrap();
        std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
        let with =
            |pythonpath: &str| python_path_leaks(&root, &root, &[("PYTHONPATH", pythonpath)]);
        assert!(
            with(&root.join("src").display().to_string()).is_empty(),
            "src/ is put first"
        );
        let l = with(&root.join("lib").display().to_string());
        assert_eq!(l.len(), 1, "{l:#?}");
        assert!(
            l[0].what
                .starts_with("python3 imports from lib/ of your tree"),
            "{l:#?}"
        );
    }

    #[test]
    fn a_package_an_editable_finder_maps_outside_the_usual_layouts() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("p");
        std::fs::create_dir_all(root.join("src/pkg")).unwrap();
        std::fs::write(root.join("src/pkg/__init__.py"), "").unwrap();
        std::fs::create_dir_all(root.join("lib/other")).unwrap();
        std::fs::write(root.join("pyproject.toml"), "[project]\nname = \"x\"\n").unwrap();
        let root = root.canonicalize().unwrap();
        let site = d.path().join("site");
        std::fs::create_dir_all(&site).unwrap();
        let finder = |target: &Path| {
            std::fs::write(
                site.join("__editable___x_0_1_finder.py"),
                format!(
                    "import sys\nMAPPING: dict[str, str] = {{'other': '{}'}}\nNAMESPACES = {{}}\n",
                    target.display()
                ),
            )
            .unwrap();
            python_path_leaks(&root, &root, &[("PYTHONPATH", &site.display().to_string())])
        };
        let l = finder(&root.join("lib/other"));
        assert_eq!(l.len(), 1, "{l:#?}");
        assert!(
            l[0].what
                .contains("lib/ of your tree (a package setuptools' editable finder maps there)"),
            "{l:#?}"
        );
        assert!(
            finder(&root.join("src/pkg")).is_empty(),
            "src/ is put first"
        );
    }
}
