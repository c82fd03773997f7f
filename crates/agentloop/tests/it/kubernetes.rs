//! The Kubernetes executor against the API stand-in of agentloop-testkit (one node
//! whose pods run as processes of this machine): each iteration a `batch/v1` Job whose
//! pod clones the task's branch from a bare remote, runs the agent, and pushes its
//! result back.

use std::process::Command;
use std::time::Duration;

use agentloop_testkit::MockKubernetes;
use serde_json::Value;

use crate::served::Served;
use crate::support::{Project, journal_has, wait_exit, wait_for};

pub const TOKEN: &str = "stand-in-token";
pub const NAMESPACE: &str = "agents";

const SIX: &str = "# Six\n\n## T1: One\nVerify: test -f one.txt\n\n## T2: Two\nVerify: test -f two.txt\n\n## T3: Three\nVerify: test -f three.txt\n\n## T4: Four\nVerify: test -f four.txt\n\n## T5: Five\nVerify: test -f five.txt\n\n## T6: Six\nVerify: test -f six.txt\n";

const MAKE: &str = "case $task in T1) f=one;; T2) f=two;; T3) f=three;; T4) f=four;; T5) f=five;; T6) f=six;; esac\ntouch $f.txt\necho TASK_COMPLETE";

pub const ONE: &str = "# One\n\n## T1: One\nVerify: test -f one.txt\n";

/// A project whose agent runs `body` (with `$task` and its attempt `$n`) as a
/// Kubernetes Job on `k`, a bare repository beside it as `origin`, served over
/// `git://` on 127.0.0.1 (a pod reaches no path of the driver's disk); `extra` is
/// added to `[executor.kubernetes]`.
pub fn project(
    k: &MockKubernetes,
    plan: &str,
    workers: u32,
    extra: &str,
    body: &str,
) -> (Project, Served) {
    let (mut p, remote) = crate::support::remote_project(plan, body, |agent| {
        format!(
            "[run]\nagent = \"scripted\"\nworkers = {workers}\n\n[agents.scripted]\ncommand = [\"sh\", \"{}\"]\ntimeout = \"120s\"\npass_env = [\"AGENT_TOKEN\"]\nenv = {{ AGENT_KEY = \"cfg-s3cr3t-key\" }}\n\n[executor]\nkind = \"kubernetes\"\npoll = \"200ms\"\nprogram = \"{}\"\n\n[executor.kubernetes]\nimage = \"registry.example/agentloop:1\"\ncpu = \"500m\"\nmemory = \"1Gi\"\n{extra}",
            agent.display(),
            env!("CARGO_BIN_EXE_agentloop"),
        )
    });
    let kubeconfig = p.cache.path().join("kubeconfig");
    std::fs::write(&kubeconfig, k.kubeconfig(NAMESPACE)).unwrap();
    p.env
        .push(("KUBECONFIG".into(), kubeconfig.to_string_lossy().into()));
    p.env.push(("AGENT_TOKEN".into(), "s3cr3t-value".into()));
    let served = Served::start(remote);
    p.git_cmd(&["remote", "set-url", "origin", &served.url("origin.git")]);
    (p, served)
}

/// The Job of each iteration so far, by iteration: its directory and its name.
pub fn jobs(p: &Project) -> Vec<(std::path::PathBuf, String)> {
    crate::support::iteration_jobs(p, "kubernetes.job")
}

pub fn first_job_started(p: &Project) {
    wait_for(p, "the first job at work", |p| {
        jobs(p).first().is_some_and(|(dir, _)| {
            std::fs::read_to_string(dir.join("agent.log")).is_ok_and(|l| l.contains("started"))
        })
    });
}

/// The pod of Job `job`.
pub fn pod_of(k: &MockKubernetes, job: &str) -> Option<Value> {
    k.objects("pods")
        .into_iter()
        .find(|p| p["metadata"]["labels"]["job-name"] == job)
}

