//! The stand-in's objects as the API server keeps them: one resource version counter
//! for everything, each change an event kept in a bounded history (a watch that asks
//! for a version older than the history gets `410 Gone`, as from a compacted etcd),
//! label selectors, and the `Status` bodies the API answers errors with.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{Value, json};

/// The kinds the stand-in serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    Job,
    Pod,
    Secret,
    Event,
}

impl Kind {
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Job => "jobs",
            Kind::Pod => "pods",
            Kind::Secret => "secrets",
            Kind::Event => "events",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Job => "Job",
            Kind::Pod => "Pod",
            Kind::Secret => "Secret",
            Kind::Event => "Event",
        }
    }

    pub fn api_version(self) -> &'static str {
        match self {
            Kind::Job => "batch/v1",
            Kind::Pod | Kind::Secret | Kind::Event => "v1",
        }
    }

    pub fn group(self) -> &'static str {
        match self {
            Kind::Job => "batch",
            Kind::Pod | Kind::Secret | Kind::Event => "",
        }
    }

    /// How errors name the resource: `jobs.batch`, `pods`.
    pub fn resource(self) -> String {
        match self.group() {
            "" => self.plural().to_string(),
            g => format!("{}.{g}", self.plural()),
        }
    }
}

/// Where an object lives.
pub type Key = (Kind, String, String);

#[derive(Debug, Clone)]
pub struct Event {
    pub rv: u64,
    pub kind: Kind,
    pub namespace: String,
    /// `ADDED`, `MODIFIED`, `DELETED`.
    pub what: &'static str,
    pub object: Value,
}

/// The objects and their history.
pub struct Store {
    pub rv: u64,
    pub objects: BTreeMap<Key, Value>,
    pub events: VecDeque<Event>,
    /// The oldest version a watch may start after; older ones are compacted away.
    pub oldest: u64,
    /// Bumped to end every open watch.
    pub generation: u64,
    /// Namespaces labelled `pod-security.kubernetes.io/enforce: restricted`.
    pub restricted: std::collections::BTreeSet<String>,
    uids: u64,
}

/// How many events the history keeps.
const HISTORY: usize = 5000;

impl Default for Store {
    fn default() -> Store {
        Store::new()
    }
}

impl Store {
    pub fn new() -> Store {
        Store {
            rv: 1000,
            objects: BTreeMap::new(),
            events: VecDeque::new(),
            oldest: 1000,
            generation: 0,
            restricted: std::collections::BTreeSet::new(),
            uids: 0,
        }
    }

    fn record(&mut self, kind: Kind, namespace: &str, what: &'static str, object: Value) {
        self.events.push_back(Event {
            rv: self.rv,
            kind,
            namespace: namespace.to_string(),
            what,
            object,
        });
        while self.events.len() > HISTORY {
            if let Some(e) = self.events.pop_front() {
                self.oldest = e.rv;
            }
        }
    }

    /// Stores a new object, giving it a uid, a creation time and a resource version;
    /// `409 AlreadyExists` when the name is taken.
    pub fn create(
        &mut self,
        kind: Kind,
        namespace: &str,
        mut object: Value,
    ) -> Result<Value, Value> {
        let name = object["metadata"]["name"]
            .as_str()
            .unwrap_or("")
            .to_string();
        let key = (kind, namespace.to_string(), name.clone());
        if self.objects.contains_key(&key) {
            return Err(status(
                409,
                "AlreadyExists",
                &format!("{} \"{name}\" already exists", kind.resource()),
                Some((kind, &name)),
            ));
        }
        self.rv += 1;
        self.uids += 1;
        let meta = &mut object["metadata"];
        meta["namespace"] = json!(namespace);
        meta["uid"] = json!(format!("6f1c0000-0000-4000-8000-{:012x}", self.uids));
        meta["resourceVersion"] = json!(self.rv.to_string());
        meta["creationTimestamp"] = json!(now());
        meta["generation"] = json!(1);
        object["kind"] = json!(kind.name());
        object["apiVersion"] = json!(kind.api_version());
        self.objects.insert(key, object.clone());
        self.record(kind, namespace, "ADDED", object.clone());
        Ok(object)
    }

    /// Changes an object in place (its status, mostly); a new resource version and a
    /// `MODIFIED` event, unless nothing changed.
    pub fn update(&mut self, key: &Key, change: impl FnOnce(&mut Value)) -> bool {
        let Some(old) = self.objects.get(key) else {
            return false;
        };
        let mut object = old.clone();
        change(&mut object);
        if &object == old {
            return false;
        }
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.objects.insert(key.clone(), object.clone());
        self.record(key.0, &key.1, "MODIFIED", object);
        true
    }

    /// Removes an object: a `DELETED` event carrying it as it was last.
    pub fn remove(&mut self, key: &Key) -> Option<Value> {
        let mut object = self.objects.remove(key)?;
        self.rv += 1;
        object["metadata"]["resourceVersion"] = json!(self.rv.to_string());
        self.record(key.0, &key.1, "DELETED", object.clone());
        Some(object)
    }

    pub fn get(&self, key: &Key) -> Option<&Value> {
        self.objects.get(key)
    }

