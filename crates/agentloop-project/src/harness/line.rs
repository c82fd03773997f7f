//! One line of a harness read word by word: the paths it runs, as the paths of the
//! project they may stand for.

use std::collections::BTreeMap;

use super::is_makefile;

/// Programs that run the script named by their first argument that is not an option.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "ash", "python", "python3", "node", "deno", "bun", "ruby",
    "perl", "php", "bats", "lua", "Rscript", "tclsh", "source", ".", "tsx", "ts-node",
];

/// Words that only lead into the command that follows them.
const LEADERS: &[&str] = &[
    "if", "then", "else", "elif", "do", "while", "until", "!", "{", "(", "time", "exec", "command",
    "nohup", "env", "builtin",
];

/// Shells: with no script named, they run what comes on their input.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "ksh", "ash"];

/// `xargs`'s options whose value is the next word.
const XARGS_VALUED: &[&str] = &["-I", "-i", "-n", "-P", "-L", "-l", "-d", "-E", "-s", "-a"];

/// Options whose value follows them and is not a script (`python3 -m mod`, `-c code`).
const VALUED: &[&str] = &[
    "-c",
    "-m",
    "-e",
    "-W",
    "-X",
    "-O",
    "-r",
    "--require",
    "--import",
];

/// Extensions of files a harness runs as scripts.
const SCRIPT_EXTS: &[&str] = &[
    "sh", "bash", "zsh", "ksh", "bats", "mk", "py", "js", "mjs", "cjs", "ts", "mts", "rb", "pl",
    "php", "lua", "tcl", "R",
];
/// One path a line names, as the paths it may stand for (relative to the project's
/// root, and to the naming script's directory when it is not at the root).
pub(super) struct Named {
    pub(super) candidates: Vec<String>,
}

/// The words each `for` loop of a script goes over, by its variable.
pub(super) type Loops = BTreeMap<String, Vec<String>>;

/// The paths a shell line runs: the program when it is a path, an interpreter's
/// script, what `.`/`source` reads — the words a `for` loops over when it runs its
/// variable so (`for f in checks.d/*.sh; do . "$f"; done`) —, `make -f FILE`/`-C
/// DIR`, the scripts `npm test`/`npm run X` runs (from `package`), and a `sh -c '…'`
/// line's own. `loops` carries a script's loops from line to line.
pub(super) fn named_in_line(
    line: &str,
    script: Option<&str>,
    package: Option<&serde_json::Map<String, serde_json::Value>>,
    loops: &mut Loops,
) -> Vec<Named> {
    let mut out = Vec::new();
    named_into(line, script, package, loops, 0, &mut out);
    out
}

/// A word a command runs: its loop's words when it is a loop's variable, else the
/// path it names.
fn take(word: &str, script: Option<&str>, loops: &Loops, out: &mut Vec<Named>) {
    let var = word
        .strip_prefix("${")
        .and_then(|v| v.strip_suffix('}'))
        .or_else(|| word.strip_prefix('$'));
    if let Some(words) = var.and_then(|v| loops.get(v)) {
        out.extend(words.iter().filter_map(|w| resolve(w, script)));
        return;
    }
    out.extend(resolve(word, script));
}

