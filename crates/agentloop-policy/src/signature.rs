//! What a diff does to the interface others call: an exported function whose
//! declaration changed or went away, read line by line per language (Rust `pub fn`,
//! Python module-level `def` without a leading underscore, Go capitalised `func`,
//! JavaScript and TypeScript `export function` / `export const name =`). The
//! architecture gate asks about it; the words of the plan do not.

/// The name an exported function is declared with on `line` of file `path`, if it is.
pub(crate) fn exported(path: &str, line: &str) -> Option<String> {
    let ext = path.rsplit('.').next().unwrap_or("");
    let name_at = |rest: &str| -> Option<String> {
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
            .collect();
        (!name.is_empty()).then_some(name)
    };
    match ext {
        "rs" => {
            let t = line.trim_start();
            let rest = t.strip_prefix("pub ")?;
            let rest = rest
                .trim_start_matches("const ")
                .trim_start_matches("async ")
                .trim_start_matches("unsafe ")
                .trim_start_matches("extern \"C\" ");
            name_at(rest.strip_prefix("fn ")?)
        }
        "py" => {
            let rest = line
                .strip_prefix("async def ")
                .or_else(|| line.strip_prefix("def "))?;
            name_at(rest).filter(|n| !n.starts_with('_'))
        }
        "go" => {
            let rest = line.strip_prefix("func ")?;
            // A method: `func (r *T) Name(`.
            let rest = if rest.starts_with('(') {
                rest.split_once(')')?.1.trim_start()
            } else {
                rest
            };
            name_at(rest).filter(|n| n.starts_with(|c: char| c.is_uppercase()))
        }
        "js" | "mjs" | "cjs" | "ts" | "tsx" | "jsx" | "mts" | "cts" => {
            let rest = line.trim_start().strip_prefix("export ")?;
            let rest = rest
                .trim_start_matches("default ")
                .trim_start_matches("async ");
            if let Some(f) = rest.strip_prefix("function ") {
                return name_at(f.trim_start_matches('*').trim_start());
            }
            let decl = rest
                .strip_prefix("const ")
                .or_else(|| rest.strip_prefix("let "))?;
            let name = name_at(decl)?;
            let value = decl.split_once('=')?.1.trim_start();
            (value.starts_with('(') || value.starts_with("async") || value.starts_with("function"))
                .then_some(name)
        }
        _ => None,
    }
}

/// Each exported function of the file at `path` whose declaration the diff (its
/// `added` lines with their numbers, its `removed` ones) changed (line, old, new) or
/// removed (line none, old, no new).
pub(crate) fn changed(
    path: &str,
    added: &[(u32, String)],
    removed: &[String],
) -> Vec<(Option<u32>, String, Option<String>)> {
    let mut out = Vec::new();
    for old in removed {
        let Some(name) = exported(path, old) else {
            continue;
        };
        let new = added
            .iter()
            .find(|(_, a)| exported(path, a).as_deref() == Some(name.as_str()));
        match new {
            Some((_, a)) if a.trim() == old.trim() => {}
            Some((n, a)) => {
                out.push((Some(*n), old.trim().to_string(), Some(a.trim().to_string())))
            }
            None => out.push((None, old.trim().to_string(), None)),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exported_declarations_per_language() {
        for (path, line, name) in [
            ("src/lib.rs", "pub fn greet(name: &str) {", Some("greet")),
            ("src/lib.rs", "    pub async fn run() {", Some("run")),
            ("src/lib.rs", "fn private() {", None),
            ("src/lib.rs", "pub(crate) fn inner() {", None),
            ("calc/__init__.py", "def add(a, b):", Some("add")),
            ("calc/__init__.py", "def _helper(a):", None),
            ("calc/__init__.py", "    def method(self):", None),
            ("rev.go", "func Reverse(s string) string {", Some("Reverse")),
            ("rev.go", "func (r *R) Len() int {", Some("Len")),
            ("rev.go", "func helper() {", None),
            (
                "index.js",
                "export function parse(text, opts) {",
                Some("parse"),
            ),
            (
                "index.ts",
                "export const add = (a: number) => a;",
                Some("add"),
            ),
            ("index.ts", "export const LIMIT = 3;", None),
            ("README.md", "pub fn x()", None),
        ] {
            assert_eq!(exported(path, line).as_deref(), name, "{path}: {line}");
        }
    }

    #[test]
    fn a_changed_or_removed_declaration_not_a_body() {
        let added = vec![
            (3, "pub fn greet(name: &str) {".to_string()),
            (9, "    1 + 1".into()),
        ];
        let removed = vec![
            "pub fn greet() {".to_string(),
            "pub fn gone() {}".into(),
            "    2".into(),
        ];
        assert_eq!(
            changed("src/lib.rs", &added, &removed),
            [
                (
                    Some(3),
                    "pub fn greet() {".to_string(),
                    Some("pub fn greet(name: &str) {".to_string())
                ),
                (None, "pub fn gone() {}".to_string(), None)
            ]
        );
        let body_only = changed(
            "src/lib.rs",
            &[(4, "    a * b".into())],
            &["    a + b".into()],
        );
        assert!(body_only.is_empty());
    }
}
