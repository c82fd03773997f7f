//! What runs the stand-in's objects, as a cluster's controllers and its one node's
//! kubelet would: the Job controller (a pod per Job, `backoffLimit`,
//! `activeDeadlineSeconds`, `ttlSecondsAfterFinished`, the Job's status and
//! conditions), the scheduler (a pod whose requests do not fit the node stays
//! `Pending` with `PodScheduled=False`, reason `Unschedulable`), the kubelet (the
//! container's command run as a process of this machine, in its own process group,
//! its environment only what the pod spec gives it, `envFrom` Secrets included, its
//! output kept as the pod's log; graceful termination on deletion), and the garbage
//! collector (dependents deleted with their owner unless orphaned).

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{Value, json};

use super::Shared;
use super::store::{Key, Kind, Selector, Store, now};

/// A container's process.
pub struct Proc {
    pub pid: i32,
    pub log: Arc<Mutex<Vec<u8>>>,
    /// Its exit code (128 + the signal for one killed), once it has exited.
    pub exited: Option<i32>,
    /// When SIGTERM was sent, for a pod being deleted.
    pub terminating: Option<SystemTime>,
}

/// What the node offers: CPU in millicores, memory in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub cpu_milli: u64,
    pub memory: u64,
}

pub const NODE_NAME: &str = "stand-in-node-1";

/// Reads a quantity (`2`, `500m`, `4Gi`, `1G`) in its base unit, times 1000 for CPU.
pub fn quantity(s: &str, milli: bool) -> Option<u64> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (n, suffix) = s.split_at(end);
    let n: f64 = n.parse().ok()?;
    let factor: f64 = match suffix {
        "" => 1.0,
        "m" => 0.001,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        _ => return None,
    };
    Some((n * factor * if milli { 1000.0 } else { 1.0 }).round() as u64)
}

fn requests(pod: &Value) -> (u64, u64) {
    let mut cpu = 0;
    let mut mem = 0;
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        let r = &c["resources"];
        let pick = |k: &str| {
            r["requests"][k]
                .as_str()
                .or_else(|| r["limits"][k].as_str())
        };
        cpu += pick("cpu").and_then(|q| quantity(q, true)).unwrap_or(0);
        mem += pick("memory").and_then(|q| quantity(q, false)).unwrap_or(0);
    }
    (cpu, mem)
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or("Pending")
}

