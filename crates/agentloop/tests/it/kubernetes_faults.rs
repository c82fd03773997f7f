//! The Kubernetes executor when the API refuses, and when two runs share a namespace
//! and a run id, and when a driver dies before it wrote a Job's name down.

use std::time::Duration;

use agentloop_testkit::MockKubernetes;

use crate::kubernetes::{NAMESPACE, ONE, TOKEN, first_job_started, jobs, pod_of, project};
use crate::support::{journal_has, wait_exit};

const SLOW: &str =
    "if [ $n = 1 ]; then echo started; sleep 60; fi\ntouch one.txt\necho TASK_COMPLETE";

fn named(k: &MockKubernetes, plural: &str, name: &str) -> bool {
    k.objects(plural)
        .iter()
        .any(|o| o["metadata"]["name"] == name)
}

#[test]
fn a_forbidden_read_of_the_job_ends_the_lane_with_the_apis_status_and_message() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    // A start_timeout far past the test's: the refusal, not the time, ends it.
    let (p, _remote) = project(&k, ONE, 1, "start_timeout = \"10m\"\n", SLOW);
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(&p);
    // The service account loses `get` on `jobs` (or its token expires) mid-run.
    k.fail_job_reads(403);
    let st = wait_exit(&mut driver, Duration::from_secs(30));
    assert_ne!(st.code(), Some(0));
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("cannot be followed") && log.contains("403 Forbidden"),
        "{log}"
    );
    assert!(
        journal_has(
            &p,
            "cannot get resource \\\"jobs\\\" in API group \\\"batch\\\""
        ),
        "{log}"
    );
    let (_, name) = jobs(&p).remove(0);
    assert!(
        !named(&k, "jobs", &name),
        "the Job it cannot follow is deleted"
    );
}

#[test]
fn two_clones_with_one_run_id_in_one_namespace_keep_their_own_jobs_and_secrets() {
    let k = MockKubernetes::start(TOKEN, "4", "8Gi");
    let (a, _ra) = project(&k, ONE, 1, "", "sleep 1\ntouch one.txt\necho TASK_COMPLETE");
    let (b, _rb) = project(&k, ONE, 1, "", "sleep 1\ntouch one.txt\necho TASK_COMPLETE");
    let mut first = a
        .cmd(&["run", "--quiet", "--run-id", "shared"])
        .spawn()
        .unwrap();
    let mut second = b
        .cmd(&["run", "--quiet", "--run-id", "shared"])
        .spawn()
        .unwrap();
    assert_eq!(
        wait_exit(&mut first, Duration::from_secs(60)).code(),
        Some(0)
    );
    assert_eq!(
        wait_exit(&mut second, Duration::from_secs(60)).code(),
        Some(0)
    );
    let (ja, jb) = (jobs(&a).remove(0).1, jobs(&b).remove(0).1);
    assert!(ja.starts_with("agentloop-shared-1-"), "{ja}");
    assert_ne!(ja, jb, "each Job, and its Secret, has a name of its own");
    // Each run's Secret had its own values: made, never patched by the other run.
    assert!(
        !k.requests().iter().any(|r| r.method == "PATCH"
            && r.url.contains("/secrets/")
            && r.body.get("data").is_some()),
        "a Secret was overwritten"
    );
    assert_eq!(a.status()["status"], "completed");
    assert_eq!(b.status()["status"], "completed");
}

#[test]
fn a_job_whose_name_a_killed_driver_never_wrote_down_goes_with_its_secret() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let (p, _remote) = project(&k, ONE, 1, "", SLOW);
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(&p);
    driver.kill().unwrap();
    driver.wait().unwrap();
    let (dir, name) = jobs(&p).remove(0);
    assert!(pod_of(&k, &name).is_some());
    // As if the driver had died between making the Secret and the Job and writing
    // the Job's name: only the token is there, and the Secret is nobody's.
    std::fs::remove_file(dir.join("kubernetes.job")).unwrap();
    let (code, body) = crate::support::http_request(
        k.url().trim_start_matches("http://"),
        "PATCH",
        &format!("/api/v1/namespaces/{NAMESPACE}/secrets/{name}"),
        Some(TOKEN),
        Some(r#"{"metadata":{"ownerReferences":[]}}"#),
    );
    assert_eq!(code, 200, "{body}");
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        !named(&k, "jobs", &name),
        "the Job is found by its token and deleted"
    );
    assert!(!named(&k, "secrets", &name), "its Secret goes with it");
    assert_eq!(p.status()["status"], "completed");
}

#[test]
fn an_api_that_never_answers_about_the_job_ends_the_lane_at_start_timeout() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let (p, _remote) = project(&k, ONE, 1, "start_timeout = \"3s\"\n", SLOW);
    k.fail_job_reads(503);
    let r = p.run(&["run", "--quiet"]);
    assert_ne!(r.code, Some(0));
    let log = p.run(&["log"]).stdout;
    assert!(
        log.contains("no answer from the API for 3s, the job not seen started")
            && log.contains("the server is currently unable to handle the request"),
        "{log}"
    );
}

/// A task whose prompt is longer than one environment variable may be on Linux (128
/// KiB): the job's spec reaches the container as a file of the Secret's volume.
#[test]
fn a_prompt_longer_than_an_environment_variable_may_be_reaches_the_job() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let mut plan = String::from("# One\n\n## T1: One\nVerify: test -f one.txt\n\n");
    for n in 0..3000 {
        plan.push_str(&format!(
            "Context line {n}: what the task needs to know, at length.\n"
        ));
    }
    let (p, _remote) = project(&k, &plan, 1, "", "touch one.txt\necho TASK_COMPLETE");
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stderr, p.run(&["log"]).stdout);
    let secret = k
        .objects("secrets")
        .into_iter()
        .next()
        .expect("the Job's Secret");
    let spec = secret["data"]["agentloop-job-spec.json"].as_str().unwrap();
    assert!(
        spec.len() > 4 * 128 * 1024 / 3,
        "the spec is {} bytes of base64",
        spec.len()
    );
    assert_eq!(p.status()["status"], "completed");
}