fn named_into(
    line: &str,
    script: Option<&str>,
    package: Option<&serde_json::Map<String, serde_json::Value>>,
    loops: &mut Loops,
    depth: usize,
    out: &mut Vec<Named>,
) {
    if depth > 4 {
        return;
    }
    let code = strip_comment(line);
    // The words of the command before, when this one reads its output (`|`).
    let mut before: Vec<String> = Vec::new();
    for (piped, simple) in commands(code) {
        let all: Vec<String> = shlex::split(simple.trim()).unwrap_or_else(|| {
            simple
                .split_whitespace()
                .map(|w| w.trim_matches(|c| c == '"' || c == '\'').to_string())
                .collect()
        });
        let listed = if piped {
            std::mem::take(&mut before)
        } else {
            Vec::new()
        };
        before = all.clone();
        let mut words: &[String] = &all;
        // `xargs` runs its command on what comes on its input: `{}` stands for it.
        let mut xargs = false;
        while let Some(w) = words.first() {
            let w = w.trim_start_matches(['(', '{']);
            if w == "xargs" {
                xargs = true;
                words = &words[1..];
                while let Some(o) = words.first().filter(|o| o.starts_with('-')) {
                    let valued = XARGS_VALUED.contains(&o.as_str());
                    words = &words[if valued { 2.min(words.len()) } else { 1 }..];
                }
            } else if LEADERS.contains(&w)
                || w.is_empty()
                || (w.contains('=') && !w.starts_with('-'))
            {
                words = &words[1..];
            } else {
                break;
            }
        }
        let braced: Vec<String>;
        if xargs {
            braced = words.iter().map(|w| w.replace("{}", "*")).collect();
            words = &braced;
        }
        let Some(program) = words.first().map(|w| w.trim_start_matches(['(', '{'])) else {
            continue;
        };
        let args = &words[1..];
        let name = program.rsplit('/').next().unwrap_or(program);
        match name {
            "for" => {
                if let Some(var) = args.first() {
                    let over: Vec<String> = args
                        .iter()
                        .skip_while(|w| *w != "in")
                        .skip(1)
                        .cloned()
                        .collect();
                    loops.insert(var.clone(), listing(&over));
                }
            }
            // Every file of the directories it is given, run.
            "run-parts" => {
                for d in args.iter().filter(|a| !a.starts_with('-')) {
                    take(&format!("{}/", d.trim_end_matches('/')), script, loops, out);
                }
            }
            "find"
                if args
                    .iter()
                    .any(|a| matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")) =>
            {
                for d in listing(words) {
                    take(&d, script, loops, out);
                }
            }
            "make" | "gmake" => {
                let mut dir = String::new();
                let mut file = None;
                for pair in args.windows(2) {
                    match pair[0].as_str() {
                        "-C" | "--directory" => dir = format!("{}/", pair[1].trim_end_matches('/')),
                        "-f" | "--file" | "--makefile" => file = Some(pair[1].clone()),
                        _ => {}
                    }
                }
                let file = match file {
                    Some(f) => format!("{dir}{f}"),
                    None => format!("{dir}Makefile"),
                };
                take(&file, script, loops, out);
            }
            "npm" | "pnpm" | "yarn" | "bun" => {
                let run = match args.first().map(String::as_str) {
                    Some("run" | "run-script") => args.get(1).map(String::as_str),
                    Some("test" | "t") => Some("test"),
                    Some(other) if name != "npm" => Some(other),
                    _ => None,
                };
                if let (Some(run), Some(scripts)) = (run, package) {
                    for s in [format!("pre{run}"), run.to_string(), format!("post{run}")] {
                        if let Some(body) = scripts.get(&s).and_then(|b| b.as_str()) {
                            named_into(body, None, package, loops, depth + 1, out);
                        }
                    }
                }
            }
            // A shell, or an `xargs` interpreter, with no script: it runs what the
            // command before it lists.
            _ if (SHELLS.contains(&name) && piped || xargs && INTERPRETERS.contains(&name))
                && !args.iter().any(|a| !a.starts_with('-')) =>
            {
                for w in listing(&listed) {
                    take(&w, script, loops, out);
                }
            }
            _ if INTERPRETERS.contains(&name) => {
                let mut rest = args.iter();
                while let Some(a) = rest.next() {
                    if VALUED.contains(&a.as_str()) {
                        // `sh -c 'line'`: its line is run as the harness's own.
                        if a == "-c" && matches!(name, "sh" | "bash" | "dash" | "zsh" | "ksh") {
                            if let Some(inner) = rest.next() {
                                named_into(inner, script, package, loops, depth + 1, out);
                            }
                            break;
                        }
                        rest.next();
                        if a == "-c" || a == "-m" || a == "-e" {
                            break;
                        }
                        continue;
                    }
                    if a.starts_with('-') {
                        continue;
                    }
                    take(a, script, loops, out);
                    break;
                }
            }
            _ if program.contains('/') || program.starts_with('$') => {
                take(program, script, loops, out)
            }
            _ => {}
        }
    }
}

/// The simple commands of a line, split where the shell splits them (`;`, `&`, `|`,
/// newlines, outside quotes), each with whether it reads the one before's output.
fn commands(code: &str) -> Vec<(bool, &str)> {
    let mut out = Vec::new();
    let (mut start, mut piped) = (0, false);
    let mut quote: Option<char> = None;
    let bytes = code.as_bytes();
    for (i, c) in code.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if matches!(c, ';' | '&' | '|' | '\n') => {
                out.push((piped, &code[start..i]));
                // `|` alone pipes; `||` and `|&`'s second half do not start a pipe.
                piped =
                    c == '|' && bytes.get(i + 1) != Some(&b'|') && (i == 0 || bytes[i - 1] != b'|');
                start = i + 1;
            }
            None => {}
        }
    }
    out.push((piped, &code[start..]));
    out.into_iter()
        .filter(|(_, c)| !c.trim().is_empty())
        .collect()
}