fn over(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

fn condition(o: &Value, kind: &str) -> bool {
    o["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

fn secs(o: &Value, field: &str) -> Option<u64> {
    o["spec"][field].as_u64()
}

fn since(stamp: &Value) -> Duration {
    stamp
        .as_str()
        .and_then(|s| humantime::parse_rfc3339(s).ok())
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .unwrap_or_default()
}

fn pod_key(ns: &str, name: &str) -> Key {
    (Kind::Pod, ns.to_string(), name.to_string())
}

/// One pass of every controller.
pub fn reconcile(sh: &Arc<Shared>) {
    let mut st = sh.store.lock().unwrap();
    let mut procs = sh.procs.lock().unwrap();
    jobs(&mut st);
    schedule(&mut st, sh.node);
    kubelet(sh, &mut st, &mut procs);
    drop(procs);
    drop(st);
    sh.changed.notify_all();
}

fn jobs(st: &mut Store) {
    let keys: Vec<Key> = st
        .objects
        .keys()
        .filter(|k| k.0 == Kind::Job)
        .cloned()
        .collect();
    for key in keys {
        let job = st.objects[&key].clone();
        let uid = job["metadata"]["uid"].as_str().unwrap_or("").to_string();
        let finished = condition(&job, "Complete") || condition(&job, "Failed");
        if finished {
            let done_at = job["status"]["completionTime"].clone();
            let done_at = if done_at.is_null() {
                job["status"]["conditions"][0]["lastTransitionTime"].clone()
            } else {
                done_at
            };
            if let Some(ttl) = secs(&job, "ttlSecondsAfterFinished")
                && since(&done_at) >= Duration::from_secs(ttl)
            {
                delete(st, &key, "Background");
            }
            continue;
        }
        let pods = st.list(
            Kind::Pod,
            &key.1,
            &Selector::parse(&format!("controller-uid={uid}")).unwrap(),
        );
        let failed = job["status"]["failed"].as_u64().unwrap_or(0);
        let backoff = secs(&job, "backoffLimit").unwrap_or(6);
        let active: Vec<&Value> = pods.iter().filter(|p| !over(p)).collect();
        let end = if pods.iter().any(|p| phase(p) == "Succeeded") {
            Some(("Complete", "Completed", "Job completed"))
        } else if failed > backoff {
            Some((
                "Failed",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ))
        } else if secs(&job, "activeDeadlineSeconds")
            .is_some_and(|d| since(&job["status"]["startTime"]) >= Duration::from_secs(d))
        {
            Some((
                "Failed",
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            ))
        } else {
            None
        };
        if let Some((kind, reason, message)) = end {
            for p in &active {
                let name = p["metadata"]["name"].as_str().unwrap_or("").to_string();
                delete(st, &pod_key(&key.1, &name), "Background");
            }
            st.update(&key, |j| {
                let s = &mut j["status"];
                s["active"] = json!(0);
                if kind == "Complete" {
                    s["succeeded"] = json!(1);
                    s["completionTime"] = json!(now());
                }
                s["conditions"] = json!([{
                    "type": kind, "status": "True", "reason": reason, "message": message,
                    "lastProbeTime": now(), "lastTransitionTime": now(),
                }]);
            });
            continue;
        }
        if active.is_empty() {
            let pod = pod_for(&job, &key, &uid, st.rv);
            let _ = st.create(Kind::Pod, &key.1, pod);
        }
        let count = active.len().max(1) as u64;
        st.update(&key, |j| {
            if j["status"]["startTime"].is_null() {
                j["status"]["startTime"] = json!(now());
            }
            j["status"]["active"] = json!(count);
        });
    }
}

/// A pod of `job`'s template, as the Job controller makes one.
fn pod_for(job: &Value, key: &Key, uid: &str, salt: u64) -> Value {
    let template = &job["spec"]["template"];
    let mut labels = template["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    labels["controller-uid"] = json!(uid);
    labels["batch.kubernetes.io/controller-uid"] = json!(uid);
    labels["job-name"] = json!(key.2);
    labels["batch.kubernetes.io/job-name"] = json!(key.2);
    let suffix: String = format!("{:05x}", (salt * 2654435761) % 0xfffff)
        .chars()
        .map(|c| {
            if c.is_ascii_digit() {
                (b'a' + c as u8 - b'0') as char
            } else {
                c
            }
        })
        .collect();
    json!({
        "metadata": {
            "name": format!("{}-{suffix}", key.2),
            "labels": labels,
            "annotations": template["metadata"]["annotations"],
            "ownerReferences": [{
                "apiVersion": "batch/v1", "kind": "Job", "name": key.2, "uid": uid,
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": template["spec"],
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    })
}

fn schedule(st: &mut Store, node: Node) {
    let (mut cpu, mut mem) = (0, 0);
    for ((k, _, _), p) in &st.objects {
        if *k == Kind::Pod && p["spec"]["nodeName"].is_string() && !over(p) {
            let (c, m) = requests(p);
            cpu += c;
            mem += m;
        }
    }
    let waiting: Vec<Key> = st
        .objects
        .iter()
        .filter(|((k, _, _), p)| {
            *k == Kind::Pod
                && !p["spec"]["nodeName"].is_string()
                && p["metadata"]["deletionTimestamp"].is_null()
        })
        .map(|(k, _)| k.clone())
        .collect();
    for key in waiting {
        let (c, m) = requests(&st.objects[&key]);
        let mut short = Vec::new();
        if cpu + c > node.cpu_milli {
            short.push("cpu");
        }
        if mem + m > node.memory {
            short.push("memory");
        }
        if short.is_empty() {
            cpu += c;
            mem += m;
            st.update(&key, |p| {
                p["spec"]["nodeName"] = json!(NODE_NAME);
                p["status"]["conditions"] = json!([{"type": "PodScheduled", "status": "True", "lastTransitionTime": now()}]);
            });
        } else {
            let why: Vec<String> = short
                .iter()
                .map(|r| format!("1 Insufficient {r}"))
                .collect();
            let message = format!(
                "0/1 nodes are available: {}. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
                why.join(", ")
            );
            st.update(&key, |p| {
                let same = p["status"]["conditions"][0]["message"] == json!(message);
                if !same {
                    p["status"]["conditions"] = json!([{
                        "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "message": message, "lastTransitionTime": now(),
                    }]);
                }
            });
        }
    }
}

fn kubelet(sh: &Arc<Shared>, st: &mut Store, procs: &mut BTreeMap<String, Proc>) {
    let pods: Vec<(Key, Value)> = st
        .objects
        .iter()
        .filter(|((k, _, _), p)| *k == Kind::Pod && p["spec"]["nodeName"] == NODE_NAME)
        .map(|(k, p)| (k.clone(), p.clone()))
        .collect();
    for (key, pod) in pods {
        let id = format!("{}/{}", key.1, key.2);
        let deleting = !pod["metadata"]["deletionTimestamp"].is_null();
        match procs.get_mut(&id) {
            None if deleting => {
                remove_pod(st, &key);
            }
            None if over(&pod) => {}
            None => match start(sh, st, &key, &pod) {
                Ok(proc) => {
                    procs.insert(id, proc);
                    st.update(&key, |p| {
                        p["status"]["phase"] = json!("Running");
                        p["status"]["startTime"] = json!(now());
                        p["status"]["containerStatuses"] = json!([{
                            "name": p["spec"]["containers"][0]["name"], "image": p["spec"]["containers"][0]["image"],
                            "ready": true, "started": true, "restartCount": 0,
                            "state": {"running": {"startedAt": now()}},
                        }]);
                    });
                }
                Err((reason, message)) => {
                    st.update(&key, |p| {
                        p["status"]["containerStatuses"] = json!([{
                            "name": p["spec"]["containers"][0]["name"], "image": p["spec"]["containers"][0]["image"],
                            "ready": false, "started": false, "restartCount": 0,
                            "state": {"waiting": {"reason": reason, "message": message}},
                        }]);
                    });
                }
            },
            Some(proc) => {
                if deleting {
                    let grace = pod["spec"]["terminationGracePeriodSeconds"]
                        .as_u64()
                        .unwrap_or(30);
                    match proc.terminating {
                        None if proc.exited.is_none() => {
                            signal(proc.pid, nix::sys::signal::Signal::SIGTERM);
                            proc.terminating = Some(SystemTime::now());
                        }
                        Some(t)
                            if proc.exited.is_none()
                                && t.elapsed().unwrap_or_default()
                                    >= Duration::from_secs(grace) =>
                        {
                            signal(proc.pid, nix::sys::signal::Signal::SIGKILL);
                        }
                        _ => {}
                    }
                    if proc.exited.is_some() {
                        procs.remove(&id);
                        remove_pod(st, &key);
                    }
                    continue;
                }
                if let (Some(code), false) = (proc.exited, over(&pod)) {
                    let ok = code == 0;
                    st.update(&key, |p| {
                        p["status"]["phase"] = json!(if ok { "Succeeded" } else { "Failed" });
                        let started =
                            p["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
                                .clone();
                        p["status"]["containerStatuses"][0]["ready"] = json!(false);
                        p["status"]["containerStatuses"][0]["state"] = json!({"terminated": {
                            "exitCode": code, "reason": if ok { "Completed" } else { "Error" },
                            "startedAt": started, "finishedAt": now(),
                        }});
                    });
                    if !ok {
                        count_failure(st, &pod);
                    }
                }
            }
        }
    }
}

/// A pod's failure, counted on the Job that owns it.
fn count_failure(st: &mut Store, pod: &Value) {
    let Some(owner) = pod["metadata"]["ownerReferences"][0]["name"].as_str() else {
        return;
    };
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("");
    let key = (Kind::Job, ns.to_string(), owner.to_string());
    st.update(&key, |j| {
        let n = j["status"]["failed"].as_u64().unwrap_or(0);
        j["status"]["failed"] = json!(n + 1);
    });
}

/// A pod's object goes: a pod that had not ended is a failure of its Job.
pub fn remove_pod(st: &mut Store, key: &Key) {
    if let Some(pod) = st.remove(key)
        && !over(&pod)
    {
        count_failure(st, &pod);
    }
}

/// Deletes an object as the API does: a pod gracefully (its kubelet ends it), a Job
/// with its pods and Secrets unless `propagation` orphans them.
pub fn delete(st: &mut Store, key: &Key, propagation: &str) {
    match key.0 {
        Kind::Pod => {
            // A pod no node runs goes at once; a kubelet ends a running one first.
            if st
                .get(key)
                .is_some_and(|p| !p["spec"]["nodeName"].is_string())
            {
                remove_pod(st, key);
                return;
            }
            st.update(key, |p| {
                if p["metadata"]["deletionTimestamp"].is_null() {
                    p["metadata"]["deletionTimestamp"] = json!(now());
                    p["metadata"]["deletionGracePeriodSeconds"] =
                        p["spec"]["terminationGracePeriodSeconds"].clone();
                }
            });
        }
        Kind::Secret => {
            st.remove(key);
        }
        Kind::Job => {
            let Some(job) = st.remove(key) else { return };
            let uid = job["metadata"]["uid"].clone();
            let dependents: Vec<Key> = st
                .objects
                .iter()
                .filter(|((_, ns, _), o)| {
                    *ns == key.1
                        && o["metadata"]["ownerReferences"]
                            .as_array()
                            .is_some_and(|refs| refs.iter().any(|r| r["uid"] == uid))
                })
                .map(|(k, _)| k.clone())
                .collect();
            for d in dependents {
                if propagation == "Orphan" {
                    st.update(&d, |o| o["metadata"]["ownerReferences"] = json!([]));
                } else {
                    delete(st, &d, "Background");
                }
            }
        }
    }
}

fn signal(pid: i32, sig: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), sig);
}

/// Starts the pod's (first) container; why it cannot start yet.
fn start(sh: &Arc<Shared>, st: &Store, key: &Key, pod: &Value) -> Result<Proc, (String, String)> {
    let c = &pod["spec"]["containers"][0];
    let words = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|s| s.as_str().map(String::from))
            .collect()
    };
    let mut argv = words(&c["command"]);
    argv.extend(words(&c["args"]));
    if argv.is_empty() {
        return Err((
            "CreateContainerError".into(),
            "the stand-in runs only containers with a command".into(),
        ));
    }
    let mut env: Vec<(String, String)> = Vec::new();
    for from in c["envFrom"].as_array().into_iter().flatten() {
        let Some(name) = from["secretRef"]["name"].as_str() else {
            continue;
        };
        let Some(secret) = st.get(&(Kind::Secret, key.1.clone(), name.to_string())) else {
            if from["secretRef"]["optional"] == true {
                continue;
            }
            return Err((
                "CreateContainerConfigError".into(),
                format!("secret \"{name}\" not found"),
            ));
        };
        for (k, v) in secret["data"].as_object().into_iter().flatten() {
            let value = base64::engine::general_purpose::STANDARD
                .decode(v.as_str().unwrap_or(""))
                .unwrap_or_default();
            env.push((k.clone(), String::from_utf8_lossy(&value).into_owned()));
        }
    }
    for e in c["env"].as_array().into_iter().flatten() {
        if let (Some(k), Some(v)) = (e["name"].as_str(), e["value"].as_str()) {
            env.push((k.to_string(), v.to_string()));
        }
    }
    let home = sh.dir.path().join("pods").join(&key.2);
    std::fs::create_dir_all(&home).map_err(|e| ("RunContainerError".into(), e.to_string()))?;
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("HOSTNAME", &key.2)
        .envs(env)
        .current_dir(c["workingDir"].as_str().map(Into::into).unwrap_or(home))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd.spawn().map_err(|e| {
        (
            "StartError".to_string(),
            format!(
                "failed to create containerd task: exec: \"{}\": {e}",
                argv[0]
            ),
        )
    })?;
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut readers = Vec::new();
    for stream in [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let log = log.clone();
        readers.push(std::thread::spawn(move || {
            let mut stream = stream;
            let mut buf = [0u8; 8192];
            while let Ok(n) = stream.read(&mut buf) {
                if n == 0 {
                    break;
                }
                log.lock().unwrap().extend_from_slice(&buf[..n]);
            }
        }));
    }
    let pid = child.id() as i32;
    let id = format!("{}/{}", key.1, key.2);
    let weak = Arc::downgrade(sh);
    std::thread::spawn(move || {
        use std::os::unix::process::ExitStatusExt;
        let status = child.wait();
        for r in readers {
            let _ = r.join();
        }
        let code = match status {
            Ok(s) => s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(9)),
            Err(_) => 255,
        };
        if let Some(sh) = weak.upgrade() {
            if let Some(p) = sh.procs.lock().unwrap().get_mut(&id) {
                p.exited = Some(code);
            }
            sh.changed.notify_all();
        }
    });
    Ok(Proc {
        pid,
        log,
        exited: None,
        terminating: None,
    })
}

/// The node fails under its pods: every container killed at once, each pod marked as
/// disrupted and then removed (as the taint manager and the pod garbage collector do).
pub fn fail_node(sh: &Shared) {
    let mut st = sh.store.lock().unwrap();
    let mut procs = sh.procs.lock().unwrap();
    let bound: Vec<Key> = st
        .objects
        .iter()
        .filter(|((k, _, _), p)| *k == Kind::Pod && p["spec"]["nodeName"] == NODE_NAME && !over(p))
        .map(|(k, _)| k.clone())
        .collect();
    for key in bound {
        if let Some(p) = procs.remove(&format!("{}/{}", key.1, key.2)) {
            signal(p.pid, nix::sys::signal::Signal::SIGKILL);
        }
        st.update(&key, |p| {
            p["metadata"]["deletionTimestamp"] = json!(now());
            p["status"]["conditions"] = json!([{
                "type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                "message": "Taint manager: deleting due to NoExecute taint", "lastTransitionTime": now(),
            }]);
        });
        remove_pod(&mut st, &key);
    }
    drop(procs);
    drop(st);
    sh.changed.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_read_as_kubernetes_reads_them() {
        assert_eq!(quantity("2", true), Some(2000));
        assert_eq!(quantity("500m", true), Some(500));
        assert_eq!(quantity("4Gi", false), Some(4 << 30));
        assert_eq!(quantity("1G", false), Some(1_000_000_000));
        assert_eq!(quantity("x", false), None);
    }
}
