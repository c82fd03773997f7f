//! A plan's front matter: the YAML between `---` lines, read into settings (the same
//! keys as agentloop.toml), with the plan's own lines taken out of it (`mustNot:`,
//! `criteria:`) and the phrases that stand for settings (`proceed: without
//! confirmation`, `linear: ENG-12`).

use crate::error::PlanError;
use agentloop_ground::words::dotted;

pub(super) fn parse_front_matter(
    file: &str,
    lines: &[&str],
    i: &mut usize,
) -> Result<serde_json::Map<String, serde_json::Value>, PlanError> {
    if lines.first().map(|l| l.trim_end()) != Some("---") {
        return Ok(serde_json::Map::new());
    }
    let end = lines[1..]
        .iter()
        .position(|l| l.trim_end() == "---")
        .map(|p| p + 1)
        .ok_or_else(|| {
            PlanError::at(file, 1, "front matter is not closed")
                .hint("end the front matter with a `---` line")
        })?;
    *i = end + 1;
    let yaml = lines[1..end].join("\n");
    if yaml.trim().is_empty() {
        return Ok(serde_json::Map::new());
    }
    let value: serde_json::Value = serde_saphyr::from_str(&yaml).map_err(|e| {
        let text = e.to_string();
        let first = text
            .lines()
            .next()
            .unwrap_or_default()
            .trim_start_matches("error: ")
            .to_string();
        PlanError::at(file, 2, format!("front matter is not valid YAML: {first}"))
    })?;
    if let Some(key) = null_leaf(&value, "") {
        return Err(PlanError::at(
            file,
            2,
            format!("front matter: `{key}` has no value agentloop can use"),
        )
        .hint("give it a value (numbers must be finite), or remove the line"));
    }
    match value {
        serde_json::Value::Object(map) => Ok(map),
        serde_json::Value::Null => Ok(serde_json::Map::new()),
        _ => Err(PlanError::at(
            file,
            2,
            "front matter must be a mapping of settings (`key: value` lines)",
        )),
    }
}

/// `linear: ENG-12` is the run's own Linear issue: `tracker: {issue: ENG-12}`, with
/// `source: linear:ENG` unless the front matter names another.
pub(super) fn linear(
    file: &str,
    settings: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<(), PlanError> {
    let Some(v) = settings.remove("linear") else {
        return Ok(());
    };
    let key = v.as_str().map(str::trim).unwrap_or_default().to_string();
    let team = key
        .rsplit_once('-')
        .filter(|(team, n)| {
            !team.is_empty()
                && team.chars().all(|c| c.is_ascii_alphanumeric())
                && n.parse::<u64>().is_ok()
        })
        .map(|(team, _)| team.to_string());
    let Some(team) = team else {
        return Err(
            PlanError::at(file, 2, format!("linear: `{key}` is not a Linear issue"))
                .hint("name the run's issue by its identifier, e.g. `linear: ENG-12`"),
        );
    };
    let tracker = settings
        .entry("tracker")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    let serde_json::Value::Object(tracker) = tracker else {
        return Err(PlanError::at(
            file,
            2,
            "tracker: must be a mapping of settings",
        ));
    };
    tracker.insert("issue".into(), serde_json::Value::String(key));
    tracker
        .entry("source")
        .or_insert_with(|| serde_json::Value::String(format!("linear:{team}")));
    Ok(())
}

/// `proceed: without confirmation` (seed 002's phrase) is `run: {confirm: false}`.
pub(super) fn proceed(
    file: &str,
    settings: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<(), PlanError> {
    let Some(v) = settings.remove("proceed") else {
        return Ok(());
    };
    let said = v.as_str().map(|t| t.trim().to_lowercase());
    if said.as_deref() != Some("without confirmation") {
        return Err(PlanError::at(
            file,
            2,
            format!(
                "proceed: `{}` is not a way to proceed",
                v.as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| v.to_string())
            ),
        )
        .hint("`proceed: without confirmation` runs without the gates that only confirm"));
    }
    if settings.get("run").and_then(|r| r.get("confirm")) == Some(&serde_json::Value::Bool(true)) {
        return Err(PlanError::at(
            file,
            2,
            "proceed: without confirmation, and `run: {confirm: true}` asks for confirmation",
        )
        .hint("keep one of the two"));
    }
    let run = settings
        .entry("run")
        .or_insert_with(|| serde_json::Value::Object(Default::default()));
    match run {
        serde_json::Value::Object(run) => {
            run.insert("confirm".into(), serde_json::Value::Bool(false));
            Ok(())
        }
        _ => Err(PlanError::at(file, 2, "run: must be a mapping of settings")),
    }
}

/// Lines of the plan's own taken out of the front matter's settings (`mustNot:`,
/// `criteria:`), one line or a list of them, each read by `check`.
pub(super) fn front_lines(
    file: &str,
    settings: &mut serde_json::Map<String, serde_json::Value>,
    keys: &[&str],
    check: impl Fn(&str) -> Result<(), String>,
) -> Result<Vec<String>, PlanError> {
    let key = keys[0];
    let Some(value) = keys.iter().find_map(|k| settings.remove(*k)) else {
        return Ok(Vec::new());
    };
    let items: Vec<serde_json::Value> = match value {
        serde_json::Value::Array(a) => a,
        v => vec![v],
    };
    items
        .into_iter()
        .map(|v| {
            let text = v.as_str().ok_or_else(|| {
                PlanError::at(file, 2, format!("{key}: `{v}` is not a line of text"))
                    .hint("write each one as text, e.g. `- touch migrations/`")
            })?;
            check(text).map_err(|e| PlanError::at(file, 2, format!("{key}: {e}")))?;
            Ok(text.trim().to_string())
        })
        .collect()
}

/// The dotted key of the first empty value in the front matter: `key:` alone, `~`, or
/// a `.nan` (which JSON, the shape settings are merged in, cannot hold).
fn null_leaf(v: &serde_json::Value, prefix: &str) -> Option<String> {
    let serde_json::Value::Object(map) = v else {
        return None;
    };
    map.iter().find_map(|(k, v)| {
        let key = dotted(prefix, k);
        match v {
            serde_json::Value::Null => Some(key),
            serde_json::Value::Object(_) => null_leaf(v, &key),
            _ => None,
        }
    })
}