/// What a command lists as paths: a `find`'s directories (each as `DIR/`, all that is
/// under it), an `ls`'s or `cat`'s arguments, a `$(find DIR …)` or `$(ls DIR)` inside
/// a loop's words; other words as they are.
fn listing(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = words.iter().peekable();
    while let Some(w) = it.next() {
        let w = w.as_str();
        match w.trim_start_matches("$(").trim_start_matches('`') {
            "find" => {
                let mut dirs = Vec::new();
                while let Some(d) = it.next_if(|d| !d.starts_with(['-', '(', '!', ')'])) {
                    dirs.push(
                        d.trim_end_matches([')', '`'])
                            .trim_end_matches('/')
                            .to_string(),
                    );
                }
                // `-name PAT`: only what is so named, at any depth.
                let mut name = "*".to_string();
                while let Some(o) = it.next_if(|o| !o.ends_with(')') && !o.starts_with('`')) {
                    if matches!(o.as_str(), "-name" | "-iname")
                        && let Some(n) = it.next()
                    {
                        name = n.trim_end_matches([')', '`']).to_string();
                    }
                }
                for d in dirs {
                    out.push(if d == "." || d.is_empty() {
                        format!("**/{name}")
                    } else {
                        format!("{d}/**/{name}")
                    });
                }
            }
            "ls" | "cat" => {
                while let Some(d) = it.next_if(|d| !d.starts_with('|')) {
                    if !d.starts_with('-') {
                        out.push(d.trim_end_matches([')', '`']).to_string());
                    }
                }
            }
            _ if w.starts_with("$(") || w.starts_with('`') => {}
            _ => out.push(w.to_string()),
        }
    }
    out
}

/// A line without its `#` comment (a `#` that starts a word, outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '#' && prev.is_whitespace() => return &line[..i],
            None => {}
        }
        prev = c;
    }
    line
}

/// The paths of the project a word may name, or none when it names none: a path
/// (it holds a `/`) or a script's name (`check.sh`), relative, with `$(dirname "$0")/`,
/// `${0%/*}/` or a variable (`$ROOT/`) in front read as the naming script's
/// directory or the root.
fn resolve(word: &str, script: Option<&str>) -> Option<Named> {
    let script_dir = script.map(|s| s.rsplit_once('/').map_or("", |(d, _)| d));
    let rest = match word.strip_prefix('$') {
        Some(after) => after_expansion(after)?,
        None => word,
    };
    if rest.is_empty()
        || rest.starts_with(['/', '-', '~'])
        || rest.contains(['$', '`', '=', '<', '>', ':'])
    {
        return None;
    }
    let name = rest.rsplit('/').next().unwrap_or(rest);
    let ext = name.rsplit_once('.').map(|(_, e)| e);
    let pathlike =
        rest.contains('/') || ext.is_some_and(|e| SCRIPT_EXTS.contains(&e)) || is_makefile(name);
    if !pathlike {
        return None;
    }
    // `DIR/`: all that is under it.
    let under = rest.ends_with('/');
    let mut candidates = Vec::new();
    let mut add = |base: &str| {
        let p = match (normalise(base, rest), under) {
            (Some(p), true) => Some(format!("{p}/**/*")),
            (None, true) if base.is_empty() => Some("**/*".into()),
            (p, _) => p,
        };
        if let Some(p) = p
            && !candidates.contains(&p)
        {
            candidates.push(p);
        }
    };
    add("");
    if let Some(dir) = script_dir.filter(|d| !d.is_empty()) {
        add(dir);
    }
    (!candidates.is_empty()).then_some(Named { candidates })
}

/// What follows a `$` expansion that ends in `/`: `(dirname "$0")/x` → `x`,
/// `{0%/*}/x` → `x`, `ROOT/x` → `x`; none when no `/` follows it.
fn after_expansion(after: &str) -> Option<&str> {
    let end = match after.chars().next()? {
        '(' | '{' => {
            let (open, close) = if after.starts_with('(') {
                ('(', ')')
            } else {
                ('{', '}')
            };
            let mut depth = 0usize;
            let mut end = None;
            for (i, c) in after.char_indices() {
                if c == open {
                    depth += 1;
                } else if c == close {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i + 1);
                        break;
                    }
                }
            }
            end?
        }
        _ => after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len()),
    };
    after[end..].strip_prefix('/')
}

/// `base/rel` with `.` and `..` taken away; none when it leaves the project (or is
/// its top).
pub fn normalise(base: &str, rel: &str) -> Option<String> {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for p in rel.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_as_paths() {
        assert_eq!(
            normalise("tests", "../lib/x.sh").as_deref(),
            Some("lib/x.sh")
        );
        assert_eq!(normalise("", "../x.sh"), None);
        assert_eq!(after_expansion("(dirname \"$0\")/x.sh"), Some("x.sh"));
        assert_eq!(after_expansion("{0%/*}/x.sh"), Some("x.sh"));
        assert_eq!(after_expansion("ROOT/lib/x.sh"), Some("lib/x.sh"));
        assert_eq!(after_expansion("f"), None);
        assert_eq!(strip_comment("a # b"), "a ");
        assert_eq!(strip_comment("echo '#x' #y"), "echo '#x' ");
    }
}