fn first_finished(p: &Project) -> Value {
    let log = p.run(&["log", "--json"]).stdout;
    log.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["event"].clone())
        .find(|e| e["kind"] == "iteration_finished")
        .unwrap()["data"]
        .clone()
}

#[test]
fn six_tasks_on_three_workers_run_as_kubernetes_jobs_to_verified_completion() {
    let k = MockKubernetes::start(TOKEN, "4", "16Gi");
    // A namespace that enforces the `restricted` Pod Security Standard, and two log
    // streams that break mid-way.
    k.enforce_restricted(NAMESPACE);
    k.break_log_streams(2);
    let (p, remote) = project(
        &k,
        SIX,
        3,
        "",
        &format!(
            "echo started\necho \"key ${{AGENT_KEY:-none}}\"\necho \"home $HOME\" > \"$HOME/proof\" && echo \"home written\"\nsleep 1\n{MAKE}"
        ),
    );
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(&p);
    // The API server's history is compacted under the run's watch: it is resumed
    // with `410 Gone`, and the pods listed again.
    k.compact();
    let st = wait_exit(&mut driver, Duration::from_secs(120));
    assert_eq!(st.code(), Some(0));
    let s = p.status();
    assert_eq!(s["status"], "completed");
    let jobs = jobs(&p);
    assert_eq!(jobs.len(), 6, "{jobs:?}");
    let agentloop = env!("CARGO_BIN_EXE_agentloop");
    for (dir, name) in &jobs {
        let job = k
            .objects("jobs")
            .into_iter()
            .find(|j| j["metadata"]["name"] == name.as_str())
            .unwrap_or_else(|| panic!("no Job {name}"));
        let spec = &job["spec"];
        assert_eq!(spec["backoffLimit"], 0, "{job}");
        assert_eq!(spec["activeDeadlineSeconds"], 720, "{job}");
        assert_eq!(spec["ttlSecondsAfterFinished"], 3600, "{job}");
        assert_eq!(job["status"]["succeeded"], 1, "{job}");
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["automountServiceAccountToken"], false);
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "registry.example/agentloop:1");
        assert_eq!(
            c["imagePullPolicy"], "IfNotPresent",
            "said, for a tagged image"
        );
        assert_eq!(c["command"], serde_json::json!([agentloop, "job"]));
        assert_eq!(c["resources"]["requests"]["cpu"], "500m");
        assert_eq!(c["resources"]["limits"]["memory"], "1Gi");
        // The agent's variables, each from the Job's Secret by name; the job's spec a
        // file of a volume of that Secret.
        let from_secret: Vec<&str> = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["valueFrom"]["secretKeyRef"]["name"] == name.as_str())
            .filter_map(|e| e["name"].as_str())
            .collect();
        assert_eq!(from_secret, ["AGENT_KEY", "AGENT_TOKEN"], "{job}");
        let spec_volume = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "agentloop-spec")
            .unwrap_or_else(|| panic!("no spec volume: {job}"));
        assert_eq!(spec_volume["secret"]["secretName"], name.as_str());
        // What the `restricted` Pod Security Standard asks (the stand-in's namespace
        // enforces it), with a read-only root and the scratch in an emptyDir.
        let sc = &c["securityContext"];
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{job}");
        assert_eq!(sc["capabilities"]["drop"], serde_json::json!(["ALL"]));
        assert_eq!(sc["readOnlyRootFilesystem"], true);
        assert_eq!(sc["runAsNonRoot"], true);
        assert_eq!(
            pod["securityContext"]["seccompProfile"]["type"],
            "RuntimeDefault"
        );
        assert_eq!(pod["securityContext"]["runAsUser"], 1000);
        assert_eq!(c["volumeMounts"][0]["mountPath"], "/tmp");
        assert!(pod["volumes"][0]["emptyDir"].is_object(), "{job}");
        // The job's spec, its prompt with it, is in the Secret, not in an
        // environment value of the Job's.
        let values: Vec<&str> = c["env"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["value"].is_string())
            .filter_map(|e| e["name"].as_str())
            .collect();
        assert_eq!(values, ["TMPDIR", "AGENTLOOP_JOB_SPEC_FILE"], "{job}");
        assert!(!job.to_string().contains("## T"), "{job}");
        // The credential is in the Job's Secret, owned by the Job; never in its spec.
        assert!(!job.to_string().contains("s3cr3t"), "{job}");
        let secret = k
            .objects("secrets")
            .into_iter()
            .find(|x| x["metadata"]["name"] == name.as_str())
            .unwrap();
        assert_eq!(
            secret["metadata"]["ownerReferences"][0]["uid"],
            job["metadata"]["uid"]
        );
        assert!(secret["data"].get("AGENT_TOKEN").is_some(), "{secret}");
        // The agent's own variables (`[agents.NAME] env`) too, never in the spec.
        assert!(secret["data"].get("AGENT_KEY").is_some(), "{secret}");
        assert!(secret["data"].get("PATH").is_none(), "{secret}");
        assert!(
            secret["data"].get("agentloop-job-spec.json").is_some(),
            "{secret}"
        );
        // The pod's log, streamed into the iteration's: the agent ran in a clone of
        // its own, with the credential and the container's own home.
        let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
        assert!(log.contains("attempt 1, in /"), "{log}");
        assert!(log.contains("agentloop-job-"), "{log}");
        // It had the credential (a value the log keeps redacted).
        assert!(log.contains("token [REDACTED:AGENT_TOKEN]"), "{log}");
        assert!(log.contains("key ") && !log.contains("key none"), "{log}");
        // The root file system is read-only: the agent's home is the job's scratch.
        assert!(log.contains("home written"), "{log}");
        assert!(log.contains("the agent's home is "), "{log}");
        // Each line once, though two streams broke and were opened again.
        assert_eq!(log.matches("started").count(), 1, "{log}");
        assert!(
            !log.contains(&format!("home {}", std::env::var("HOME").unwrap())),
            "{log}"
        );
    }
    assert!(
        !k.requests()
            .iter()
            .any(|r| r.body.to_string().contains("s3cr3t") && !r.url.contains("/secrets")),
        "the credential went elsewhere than the Secret"
    );
    // The watch was resumed after 410 Gone: the pods listed more than once.
    let lists = k
        .requests()
        .iter()
        .filter(|r| r.method == "GET" && r.url.contains("/pods?") && !r.url.contains("watch=true"))
        .count();
    assert!(
        k.expired() >= 1,
        "no watch was resumed from a compacted version"
    );
    assert!(lists >= 2, "{lists} pod lists");
    assert_eq!(k.broken_log_streams(), 2);
    // The watch follows this run's pods only.
    let run = s["run_id"].as_str().unwrap();
    let watches: Vec<String> = k
        .requests()
        .into_iter()
        .filter(|r| r.url.contains("/pods?") && r.url.contains("watch=true"))
        .map(|r| r.url)
        .collect();
    assert!(!watches.is_empty());
    for w in &watches {
        assert!(w.contains(&format!("agentloop.dev%2Frun%3D{run}")), "{w}");
    }
    let log = p.run(&["log"]).stdout;
    for (_, name) in &jobs {
        for state in ["SUBMITTED", "Running", "Succeeded"] {
            assert!(
                log.contains(&format!("Kubernetes job {name} {state}")),
                "{log}"
            );
        }
    }
    let branch = format!("agentloop/{}", s["run_id"].as_str().unwrap());
    let files = p.git_cmd(&["ls-tree", "--name-only", &branch]);
    for f in ["one", "two", "three", "four", "five", "six"] {
        assert!(files.contains(&format!("{f}.txt")), "{files}");
    }
    let refs = Command::new("git")
        .args(["for-each-ref", "--format=%(refname)"])
        .current_dir(remote.path().join("origin.git"))
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&refs.stdout).trim(),
        "refs/heads/main"
    );
}

