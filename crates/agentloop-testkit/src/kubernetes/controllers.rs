//! What runs the stand-in's objects, as a cluster's controllers and its one node's
//! kubelet would: the Job controller (a pod per Job, `backoffLimit`,
//! `activeDeadlineSeconds`, `ttlSecondsAfterFinished`, the Job's status and
//! conditions), the scheduler (a pod whose requests do not fit the node stays
//! `Pending` with `PodScheduled=False`, reason `Unschedulable`), the kubelet
//! ([`kubelet`]), and the garbage collector (dependents deleted with their owner
//! unless orphaned).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::Shared;
use super::pods::{NODE_NAME, over, phase, pod_key, remove_pod};
use super::store::{Key, Kind, Selector, Store, now, since};

/// What the node offers: CPU in millicores, memory in bytes.
#[derive(Debug, Clone, Copy)]
pub struct Node {
    pub cpu_milli: u64,
    pub memory: u64,
}

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

/// One pass of every controller.
pub fn reconcile(sh: &Arc<Shared>) {
    let mut st = sh.store.lock().unwrap();
    let mut procs = sh.procs.lock().unwrap();
    jobs(&mut st);
    schedule(&mut st, sh.node);
    super::kubelet::kubelet(sh, &mut st, &mut procs);
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
            let refused = if st.restricted.contains(&key.1) {
                super::admission::restricted_violations(&pod["spec"])
            } else {
                Vec::new()
            };
            if refused.is_empty() {
                let _ = st.create(Kind::Pod, &key.1, pod);
            } else {
                let message = format!(
                    "pods \"{}\" is forbidden: violates PodSecurity \"restricted:latest\": {}",
                    pod["metadata"]["name"].as_str().unwrap_or(""),
                    refused.join(", ")
                );
                super::admission::failed_create(st, &key, &uid, &message);
                continue;
            }
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
        Kind::Secret | Kind::Event => {
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
