//! A mock model API on 127.0.0.1 for trying an agent CLI by hand:
//! `cargo run -p agentloop-testkit --example mock_server -- gemini scenario.json`
//! prints the server's URL, serves the scenario's steps, and on stdin's end prints the
//! requests it received as JSON lines.

use std::io::Read;

use agentloop_testkit::{Api, MockServer, Scenario};

fn main() {
    let mut args = std::env::args().skip(1);
    let api = match args.next().as_deref() {
        Some("anthropic") => Api::Anthropic,
        Some("responses") => Api::OpenAi,
        Some("gemini") => Api::Gemini,
        Some("chat") => Api::Chat,
        _ => {
            eprintln!("usage: mock_server anthropic|responses|gemini|chat SCENARIO.json");
            std::process::exit(2);
        }
    };
    let scenario: Scenario = match args.next() {
        Some(path) => {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                eprintln!("cannot read {path}: {e}");
                std::process::exit(2)
            });
            serde_json::from_str(&text).unwrap_or_else(|e| {
                eprintln!("{path}: {e}");
                std::process::exit(2)
            })
        }
        None => Scenario::default(),
    };
    let server = MockServer::start(api, scenario);
    println!("{}", server.url());
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    for r in server.requests() {
        println!(
            "{}",
            serde_json::json!({"method": r.method, "path": r.path, "step": r.step, "body": r.body})
        );
    }
}
