//! The stand-in's kubelet: a bound pod's container run as a process of this machine,
//! in its own process group, its environment only what the pod spec gives it
//! (`envFrom` Secrets and `secretKeyRef` values included: a missing one keeps the
//! container waiting with `CreateContainerConfigError`; a `secret` volume's files
//! written to a directory of the pod's, and a variable naming a path under its mount
//! pointed there), its output kept as the pod's log; a deleted pod's
//! container sent SIGTERM, then SIGKILL after its grace period; a failed node.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use serde_json::{Value, json};

use super::Shared;
use super::pods::{NODE_NAME, count_failure, over, remove_pod};
use super::store::{Key, Kind, Store, now};

/// A container's process.
pub struct Proc {
    pub pid: i32,
    pub log: Arc<Mutex<Vec<u8>>>,
    /// Its exit code (128 + the signal for one killed), once it has exited.
    pub exited: Option<i32>,
    /// When SIGTERM was sent, for a pod being deleted.
    pub terminating: Option<SystemTime>,
}

pub(super) fn kubelet(sh: &Arc<Shared>, st: &mut Store, procs: &mut BTreeMap<String, Proc>) {
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

fn decoded(base64: &str) -> String {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64)
        .unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Each `secret` volume the container mounts, written to `home/volumes/NAME` (its
/// `items`, or every key; `defaultMode` kept), and each variable whose value is a path
/// under its mount path pointed there: the stand-in's containers see this machine's
/// file system, where the mount path is not.
fn secret_volumes(
    st: &Store,
    key: &Key,
    pod: &Value,
    home: &std::path::Path,
    env: &mut [(String, String)],
) -> Result<(), (String, String)> {
    use std::os::unix::fs::PermissionsExt;
    let c = &pod["spec"]["containers"][0];
    let failed = |e: std::io::Error| ("RunContainerError".to_string(), e.to_string());
    for m in c["volumeMounts"].as_array().into_iter().flatten() {
        let Some(v) = pod["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|v| v["name"] == m["name"] && v["secret"].is_object())
        else {
            continue;
        };
        let name = v["secret"]["secretName"].as_str().unwrap_or("");
        let Some(secret) = st.get(&(Kind::Secret, key.1.clone(), name.to_string())) else {
            return Err((
                "ContainerCreating".into(),
                format!(
                    "MountVolume.SetUp failed for volume \"{}\" : secret \"{name}\" not found",
                    m["name"].as_str().unwrap_or("")
                ),
            ));
        };
        let items: Vec<(String, String)> = match v["secret"]["items"].as_array() {
            Some(items) => items
                .iter()
                .filter_map(|i| {
                    Some((
                        i["key"].as_str()?.to_string(),
                        i["path"].as_str()?.to_string(),
                    ))
                })
                .collect(),
            None => secret["data"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(k, _)| (k.clone(), k.clone()))
                .collect(),
        };
        let dir = home.join("volumes").join(m["name"].as_str().unwrap_or(""));
        std::fs::create_dir_all(&dir).map_err(failed)?;
        let mode = v["secret"]["defaultMode"].as_u64().unwrap_or(0o644) as u32;
        for (entry, path) in items {
            let Some(value) = secret["data"][&entry].as_str() else {
                return Err((
                    "ContainerCreating".into(),
                    format!("couldn't find key {entry} in Secret {}/{name}", key.1),
                ));
            };
            let file = dir.join(&path);
            std::fs::write(&file, decoded(value)).map_err(failed)?;
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode))
                .map_err(failed)?;
        }
        let at = m["mountPath"].as_str().unwrap_or("").trim_end_matches('/');
        for (_, value) in env.iter_mut() {
            if !at.is_empty() && (value == at || value.starts_with(&format!("{at}/"))) {
                *value = format!("{}{}", dir.display(), &value[at.len()..]);
            }
        }
    }
    Ok(())
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
        let r = &e["valueFrom"]["secretKeyRef"];
        if let (Some(k), Some(name), Some(entry)) =
            (e["name"].as_str(), r["name"].as_str(), r["key"].as_str())
        {
            let optional = r["optional"] == true;
            let secret = st.get(&(Kind::Secret, key.1.clone(), name.to_string()));
            match secret.map(|s| &s["data"][entry]) {
                Some(Value::String(v)) => env.push((k.to_string(), decoded(v))),
                _ if optional => {}
                None => {
                    return Err((
                        "CreateContainerConfigError".into(),
                        format!("secret \"{name}\" not found"),
                    ));
                }
                Some(_) => {
                    return Err((
                        "CreateContainerConfigError".into(),
                        format!("couldn't find key {entry} in Secret {}/{name}", key.1),
                    ));
                }
            }
        }
    }
    let security = |field: &str| {
        let own = &c["securityContext"][field];
        if own.is_null() {
            pod["spec"]["securityContext"][field].clone()
        } else {
            own.clone()
        }
    };
    // The stand-in's "image" runs as root: a container that must not run as root
    // needs a user of its own, as on a real node.
    if security("runAsNonRoot") == true && security("runAsUser").as_u64().is_none_or(|u| u == 0) {
        return Err((
            "CreateContainerConfigError".into(),
            format!(
                "container has runAsNonRoot and image will run as root (pod: \"{}_{}\", container: {})",
                key.2,
                key.1,
                c["name"].as_str().unwrap_or("")
            ),
        ));
    }
    let home = sh.dir.path().join("pods").join(&key.2);
    std::fs::create_dir_all(&home).map_err(|e| ("RunContainerError".into(), e.to_string()))?;
    secret_volumes(st, key, pod, &home, &mut env)?;
    // A read-only root file system: the container's home and every path that is no
    // volume cannot be written. The stand-in runs its containers on this machine's
    // file system, so it gives them a home under /proc (which no one can write) and
    // a TMPDIR inside a mounted `emptyDir` (a directory of the pod's) or else under
    // /proc too.
    let read_only = c["securityContext"]["readOnlyRootFilesystem"] == true;
    let unwritable = std::path::PathBuf::from("/proc/agentloop-stand-in-read-only-root");
    let tmpdir = env
        .iter()
        .rev()
        .find(|(k, _)| k == "TMPDIR")
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| "/tmp".into());
    let mounted = c["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| {
            let at = m["mountPath"].as_str().unwrap_or("").trim_end_matches('/');
            !at.is_empty() && (tmpdir == at || tmpdir.starts_with(&format!("{at}/")))
        })
        .filter(|m| {
            pod["spec"]["volumes"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|v| v["name"] == m["name"] && v["emptyDir"].is_object())
        });
    let tmp = match mounted {
        Some(m) => {
            let at = m["mountPath"].as_str().unwrap_or("").trim_end_matches('/');
            let dir = home.join("volumes").join(m["name"].as_str().unwrap_or(""));
            std::fs::create_dir_all(&dir)
                .map_err(|e| ("RunContainerError".into(), e.to_string()))?;
            Some(dir.join(tmpdir[at.len()..].trim_start_matches('/')))
        }
        None if read_only => Some(unwritable.join("tmp")),
        None => None,
    };
    if let Some(t) = &tmp {
        env.retain(|(k, _)| k != "TMPDIR");
        env.push(("TMPDIR".into(), t.to_string_lossy().into_owned()));
    }
    let home = if read_only {
        unwritable.join("home")
    } else {
        home
    };
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("HOSTNAME", &key.2)
        .envs(env)
        .current_dir(
            c["workingDir"]
                .as_str()
                .map(Into::into)
                .unwrap_or_else(|| sh.dir.path().to_path_buf()),
        )
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
