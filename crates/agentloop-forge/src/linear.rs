//! Linear's GraphQL API as an issue tracker: a team's issues (every page), comments,
//! and moving an issue to the team's workflow state of a type (started, completed,
//! canceled). A personal API key goes in `Authorization` as it is.

use serde_json::{Value, json};

use crate::ForgeError;
use crate::http::{Client, check};
use crate::tracker::{Issue, IssueState, Tracker};

pub const API: &str = "https://api.linear.app";

pub struct Linear {
    client: Client,
    /// The team's key (`ENG`).
    team: String,
}

impl Linear {
    pub fn new(api_url: &str, team: &str, key: &str) -> Linear {
        Linear {
            client: Client::new(api_url, key, Vec::new()).bare_token(),
            team: team.to_string(),
        }
    }

    /// One GraphQL request: its `data`, or the errors it answered with.
    fn query(&self, query: &str, variables: Value) -> Result<Value, ForgeError> {
        let a = self.client.send(
            "POST",
            "/graphql",
            Some(&json!({"query": query, "variables": variables})),
        )?;
        if let Some(errors) = a.body.get("errors").and_then(Value::as_array) {
            let message = errors
                .iter()
                .filter_map(|e| e.get("message").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("; ");
            return Err(ForgeError::Refused {
                what: "Linear GraphQL".into(),
                status: a.status,
                message,
            });
        }
        check(&a, "POST", "/graphql")?;
        Ok(a.body.get("data").cloned().unwrap_or(Value::Null))
    }

    /// The issue's id and its team's id, from its identifier (`ENG-12`).
    fn ids(&self, key: &str) -> Result<(String, String), ForgeError> {
        let d = self.query(
            "query Issue($id: String!) { issue(id: $id) { id team { id } } }",
            json!({ "id": key }),
        )?;
        let s = |p: &str| d.pointer(p).and_then(Value::as_str).map(String::from);
        match (s("/issue/id"), s("/issue/team/id")) {
            (Some(i), Some(t)) => Ok((i, t)),
            _ => Err(ForgeError::Unexpected(format!("Linear has no issue {key}"))),
        }
    }
}

impl Tracker for Linear {
    fn issues(&self, state: &str) -> Result<Vec<Issue>, ForgeError> {
        let filter = if state.is_empty() {
            json!({"team": {"key": {"eq": self.team}}, "state": {"type": {"nin": ["completed", "canceled"]}}})
        } else {
            json!({"team": {"key": {"eq": self.team}}, "state": {"name": {"eq": state}}})
        };
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..100 {
            let d = self.query(
                "query Issues($filter: IssueFilter, $after: String) { issues(first: 50, after: $after, filter: $filter) { nodes { identifier title description url } pageInfo { hasNextPage endCursor } } }",
                json!({"filter": filter, "after": after}),
            )?;
            for n in d
                .pointer("/issues/nodes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let s = |k: &str| {
                    n.get(k)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string()
                };
                out.push(Issue {
                    key: s("identifier"),
                    title: s("title"),
                    body: s("description"),
                    url: s("url"),
                });
            }
            let more = d
                .pointer("/issues/pageInfo/hasNextPage")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            after = d
                .pointer("/issues/pageInfo/endCursor")
                .and_then(Value::as_str)
                .map(String::from);
            if !more || after.is_none() {
                break;
            }
        }
        Ok(out)
    }

    fn create(&self, title: &str, body: &str) -> Result<Issue, ForgeError> {
        let d = self.query(
            "query Team($key: String!) { teams(filter: {key: {eq: $key}}) { nodes { id } } }",
            json!({ "key": self.team }),
        )?;
        let team = d
            .pointer("/teams/nodes/0/id")
            .and_then(Value::as_str)
            .ok_or_else(|| ForgeError::Unexpected(format!("Linear has no team {}", self.team)))?
            .to_string();
        let d = self.query(
            "mutation Create($team: String!, $title: String!, $body: String) { issueCreate(input: {teamId: $team, title: $title, description: $body}) { success issue { identifier url } } }",
            json!({ "team": team, "title": title, "body": body }),
        )?;
        let s = |p: &str| d.pointer(p).and_then(Value::as_str).map(String::from);
        Ok(Issue {
            key: s("/issueCreate/issue/identifier")
                .ok_or_else(|| ForgeError::Unexpected(format!("Linear made no issue: {d}")))?,
            title: title.to_string(),
            body: body.to_string(),
            url: s("/issueCreate/issue/url").unwrap_or_default(),
        })
    }

    fn comment(&self, key: &str, body: &str) -> Result<(), ForgeError> {
        let (id, _) = self.ids(key)?;
        self.query(
            "mutation Comment($id: String!, $body: String!) { commentCreate(input: {issueId: $id, body: $body}) { success } }",
            json!({"id": id, "body": body}),
        )
        .map(drop)
    }

    fn set_state(&self, key: &str, state: IssueState) -> Result<(), ForgeError> {
        // Linear has no blocked state: the comment says it, the issue stays started.
        let kind = match state {
            IssueState::Started | IssueState::Blocked => "started",
            IssueState::Done => "completed",
            IssueState::Skipped => "canceled",
        };
        let (id, team) = self.ids(key)?;
        let d = self.query(
            "query States($team: ID!) { workflowStates(filter: {team: {id: {eq: $team}}}) { nodes { id name type position } } }",
            json!({ "team": team }),
        )?;
        let Some(state_id) = d
            .pointer("/workflowStates/nodes")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|n| n.get("type").and_then(Value::as_str) == Some(kind))
            .min_by(|a, b| {
                let p = |n: &Value| n.get("position").and_then(Value::as_f64).unwrap_or(0.0);
                p(a).total_cmp(&p(b))
            })
            .and_then(|n| n.get("id").and_then(Value::as_str))
            .map(String::from)
        else {
            return Err(ForgeError::Unexpected(format!(
                "the team of {key} has no workflow state of type {kind}"
            )));
        };
        self.query(
            "mutation Move($id: String!, $state: String!) { issueUpdate(id: $id, input: {stateId: $state}) { success } }",
            json!({"id": id, "state": state_id}),
        )
        .map(drop)
    }
}