#[test]
fn a_pod_that_cannot_be_scheduled_stops_the_run_with_the_clusters_reason() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let (p, _remote) = project(&k, ONE, 1, "start_timeout = \"3s\"\n", MAKE);
    let mut config = p.read("agentloop.toml");
    config = config.replace("cpu = \"500m\"", "cpu = \"64\"");
    p.write("agentloop.toml", config);
    p.commit("more CPUs than the node has");
    let r = p.run(&["run", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("Kubernetes cannot start job agentloop-")
            && r.stderr
                .contains("Unschedulable: 0/1 nodes are available: 1 Insufficient cpu"),
        "{}",
        r.stderr
    );
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("Pending (Unschedulable: 0/1 nodes"), "{log}");
    // The Job was given up: deleted, its pod with it.
    assert!(k.objects("jobs").is_empty());
    assert!(k.objects("pods").is_empty());
    assert_ne!(p.status()["tasks"][0]["status"], "done");
}

#[test]
fn a_pod_the_namespaces_pod_security_refuses_stops_the_run_with_the_controllers_reason() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    k.enforce_restricted(NAMESPACE);
    // A hostPath volume, written for a namespace that admits privileged pods
    // (`pod_security`), in one that enforces `restricted`, which allows none.
    let (p, _remote) = project(
        &k,
        ONE,
        1,
        "pod_security = \"privileged\"\nvolumes = [{ name = \"host\", hostPath = { path = \"/var/run\" } }]\nvolume_mounts = [{ name = \"host\", mountPath = \"/host\" }]\n",
        MAKE,
    );
    let t = std::time::Instant::now();
    let r = p.run(&["run", "--no-wait"]);
    assert_ne!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("Kubernetes cannot create the pod of job agentloop-")
            && r.stderr
                .contains("violates PodSecurity \"restricted:latest\"")
            && r.stderr
                .contains("volume \"host\" uses a restricted volume type"),
        "{}",
        r.stderr
    );
    // At once, not after the start timeout (10 minutes by default).
    assert!(t.elapsed() < Duration::from_secs(60), "{:?}", t.elapsed());
    let log = p.run(&["log"]).stdout;
    assert!(log.contains("FailedCreate (Error creating: pods"), "{log}");
    assert!(k.objects("jobs").is_empty());
    assert!(k.objects("pods").is_empty());
}

