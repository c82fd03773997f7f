//! The JSON Schema `agentloop config schema` prints (what editors check
//! `agentloop.toml` with) holds a configuration to what agentloop does: a real
//! validator (`jsonschema` from PyPI, pinned by scripts/test) and `agentloop config
//! show` give the same verdict on every configuration of the corpus in
//! `tests/configs/` (`good-*` accepted, `bad-*` refused), and on the files `init` and
//! `init --full` write.

use std::path::{Path, PathBuf};

use crate::support::{Project, tools};

fn corpus() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

/// What the pinned validator says of each file: `None` (valid) or its first error.
fn validate(schema: &Path, files: &[PathBuf]) -> Vec<Option<String>> {
    let python = tools().join("jsonschema/bin/python3");
    assert!(
        python.exists(),
        "the JSON Schema validator is not installed in {}: run scripts/test, which installs it",
        python.display()
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/configs/validate.py");
    let out = std::process::Command::new(python)
        .arg(script)
        .arg(schema)
        .args(files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "the validator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The schema says which JSON Schema it is written in; the validator reads it so.
    assert_eq!(answer["validator"], "Draft202012Validator", "{answer}");
    files
        .iter()
        .map(|f| {
            let v = &answer["verdicts"][f.to_str().unwrap()];
            assert!(v.is_null() || v.is_string(), "{f:?}: {answer}");
            v.as_str().map(String::from)
        })
        .collect()
}

#[test]
fn the_schema_and_agentloop_agree_on_every_configuration() {
    let scratch = tempfile::tempdir().unwrap();
    let mut files = corpus();
    assert!(files.len() >= 30, "{} configurations", files.len());
    // What `init` and `init --full` write is accepted by both.
    for (name, args) in [
        ("good-init.toml", &["init"][..]),
        ("good-init-full.toml", &["init", "--full"][..]),
    ] {
        let p = Project::git();
        let r = p.run(args);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        let file = scratch.path().join(name);
        std::fs::write(&file, p.read("agentloop.toml")).unwrap();
        files.push(file);
    }

    let p = Project::git();
    let printed = p.run(&["config", "schema"]);
    assert_eq!(printed.code, Some(0), "{}", printed.stderr);
    let schema = scratch.path().join("agentloop.schema.json");
    std::fs::write(&schema, &printed.stdout).unwrap();
    let validator = validate(&schema, &files);

    let mut disagreements = Vec::new();
    for (file, by_schema) in files.iter().zip(validator) {
        let name = file.file_name().unwrap().to_str().unwrap();
        p.write("agentloop.toml", std::fs::read(file).unwrap());
        let shown = p.run(&["config", "show"]);
        let by_agentloop = match shown.code {
            Some(0) => None,
            Some(2) => Some(shown.stderr.lines().next().unwrap_or("").to_string()),
            other => panic!("{name}: config show exited {other:?}: {}", shown.stderr),
        };
        let meant_good = name.starts_with("good-");
        assert!(
            meant_good || name.starts_with("bad-"),
            "{name}: a corpus file's name starts with good- or bad-"
        );
        if by_schema.is_none() != meant_good || by_agentloop.is_none() != meant_good {
            disagreements.push(format!(
                "{name}: meant {}; the schema: {}; agentloop: {}",
                if meant_good { "valid" } else { "invalid" },
                by_schema.as_deref().unwrap_or("valid"),
                by_agentloop.as_deref().unwrap_or("valid"),
            ));
        }
    }
    assert!(
        disagreements.is_empty(),
        "{} of {} configurations:\n{}",
        disagreements.len(),
        files.len(),
        disagreements.join("\n")
    );
}
