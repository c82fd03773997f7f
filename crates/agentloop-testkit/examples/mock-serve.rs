//! Serves a mock model API for trying a CLI by hand:
//! `cargo run -p agentloop-testkit --example mock-serve -- anthropic scenario.json`

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let api = match args.first().map(String::as_str) {
        Some("openai") => agentloop_testkit::Api::OpenAi,
        _ => agentloop_testkit::Api::Anthropic,
    };
    let scenario = match args.get(1) {
        Some(path) => serde_json::from_str(&std::fs::read_to_string(path).expect("read scenario"))
            .expect("scenario JSON"),
        None => agentloop_testkit::Scenario::default(),
    };
    let server = agentloop_testkit::MockServer::start(api, scenario);
    println!("{}", server.url());
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        for r in server.requests() {
            let _ = r;
        }
    }
}
