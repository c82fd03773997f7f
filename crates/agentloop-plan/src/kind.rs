//! Task kinds beyond plain work (seed 004's completion criteria): an **interface
//! update** changes what other code or people rely on — a public API, a protocol, an
//! endpoint, a signature others call, a file format — and what it changed is reviewed
//! as architecture (`[gates] architecture`), whatever the diff gate's own triggers say.

use crate::model::Task;

/// What task `t` says that makes it an interface update, if anything.
pub fn interface_update(t: &Task) -> Option<String> {
    let text = format!("{} {}", t.title, t.body).to_lowercase();
    const PHRASES: [&str; 14] = [
        "public api",
        "api contract",
        "interface update",
        "update the interface",
        "change the interface",
        "interface change",
        "breaking change",
        "signature",
        "wire format",
        "file format",
        "protocol",
        "endpoint",
        "openapi",
        "graphql schema",
    ];
    PHRASES
        .iter()
        .find(|p| text.contains(*p))
        .map(|p| format!("it speaks of \"{p}\""))
}

/// The plan's interface updates: (task, why).
pub fn interface_updates(plan: &crate::model::Plan) -> Vec<(String, String)> {
    plan.tasks
        .iter()
        .filter_map(|t| interface_update(t).map(|why| (t.id.clone(), why)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_updates_are_told_from_plain_work() {
        for (title, yes) in [
            ("Change the signature of parse()", true),
            ("Add the /users endpoint", true),
            ("Bump the wire format to v2", true),
            ("Make the public API async", true),
            ("Fix the off-by-one in the lexer", false),
            ("Document usage in README.md", false),
        ] {
            assert_eq!(
                interface_update(&Task::new("T1", title)).is_some(),
                yes,
                "{title}"
            );
        }
    }
}