    /// The objects of `kind` in `namespace` a selector picks.
    pub fn list(&self, kind: Kind, namespace: &str, selector: &Selector) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|((k, ns, _), o)| *k == kind && ns == namespace && selector.picks(o))
            .map(|(_, o)| o.clone())
            .collect()
    }

    /// Forgets the whole history and ends every watch: a watch resumed from any
    /// version seen so far gets `410 Gone`.
    pub fn compact(&mut self) {
        // A cluster's revision moves with writes no watch here sees (leases, other
        // namespaces) before it is compacted: a watch's last version is then always
        // older than the oldest kept, as it would be on a real API server.
        self.rv += 1;
        self.events.clear();
        self.oldest = self.rv;
        self.generation += 1;
    }
}

/// A label selector: `a=b`, `a==b`, `a!=b`, `a`, `!a`, joined by commas.
#[derive(Debug, Clone, Default)]
pub struct Selector(Vec<Term>);

/// One requirement: a label, the value it must (`true`) or must not have, and
/// whether it must be there at all.
type Term = (String, Option<(bool, String)>, bool);

impl Selector {
    pub fn parse(s: &str) -> Result<Selector, String> {
        let mut terms = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            if let Some((k, v)) = term.split_once("!=") {
                terms.push((
                    k.trim().to_string(),
                    Some((false, v.trim().to_string())),
                    true,
                ));
            } else if let Some((k, v)) = term.split_once('=') {
                let v = v.strip_prefix('=').unwrap_or(v);
                terms.push((
                    k.trim().to_string(),
                    Some((true, v.trim().to_string())),
                    true,
                ));
            } else if let Some(k) = term.strip_prefix('!') {
                terms.push((k.to_string(), None, false));
            } else if term.contains(' ') {
                return Err(format!("unable to parse requirement: `{term}`"));
            } else {
                terms.push((term.to_string(), None, true));
            }
        }
        Ok(Selector(terms))
    }

    pub fn picks(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        self.0.iter().all(|(k, value, present)| {
            let have = labels.get(k).and_then(Value::as_str);
            match value {
                None => have.is_some() == *present,
                Some((true, v)) => have == Some(v.as_str()),
                Some((false, v)) => have != Some(v.as_str()),
            }
        })
    }
}

/// A field selector: `a.b=v`, `a.b==v`, `a.b!=v` on the object's fields, joined by
/// commas.
#[derive(Debug, Clone, Default)]
pub struct Fields(Vec<(Vec<String>, bool, String)>);

impl Fields {
    pub fn parse(s: &str) -> Result<Fields, String> {
        let mut terms = Vec::new();
        for term in s.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (path, equal, value) = if let Some((k, v)) = term.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, true, v.strip_prefix('=').unwrap_or(v))
            } else {
                return Err(format!(
                    "invalid selector: '{term}'; can't understand '{term}'"
                ));
            };
            let path = path.trim().split('.').map(str::to_string).collect();
            terms.push((path, equal, value.trim().to_string()));
        }
        Ok(Fields(terms))
    }

    pub fn picks(&self, object: &Value) -> bool {
        self.0.iter().all(|(path, equal, value)| {
            let have = path
                .iter()
                .fold(object, |o, k| &o[k.as_str()])
                .as_str()
                .unwrap_or("");
            (have == value) == *equal
        })
    }
}

/// An error body as the API answers it.
pub fn status(code: u16, reason: &str, message: &str, of: Option<(Kind, &str)>) -> Value {
    let mut s = json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    });
    if let Some((kind, name)) = of {
        s["details"] = json!({"name": name, "group": kind.group(), "kind": kind.plural()});
    }
    s
}

pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// How long ago `stamp` (an RFC 3339 time) was; zero when it is not one.
pub fn since(stamp: &Value) -> std::time::Duration {
    stamp
        .as_str()
        .and_then(|s| humantime::parse_rfc3339(s).ok())
        .and_then(|t| std::time::SystemTime::now().duration_since(t).ok())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_pick_by_labels() {
        let o = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        for (s, picks) in [
            ("a=1", true),
            ("a==1,b=2", true),
            ("a=2", false),
            ("a!=2", true),
            ("c", false),
            ("!c", true),
            ("a", true),
            ("", true),
        ] {
            assert_eq!(Selector::parse(s).unwrap().picks(&o), picks, "{s}");
        }
    }

    #[test]
    fn versions_grow_and_a_compacted_history_is_gone() {
        let mut st = Store::new();
        let o = st
            .create(Kind::Job, "ns", json!({"metadata": {"name": "j"}}))
            .unwrap();
        let rv: u64 = o["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        let e = st
            .create(Kind::Job, "ns", json!({"metadata": {"name": "j"}}))
            .unwrap_err();
        assert_eq!(e["code"], 409);
        let key = (Kind::Job, "ns".to_string(), "j".to_string());
        assert!(st.update(&key, |o| o["status"]["active"] = json!(1)));
        assert!(!st.update(&key, |o| o["status"]["active"] = json!(1)));
        assert!(st.rv > rv);
        st.compact();
        assert!(st.oldest > rv);
        assert!(st.events.is_empty());
    }
}
