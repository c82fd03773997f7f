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
    // Prints each request's path and body as it comes, for inspection.
    let mut seen = 0;
    loop {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let all = server.requests();
        for r in &all[seen..] {
            eprintln!("{} {} step={:?} {}", r.method, r.path, r.step, r.body);
        }
        seen = all.len();
    }
}
