//! The web dashboard in a real headless Chromium, driven over WebDriver (Debian's
//! `chromium` and `chromium-driver`): a run of the example agent waits at a gate, the
//! dashboard shows it, a click approves it, clicks pause and resume it, and the page
//! follows it live to the end. Each click must land in the journal as a control
//! request from the HTTP API. Screenshots go to `target/tmp/screenshots/`.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::support::{Project, http_request, serve};

const CHROMEDRIVER: &str = "chromedriver";

/// A chromedriver on a free port, and one browser session in it.
struct Browser {
    driver: Child,
    addr: String,
    session: String,
    _profile: tempfile::TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = http_request(
            &self.addr,
            "DELETE",
            &format!("/session/{}", self.session),
            None,
            None,
        );
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl Browser {
    fn start() -> Browser {
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run {CHROMEDRIVER} ({e}): install Debian's chromium and chromium-driver (.ci/run does)"
                )
            });
        let addr = format!("127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(&addr).is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": chromium_binary(),
                "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--window-size=1400,1800",
                    format!("--user-data-dir={}", profile.path().display())],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let (code, body) = http_request(&addr, "POST", "/session", None, Some(&caps.to_string()));
        assert_eq!(code, 200, "new session: {body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        let session = v["value"]["sessionId"].as_str().unwrap().to_string();
        Browser {
            driver,
            addr,
            session,
            _profile: profile,
        }
    }

    fn call(&self, method: &str, path: &str, body: Value) -> Value {
        let body = (method == "POST").then(|| body.to_string());
        let (code, text) = http_request(
            &self.addr,
            method,
            &format!("/session/{}{path}", self.session),
            None,
            body.as_deref(),
        );
        let v: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        assert_eq!(code, 200, "{method} {path}: {text}");
        v["value"].clone()
    }

    fn goto(&self, url: &str) {
        self.call("POST", "/url", json!({ "url": url }));
    }

    fn script(&self, js: &str) -> Value {
        self.call("POST", "/execute/sync", json!({ "script": js, "args": [] }))
    }

    /// Waits until `js` (an expression) is truthy in the page; returns its value.
    fn wait_for(&self, what: &str, js: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let v = self.script(&format!("return ({js}) || null;"));
            if !v.is_null() && v != json!(false) {
                return v;
            }
            if Instant::now() > deadline {
                self.screenshot("timeout");
                panic!(
                    "timed out waiting for {what}; page text:\n{}\nconsole: {}",
                    self.script("return document.body.innerText;"),
                    self.console()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The WebDriver id of the element `css` selects.
    fn find(&self, css: &str) -> String {
        let el = self.call(
            "POST",
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        el.as_object()
            .and_then(|o| o.values().next())
            .and_then(|v| v.as_str())
            .unwrap_or_else(|| panic!("no element {css}"))
            .to_string()
    }

    /// Clicks the element `css` selects, as a user would (WebDriver element click).
    /// The page may redraw the element between finding and clicking it (live
    /// updates): then it is found again and clicked again, as a user would.
    fn click(&self, css: &str) {
        for _ in 0..50 {
            let id = self.find(css);
            let (code, text) = http_request(
                &self.addr,
                "POST",
                &format!("/session/{}/element/{id}/click", self.session),
                None,
                Some("{}"),
            );
            if code == 200 {
                return;
            }
            assert!(
                text.contains("stale element reference"),
                "click {css}: {code} {text}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("{css} kept being redrawn before it could be clicked");
    }

    fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.call(
            "POST",
            &format!("/element/{id}/value"),
            json!({ "text": text }),
        );
    }

    fn press(&self, key: &str) {
        self.call(
            "POST",
            "/actions",
            json!({"actions": [{"type": "key", "id": "kb", "actions": [
                {"type": "keyDown", "value": key}, {"type": "keyUp", "value": key}]}]}),
        );
    }

    fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.call("GET", "/screenshot", Value::Null);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().unwrap())
            .unwrap();
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn console(&self) -> String {
        let (_, body) = http_request(
            &self.addr,
            "POST",
            &format!("/session/{}/se/log", self.session),
            None,
            Some(r#"{"type":"browser"}"#),
        );
        body
    }
}

fn chromium_binary() -> String {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("/usr/bin/chromium")
        .to_string()
}

/// The control requests in a run's journal, as `(action, source, note)`.
fn controls(p: &Project) -> Vec<(String, String, Option<String>)> {
    let journal = std::fs::read_to_string(p.run_dir().join("journal.jsonl")).unwrap();
    journal
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["kind"] == "control")
        .map(|v| {
            let d = &v["data"];
            (
                d["request"]["action"].as_str().unwrap_or("").to_string(),
                d["source"].as_str().unwrap_or("").to_string(),
                d["request"]["note"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn wait_journal(p: &Project, what: &str, ok: impl Fn(&[(String, String, Option<String>)]) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let c = controls(p);
        if ok(&c) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the journal never recorded {what}: {c:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_dashboard_follows_a_run_and_its_buttons_control_it() {
    let p = Project::example();
    // A gate before the first iteration, and an agent slow enough to click during.
    let config = p.read("agentloop.toml").replace(
        r#"command = ["sh", "agent/example-agent.sh"]"#,
        r#"command = ["sh", "-c", "sleep 1; exec sh agent/example-agent.sh"]"#,
    ) + "\n[gates]\nplan_approval = true\n";
    p.write("agentloop.toml", config);
    p.commit("a gate and a slower agent");
    let mut run = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    let s = serve(&p);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !p.path().join(".agentloop/runs").exists() || gate_is_open(&p).is_none() {
        assert!(Instant::now() < deadline, "the run never reached its gate");
        std::thread::sleep(Duration::from_millis(50));
    }
    let run_id = p
        .run_dir()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();

    let b = Browser::start();
    b.goto(&format!("http://{}/?token={}#/", s.addr, s.token));
    // The runs page: the run, its progress and the "needs you" badge.
    b.wait_for(
        "the run in the list",
        &format!("document.querySelector('tr[data-run=\"{run_id}\"] .badge.needs')"),
    );
    let row = b.script(&format!(
        "return document.querySelector('tr[data-run=\"{run_id}\"]').innerText;"
    ));
    assert!(row.as_str().unwrap().contains("0 / 3"), "{row}");
    assert!(row.as_str().unwrap().contains("approve the plan"), "{row}");
    assert_eq!(
        b.script("return location.search;"),
        json!(""),
        "the token leaves the address bar"
    );
    b.screenshot("1-runs-needs-you");
    // A marker that survives only if the page never reloads.
    b.script("window.__sameDocument = true;");

    // Into the run; approve the plan with a note, by clicking.
    b.click(&format!("tr[data-run=\"{run_id}\"] a.run-link"));
    b.wait_for(
        "the approve button",
        "document.querySelector('button[data-action=approve]:not([disabled])')",
    );
    b.screenshot("2-run-at-gate");
    b.type_into("#note", "looks right");
    b.click("button[data-action=approve]");
    wait_journal(&p, "the approval", |c| {
        c.iter()
            .any(|(a, s, n)| a == "approve" && s == "http" && n.as_deref() == Some("looks right"))
    });

    // The page follows the run live: an iteration appears without a reload.
    b.wait_for(
        "an iteration in the timeline",
        "document.querySelector('.timeline [data-iteration]')",
    );
    b.click("button[data-action=pause]");
    wait_journal(&p, "the pause", |c| {
        c.iter().any(|(a, s, _)| a == "pause" && s == "http")
    });
    b.wait_for(
        "the paused status",
        "document.querySelector('.run-head .pill.s-paused')",
    );
    let paused = b.script("return document.querySelectorAll('.timeline [data-iteration]').length;");
    b.screenshot("3-paused");
    // Paused means no new iteration starts.
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        b.script("return document.querySelectorAll('.timeline [data-iteration]').length;"),
        paused,
        "an iteration started while paused"
    );

    // Resume with the keyboard shortcut this time (focus on the page, not a field).
    b.script("document.activeElement && document.activeElement.blur();");
    b.press("u");
    wait_journal(&p, "the resume", |c| {
        c.iter().any(|(a, s, _)| a == "resume" && s == "http")
    });
    b.wait_for(
        "the completed run",
        "document.querySelector('.run-head .pill.s-completed')",
    );
    let text = b.script("return document.querySelector('main').innerText;");
    let text = text.as_str().unwrap();
    assert!(text.contains("3 / 3"), "{text}");
    assert!(text.contains("verdict SHIP — every task done"), "{text}");
    assert!(text.contains("shape tool (clarity "), "{text}");
    assert!(text.contains("class 2A"), "{text}");
    // Each task's tests: the named one, failing at the baseline, passing now.
    let tests = b.script(
        "return document.querySelector('article.task[data-task=T2] table.evidence').innerText;",
    );
    let tests = tests.as_str().unwrap();
    assert!(
        tests.contains("1/1 named tests pass · regressions none"),
        "{tests}"
    );
    assert!(
        tests.contains("shout::shouted greeting\tfailed\tpassed"),
        "{tests}"
    );
    // In a narrow card the test id breaks; a verdict never does ("pas sed").
    let wrapped = b.script(
        "const t = document.querySelector('article.task[data-task=T2] table.evidence');\
         t.closest('article').style.width = '160px';\
         const lines = (td) => { const r = document.createRange(); r.selectNodeContents(td); \
           return new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size; };\
         const verdicts = [...t.querySelectorAll('tbody td:not(:first-child)')].map(lines);\
         const id = lines(t.querySelector('tbody td:first-child'));\
         t.closest('article').style.width = '';\
         return JSON.stringify({verdicts, id});",
    );
    let wrapped: serde_json::Value = serde_json::from_str(wrapped.as_str().unwrap()).unwrap();
    assert!(
        wrapped["verdicts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n == 1)
            && wrapped["id"].as_u64().unwrap() > 1,
        "{wrapped}"
    );
    // The timeline names each iteration's phase (the second try at T2: a retry).
    assert!(text.contains("T2 · retry"), "{text}");
    // The iteration the example agent got wrong, caught by verification.
    assert!(text.contains("failed"), "{text}");
    b.wait_for(
        "the cost chart",
        "document.querySelector('.chart svg[aria-label^=\"Iterations per task\"]')",
    );
    // Click the failed iteration: its verification log shows the real failure.
    b.click(".timeline [data-outcome=failed]");
    b.wait_for(
        "the verification log",
        "document.querySelector('#detail-panel') && document.querySelector('#detail-panel').textContent.includes(\"FAIL: expected 'HELLO, ADA!'\")",
    );
    b.screenshot("4-completed");
    // What the agent said at the end of that iteration: its claim, kept in the journal.
    b.click("#tab-0");
    b.wait_for(
        "the final message",
        "document.querySelector('#tab-0').textContent === 'Final message' && document.querySelector('#detail-panel').textContent.includes('TASK_COMPLETE')",
    );
    assert_eq!(
        b.script("return window.__sameDocument === true;"),
        json!(true),
        "the page reloaded"
    );
    let status = run.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    // Exactly the three requests the clicks made, in order.
    let actions: Vec<String> = controls(&p).into_iter().map(|c| c.0).collect();
    assert_eq!(actions, ["approve", "pause", "resume"]);
    let console = b.console();
    assert!(
        !console.contains("SEVERE"),
        "the page logged errors: {console}"
    );
}

/// `Some` once the run's journal shows its plan gate open.
fn gate_is_open(p: &Project) -> Option<()> {
    let runs = p.path().join(".agentloop/runs");
    let dir = std::fs::read_dir(runs).ok()?.flatten().next()?.path();
    let journal = std::fs::read_to_string(dir.join("journal.jsonl")).ok()?;
    journal.contains("\"gate_opened\"").then_some(())
}

/// The dashboard served for `p`, and a browser on its newest run's page.
fn open_run(p: &Project) -> (crate::support::Serve, Browser) {
    let s = serve(p);
    let run_id = p.status()["run_id"].as_str().unwrap().to_string();
    let b = Browser::start();
    // A deep link with the token after the page's part opens that run's page.
    b.goto(&format!(
        "http://{}/#/run/{run_id}?token={}",
        s.addr, s.token
    ));
    b.wait_for(
        "the run's page from a deep link",
        "document.querySelector('#current-title') && !location.hash.includes('token')",
    );
    (s, b)
}

#[test]
fn at_the_surface_gate_the_dashboard_shows_each_diff_and_a_click_rejects() {
    let p = crate::support::Scratch::new()
        .plan("# One\n\n## T1: Make the file\nVerify: sh tests/t1.sh\n")
        .file("tests/t1.sh", "test -f one.txt\n")
        .agent(&crate::support::agent(
            "if [ \"$n\" = 1 ]; then echo 'exit 0' > tests/t1.sh; else touch one.txt; fi\necho TASK_COMPLETE\n",
        ))
        .build();
    assert_eq!(p.run(&["run", "--no-wait", "--quiet"]).code, Some(5));
    let (s, b) = open_run(&p);
    let diff = b.wait_for(
        "the diff of the rewritten test",
        "(() => { const d = document.querySelector('.surface-change pre.diff'); return d && d.textContent.includes('+exit 0') && document.querySelector('.surface-change summary').textContent; })()",
    );
    assert!(
        diff.as_str().unwrap().starts_with("tests/t1.sh (modified"),
        "{diff}"
    );
    b.screenshot("5-surface-gate");
    b.type_into("#note", "the test stays");
    b.click("button[data-action=reject]");
    wait_journal(&p, "the rejection", |c| {
        c.iter()
            .any(|(a, s, n)| a == "reject" && s == "http" && n.as_deref() == Some("the test stays"))
    });
    drop(s);
    assert_eq!(p.run(&["resume", "--quiet"]).code, Some(0));
    assert_eq!(p.read("tests/t1.sh"), "test -f one.txt\n");
}

#[test]
fn the_dashboard_says_what_the_independent_reviewer_found() {
    let p = crate::review::project(crate::review::JUDGING, "when = \"always\"\n");
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let (_served, b) = open_run(&p);
    let said = b.wait_for(
        "the reviewer's words under the task",
        "(() => { const d = document.querySelector('[data-review=T1]'); return d && d.textContent.includes('approved') && d.innerText; })()",
    );
    assert_eq!(
        said.as_str().unwrap(),
        "Review: rejected by reviewer: src/add.sh:1: prints 3 whatever the arguments, then approved by reviewer"
    );
    b.screenshot("8-review");
}

#[test]
fn four_workers_show_as_lanes_with_their_own_output() {
    let p = crate::workers::project(
        crate::workers::FOUR,
        "echo \"working on $task\"\ni=0; while [ ! -e \"$state/go\" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\ncase $task in T1) touch one.txt;; T2) touch two.txt;; T3) touch three.txt;; T4) touch four.txt;; esac\necho TASK_COMPLETE",
        "",
    );
    let mut run = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    crate::support::wait_for(&p, "the workers", |p| {
        crate::support::journal_has(p, "\"iteration\":4,\"kind\":\"work\"")
            || crate::support::journal_has(p, "\"task\":\"T4\"")
    });
    // Time passes while the four agents work.
    std::thread::sleep(Duration::from_millis(1200));
    let (_served, b) = open_run(&p);
    // While it runs: time counts the iterations at work, and no verdict alarms yet.
    let head = b.script("return document.querySelector('.verdict') ? document.querySelector('.verdict').innerText : '';");
    let head = head.as_str().unwrap();
    assert!(
        !head.contains("verdict so far") && head.contains("the verdict comes when the run ends"),
        "{head}"
    );
    let time = b.script(
        "return [...document.querySelectorAll('.gauge')].find((g) => g.querySelector('.gauge-name').textContent === 'time').querySelector('.gauge-text').innerText;",
    );
    assert!(
        !time.as_str().unwrap().starts_with("0.0s"),
        "the time gauge while four agents work: {time}"
    );
    let lanes = b.wait_for(
        "four lanes, each with its agent's output",
        "(() => { const l = [...document.querySelectorAll('.lanes > li.lane')]; return l.length === 4 && l.every((x) => x.querySelector('pre').textContent.includes('working on T')) && l.map((x) => x.innerText).join('\\n'); })()",
    );
    let text = lanes.as_str().unwrap();
    for t in ["T1", "T2", "T3", "T4"] {
        assert!(
            text.contains(&format!("] {t} · attempt 1 of at most ")),
            "{text}"
        );
        assert!(text.contains(&format!("working on {t}")), "{text}");
    }
    let shot = b.screenshot("6-four-workers");
    // The README's picture of the dashboard is this page, taken again with
    // `AGENTLOOP_BLESS=1` (as the generated reference pages are written again).
    if std::env::var_os("AGENTLOOP_BLESS").is_some() {
        let docs = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/images");
        std::fs::create_dir_all(&docs).unwrap();
        std::fs::copy(&shot, docs.join("dashboard.png")).unwrap();
    }
    // Let the agents finish.
    std::fs::write(p.path().join(".git/agent-state/go"), "").unwrap();
    assert_eq!(run.wait().unwrap().code(), Some(0));
    b.wait_for(
        "the completed run",
        "document.querySelector('.run-head .pill.s-completed')",
    );
    // Where the work is and how to take it.
    let branch = p.status()["workers"]["integration"]["branch"]
        .as_str()
        .unwrap()
        .to_string();
    let line = b.wait_for(
        "the integration branch",
        "document.querySelector('.integration') && document.querySelector('.integration').innerText",
    );
    let line = line.as_str().unwrap();
    assert!(
        line.contains(&format!("Integration branch {branch} at "))
            && line.contains("`agentloop land` takes it"),
        "{line}"
    );
}

#[test]
fn a_sandboxed_run_shows_what_the_sandbox_refused() {
    let mut p = crate::support::Scratch::new()
        .plan("# Boxed\n\n## T1: Make a.txt\nVerify: test -f a.txt\n")
        .agent(&crate::support::agent(
            "curl -fsS -m 5 https://example.com/ >/dev/null\ntouch a.txt\necho TASK_COMPLETE\n",
        ))
        .build();
    p.env.push(("HOME".into(), "/var/tmp".into()));
    assert_eq!(
        p.run(&["run", "--quiet", "--no-wait", "--sandbox", "workspace"])
            .code,
        Some(0)
    );
    let (_served, b) = open_run(&p);
    let text = b.wait_for(
        "the sandbox's refusals",
        "(() => { const d = document.querySelector('.sandbox'); return d && d.textContent.includes('example.com:443') && d.innerText; })()",
    );
    let text = text.as_str().unwrap();
    assert!(
        text.contains("sandbox: workspace · 1 thing refused")
            && text
                .contains("iteration 1: network: example.com:443 (not in [sandbox] allow_hosts)"),
        "{text}"
    );
    b.screenshot("7-sandbox");
}

#[test]
fn the_dashboard_holds_the_lanes_of_a_hundred_and_twenty_eight_workers() {
    // A run of the simulator (the policy and journal a real driver uses, in simulated
    // time) at its busiest: most of its 128 workers at work, in every phase.
    let (journal, open) = agentloop_testkit::sim::busiest(7, 400, 128, 64);
    assert!(open >= 100, "only {open} lanes at once");
    let first: Value =
        serde_json::from_slice(journal.split(|b| *b == b'\n').next().unwrap()).unwrap();
    let run_id = first["data"]["run_id"].as_str().unwrap().to_string();
    let p = Project::git();
    let dir = p.path().join(".agentloop/runs").join(&run_id);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("journal.jsonl"), &journal).unwrap();
    // Its records are sealed with this test process's key: the project's commands
    // get the same key, as if this machine had written them.
    let key = agentloop_journal::key_path().unwrap();
    let state = p.state_home().join("agentloop");
    std::fs::create_dir_all(&state).unwrap();
    std::fs::copy(&key, state.join("journal.key")).unwrap();
    let phases: Vec<String> = p.status()["workers"]["lanes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["phase"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(phases.len(), open);

    let (_s, b) = open_run(&p);
    let shown = b.wait_for(
        "every lane, grouped by phase",
        &format!("document.querySelectorAll('.lane-group li.lane').length === {open} && document.querySelector('#current-title').textContent"),
    );
    assert_eq!(shown, "Workers (128)");
    // A section per phase, each saying how many lanes it holds.
    let groups = b.script(
        "return [...document.querySelectorAll('.lane-group')].map((g) => [g.dataset.phase, g.querySelectorAll('li.lane').length, g.querySelector('h3').textContent]);",
    );
    let groups = groups.as_array().unwrap();
    assert!(groups.len() >= 2, "{groups:?}");
    let mut total = 0;
    for g in groups {
        let n = g[1].as_u64().unwrap() as usize;
        total += n;
        assert!(g[2].as_str().unwrap().ends_with(&format!("({n})")), "{g}");
        let phase = g[0].as_str().unwrap();
        assert_eq!(phases.iter().filter(|p| *p == phase).count(), n, "{g}");
    }
    assert_eq!(total, open);
    // A hundred lanes do not ask for a hundred outputs a second: none is followed
    // until a person opens one, and then that one only.
    std::thread::sleep(Duration::from_millis(2500));
    let outputs = "performance.getEntriesByType('resource').map((e) => e.name).filter((n) => n.includes('/output?'))";
    let before = b.script(&format!("return {outputs};"));
    assert_eq!(before, json!([]), "{before}");
    let lane = b
        .script("return document.querySelector('.lane-group li.lane').dataset.iteration;")
        .as_str()
        .unwrap()
        .to_string();
    b.click(&format!(
        ".lane-group li.lane[data-iteration=\"{lane}\"] summary"
    ));
    b.wait_for(
        "the opened lane's output followed",
        &format!("{outputs}.length > 0"),
    );
    let after = b.script(&format!("return {outputs};"));
    for url in after.as_array().unwrap() {
        assert!(
            url.as_str()
                .unwrap()
                .contains(&format!("/iterations/{lane}/output?")),
            "{url}"
        );
    }
    assert!(
        b.script(&format!(
            "return !!document.querySelector('.lane-group li.lane[data-iteration=\"{lane}\"] details[open] pre');"
        )) == json!(true)
    );
    b.screenshot("dashboard-128-lanes");
}