#[test]
fn a_pod_deleted_by_someone_else_is_an_interrupted_iteration_and_the_task_is_redone() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let (p, _remote) = project(
        &k,
        ONE,
        1,
        "",
        "if [ $n = 1 ]; then echo started; sleep 60; fi\ntouch one.txt\necho TASK_COMPLETE",
    );
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(&p);
    let (_, name) = jobs(&p).remove(0);
    let pod = pod_of(&k, &name).unwrap();
    // An administrator deletes it (`kubectl delete pod`).
    k.delete_pod(NAMESPACE, pod["metadata"]["name"].as_str().unwrap());
    let st = wait_exit(&mut driver, Duration::from_secs(60));
    assert_eq!(st.code(), Some(0));
    let s = p.status();
    assert_eq!(s["status"], "completed");
    let first = first_finished(&p);
    assert_eq!(first["outcome"], "aborted", "{first}");
    let reason = first["reason"].as_str().unwrap();
    assert!(
        reason.contains(&format!("Kubernetes job {name} lost its pod")),
        "{reason}"
    );
    assert_eq!(jobs(&p).len(), 2);
    assert_eq!(s["tasks"][0]["attempts"], 1, "{}", s["tasks"][0]);
}

#[test]
fn a_job_lost_with_its_node_is_an_interrupted_iteration_and_the_task_is_redone() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let (p, _remote) = project(
        &k,
        ONE,
        1,
        "",
        "if [ $n = 1 ]; then echo started; sleep 60; fi\ntouch one.txt\necho TASK_COMPLETE",
    );
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(&p);
    let (_, name) = jobs(&p).remove(0);
    k.fail_node();
    let st = wait_exit(&mut driver, Duration::from_secs(60));
    assert_eq!(st.code(), Some(0));
    let reason = first_finished(&p)["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains(&format!("interrupted: Kubernetes job {name} lost its pod"))
            && reason.contains("DeletionByTaintManager"),
        "{reason}"
    );
    let s = p.status();
    assert_eq!(s["status"], "completed");
    assert_eq!(s["tasks"][0]["attempts"], 1, "{}", s["tasks"][0]);
}

