//! The loop-efficiency table: every scenario under agentloop's default policy and the
//! loops people run today. Prints Markdown and writes `target/efficiency.md` and
//! `target/efficiency.json` to compare across versions.
//!
//! `cargo bench -p agentloop-testkit --bench efficiency`

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rows = agentloop_testkit::efficiency::table();
    let md = agentloop_testkit::efficiency::markdown(&rows);
    print!("{md}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target");
    std::fs::create_dir_all(&dir).expect("target dir");
    std::fs::write(dir.join("efficiency.md"), &md).expect("write markdown");
    std::fs::write(
        dir.join("efficiency.json"),
        serde_json::to_string_pretty(&rows).expect("json"),
    )
    .expect("write json");
    eprintln!("written: target/efficiency.md, target/efficiency.json");
}
