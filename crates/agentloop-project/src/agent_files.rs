//! The files that configure an agent CLI: its instructions (`CLAUDE.md`, `AGENTS.md`,
//! `GEMINI.md`, `QWEN.md` at any depth; Droid's `agents.md`, `Claude.md` and
//! `DESIGN.md` at the root), its settings and hooks (`.claude/`, `.codex/`,
//! `.gemini/`, `.opencode/`, `.qwen/`, `.factory/` …) and its tool servers (`.mcp.json`). A worker that
//! writes one can steer the next CLI that starts in its tree — the reviewer above all —
//! so the reviewer's copy holds the baseline's versions of these, or none.

/// File names that configure an agent CLI wherever they are.
const NAMES: [&str; 16] = [
    "CLAUDE.md",
    "CLAUDE.local.md",
    "AGENTS.md",
    "AGENTS.override.md",
    "GEMINI.md",
    "QWEN.md",
    ".qwenignore",
    "CONVENTIONS.md",
    ".mcp.json",
    "opencode.json",
    "opencode.jsonc",
    ".cursorrules",
    ".windsurfrules",
    ".clinerules",
    ".geminiignore",
    ".aiderignore",
];

/// Directories whose files configure an agent CLI wherever they are.
const DIRS: [&str; 13] = [
    ".claude",
    ".claude-plugin",
    ".codex",
    ".gemini",
    ".opencode",
    ".cursor",
    ".copilot",
    ".qwen",
    ".factory",
    ".agents",
    ".agent",
    ".clinerules",
    ".cline",
];

/// Names Factory Droid reads at the root of the tree in any case (`agents.md`,
/// `Claude.md`), and its design guidelines.
const ROOT_NAMES: [&str; 3] = ["agents.md", "claude.md", "design.md"];

/// Paths under `.github/` that GitHub Copilot reads as instructions or agents.
const COPILOT: [&str; 5] = [
    ".github/copilot-instructions.md",
    ".github/instructions/",
    ".github/prompts/",
    ".github/agents/",
    ".github/chatmodes/",
];

/// Whether `path` (relative, `/`-separated) configures an agent CLI.
pub fn configures_agent(path: &str) -> bool {
    if !path.contains('/') && ROOT_NAMES.contains(&path.to_ascii_lowercase().as_str()) {
        return true;
    }
    let mut parts = path.split('/').peekable();
    while let Some(part) = parts.next() {
        let last = parts.peek().is_none();
        // The directory's own entry too: committed as a symbolic link, `.claude` would
        // give the CLI settings from anywhere in the tree.
        if DIRS.contains(&part) {
            return true;
        }
        // Aider's own files: `.aider.conf.yml`, `.aider.chat.history.md` …
        if last && (NAMES.contains(&part) || part.starts_with(".aider")) {
            return true;
        }
    }
    COPILOT.iter().any(|p| {
        if p.ends_with('/') {
            path.starts_with(p)
        } else {
            path == *p
        }
    }) || path == ".vscode/mcp.json"
}

#[cfg(test)]
mod tests {
    use super::configures_agent;

    #[test]
    fn the_files_that_steer_a_cli_are_known_at_any_depth() {
        for p in [
            "CLAUDE.md",
            "src/CLAUDE.md",
            "AGENTS.md",
            "pkg/AGENTS.override.md",
            "GEMINI.md",
            ".claude/settings.json",
            "sub/.claude/settings.local.json",
            ".claude/skills/x/SKILL.md",
            ".codex/config.toml",
            ".gemini/settings.json",
            ".opencode/agent/x.md",
            ".mcp.json",
            "opencode.json",
            ".aider.conf.yml",
            ".github/copilot-instructions.md",
            ".github/instructions/py.instructions.md",
            ".vscode/mcp.json",
            "agents.md",
            "Claude.md",
            "DESIGN.md",
            ".agent/AGENTS.md",
            ".factory/hooks/x.sh",
            ".qwen/commands/x.md",
            "QWEN.md",
            // A symbolic link in a directory's place.
            ".claude",
            "sub/.gemini",
        ] {
            assert!(configures_agent(p), "{p}");
        }
        for p in [
            "src/claude.rs",
            "docs/agents.md",
            "docs/DESIGN.md",
            ".github/workflows/ci.yml",
            "tests/test_claude.py",
            "README.md",
        ] {
            assert!(!configures_agent(p), "{p}");
        }
    }
}