#[test]
fn stop_now_deletes_every_job_with_its_pods() {
    let k = MockKubernetes::start(TOKEN, "4", "16Gi");
    let (p, _remote) = project(&k, SIX, 3, "", "echo started\nsleep 60\necho TASK_COMPLETE");
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    wait_for(&p, "three jobs", |p| jobs(p).len() == 3);
    wait_for(&p, "three jobs seen running", |p| {
        let lanes = p.status()["workers"]["lanes"].clone();
        lanes.as_array().is_some_and(|l| {
            l.len() == 3
                && l.iter().all(|l| {
                    l["job"].as_str().is_some_and(|j| {
                        j.starts_with("Kubernetes job ") && j.ends_with(" Running")
                    })
                })
        })
    });
    assert_eq!(p.run(&["stop", "--now"]).code, Some(0));
    assert_eq!(
        wait_exit(&mut driver, Duration::from_secs(30)).code(),
        Some(6)
    );
    assert_eq!(p.status()["status"], "stopped");
    let deletes: Vec<_> = k
        .requests()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .collect();
    assert_eq!(deletes.len(), 3, "{deletes:?}");
    for d in &deletes {
        assert_eq!(d.body["propagationPolicy"], "Background", "{d:?}");
    }
    assert!(k.objects("jobs").is_empty());
    wait_for(&p, "the pods gone", |_| k.objects("pods").is_empty());
    assert!(
        k.objects("secrets").is_empty(),
        "the Secrets went with their Jobs"
    );
}

#[test]
fn a_killed_driver_leaves_a_job_that_resume_deletes_before_redoing_its_task() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let (p, _remote) = project(
        &k,
        ONE,
        1,
        "",
        "if [ $n = 1 ]; then echo started; sleep 60; fi\ntouch one.txt\necho TASK_COMPLETE",
    );
    let mut driver = p.cmd(&["run", "--quiet"]).spawn().unwrap();
    first_job_started(&p);
    driver.kill().unwrap();
    driver.wait().unwrap();
    let (_, name) = jobs(&p).remove(0);
    assert!(pod_of(&k, &name).is_some(), "the job outlives its driver");
    let r = p.run(&["resume", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}\n{}", r.stdout, r.stderr);
    assert!(
        !k.objects("jobs")
            .iter()
            .any(|j| j["metadata"]["name"] == name.as_str()),
        "the abandoned Job is deleted"
    );
    assert_eq!(p.status()["status"], "completed");
    assert_eq!(jobs(&p).len(), 2);
}

#[test]
fn a_creation_whose_answer_is_lost_is_taken_up_not_made_twice() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let (p, _remote) = project(&k, ONE, 1, "", "touch one.txt\necho TASK_COMPLETE");
    k.lose_create_answers(1);
    let r = p.run(&["run", "--quiet"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let posts: Vec<_> = k
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST" && r.url.contains("/jobs"))
        .collect();
    // Made once: the answer lost, the Job found under its name was this
    // iteration's, and taken up.
    assert_eq!(posts.len(), 1, "{posts:?}");
    let name = &jobs(&p)[0].1;
    assert!(
        k.requests()
            .iter()
            .any(|r| r.method == "GET" && r.url.ends_with(&format!("/jobs/{name}"))),
        "no look for the Job"
    );
    assert_eq!(k.objects("jobs").len(), 1);
    assert_eq!(jobs(&p).len(), 1);
}

#[test]
fn a_job_that_rewrites_its_own_check_gets_no_task_marked_done() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let (p, _remote) = project(
        &k,
        "# One\n\n## T1: One\nVerify: sh tests/t1.sh\n",
        1,
        "",
        "printf 'exit 0\\n' > tests/t1.sh\necho TASK_COMPLETE",
    );
    p.write("tests/t1.sh", "test -f one.txt\n");
    p.commit("the check");
    let r = p.run(&["run", "--quiet", "--no-wait"]);
    assert_ne!(p.status()["tasks"][0]["status"], "done");
    assert!(journal_has(&p, "\"gate_opened\""));
    assert_eq!(r.code, Some(5), "waiting for a person: {}", r.stderr);
}

#[test]
fn a_kubernetes_executor_that_cannot_be_set_up_is_refused_before_the_run_exists() {
    let k = MockKubernetes::start(TOKEN, "2", "8Gi");
    let (mut p, _remote) = project(&k, ONE, 1, "", MAKE);
    let good = p.read("agentloop.toml");
    let wrong_token = p.cache.path().join("wrong");
    std::fs::write(&wrong_token, k.kubeconfig(NAMESPACE).replace(TOKEN, "nope")).unwrap();
    for (config, kubeconfig, says) in [
        (
            good.replace("image = \"registry.example/agentloop:1\"\n", ""),
            None,
            "executor.kubernetes.image: the container image the jobs run is required",
        ),
        (
            good.replace("memory = \"1Gi\"", "memory = \"lots\""),
            None,
            "executor.kubernetes.memory: `lots` is not a Kubernetes quantity",
        ),
        (
            good.replace("memory = \"1Gi\"", "memory = \"1Gi\"\nrun_as_user = 0"),
            None,
            "executor.kubernetes.run_as_user: 0 is root",
        ),
        (
            good.replace(
                "memory = \"1Gi\"",
                "memory = \"1Gi\"\ntolerations = [{ key = \"gpu\", tolerationSeconds = \"soon\" }]",
            ),
            None,
            "the pod it describes is not one Kubernetes reads",
        ),
        (
            good.replace(
                "memory = \"1Gi\"",
                "memory = \"1Gi\"\nvolume_mounts = [{ name = \"nothing\", mountPath = \"/x\" }]",
            ),
            None,
            "volume_mounts[0]: `name` must be one of",
        ),
        (
            good.replace(
                "memory = \"1Gi\"",
                "memory = \"1Gi\"\nvolumes = [{ name = \"host\", hostPath = { path = \"/\" } }]",
            ),
            None,
            "volumes[0]: `host` is a `hostPath` volume, which the `restricted` Pod Security Standard does not allow",
        ),
        (
            good.replace(
                "memory = \"1Gi\"",
                "memory = \"1Gi\"\nimage_pull_policy = \"Sometimes\"",
            ),
            None,
            "image_pull_policy: unknown variant `Sometimes`",
        ),
        (
            good.replace(
                "kind = \"kubernetes\"\n",
                "kind = \"kubernetes\"\nremote = \"/srv/git/app.git\"\n",
            ),
            None,
            "[executor] remote `/srv/git/app.git` is /srv/git/app.git, a path on this machine: no Kubernetes job can reach it",
        ),
        (
            good.clone(),
            Some(wrong_token.clone()),
            "cannot list Jobs through the Kubernetes API",
        ),
        (
            good.clone(),
            Some(p.cache.path().join("missing")),
            "no cluster to talk to",
        ),
    ] {
        p.write("agentloop.toml", &config);
        if let Some(path) = &kubeconfig {
            p.env.retain(|(k, _)| k != "KUBECONFIG");
            p.env
                .push(("KUBECONFIG".into(), path.to_string_lossy().into()));
        }
        let r = p.run(&["run", "--quiet"]);
        assert_eq!(r.code, Some(2), "{}", r.stderr);
        assert!(r.stderr.contains(says), "{says}: {}", r.stderr);
        assert!(!p.path().join(".agentloop/runs").exists());
    }
    assert!(k.objects("jobs").is_empty());
}
