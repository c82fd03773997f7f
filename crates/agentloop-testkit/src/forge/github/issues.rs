//! The mock GitHub's issues: the tracker side (list, open, close, label, comment an
//! issue). A pull request's labels and comments are the pull requests' routes.

use serde_json::{Value, json};

use super::{MockIssue, Shared, State, error, next_number};
use crate::forge::Reply;
use crate::forge::{page, reply};

/// The answer to an issue's route, if it is one.
pub(super) fn answer(
    sh: &Shared,
    st: &mut State,
    method: &str,
    parts: &[&str],
    body: &Value,
    q: &dyn Fn(&str) -> Option<String>,
) -> Option<Reply> {
    let number = |s: &str| s.parse::<u64>().ok();
    let base_url = format!("/repos/{}", sh.repo);
    // An issue's labels or comments (a pull request's are the pull requests' routes).
    let issue = match parts {
        ["issues", n, _] => number(n).and_then(|n| st.issues.iter().position(|i| i.number == n)),
        _ => None,
    };
    Some(match (method, parts, issue) {
        ("GET", ["issues"], _) => {
            let label = q("labels");
            let mut items: Vec<(u64, Value)> = st
                .issues
                .iter()
                .filter(|i| i.open)
                .filter(|i| label.as_ref().is_none_or(|l| i.labels.contains(l)))
                .map(|i| (i.number, json!({"number": i.number, "title": i.title, "body": i.body, "state": "open",
                    "html_url": format!("https://github.invalid/{}/issues/{}", sh.repo, i.number),
                    "labels": i.labels.iter().map(|l| json!({"name": l})).collect::<Vec<_>>()})))
                .collect();
            // The issues list has the open pull requests too.
            items.extend(st.prs.iter().filter(|p| p.open && label.is_none()).map(|p| {
                (p.number, json!({"number": p.number, "title": p.title, "body": p.body, "state": "open",
                    "pull_request": {"url": format!("https://github.invalid/{}/pull/{}", sh.repo, p.number)}}))
            }));
            items.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
            page(
                items.into_iter().map(|(_, v)| v).collect(),
                &q,
                &format!("{base_url}/issues"),
            )
        }
        ("POST", ["issues"], _) => {
            let Some(title) = body
                .get("title")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
            else {
                return Some(error(422, "Validation Failed"));
            };
            let number = next_number(st);
            let issue = MockIssue {
                number,
                title: title.into(),
                body: body
                    .get("body")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                labels: Vec::new(),
                open: true,
                state_reason: None,
                comments: Vec::new(),
            };
            let v = json!({"number": number, "title": issue.title, "body": issue.body, "state": "open",
                "html_url": format!("https://github.invalid/{}/issues/{}", sh.repo, number)});
            st.issues.push(issue);
            reply(201, v)
        }
        ("PATCH", ["issues", n], _) => {
            match st.issues.iter_mut().find(|i| Some(i.number) == number(n)) {
                Some(i) => {
                    if body["state"].as_str() == Some("closed") {
                        i.open = false;
                        i.state_reason = body["state_reason"].as_str().map(String::from);
                    }
                    reply(
                        200,
                        json!({"number": i.number, "state": if i.open { "open" } else { "closed" }}),
                    )
                }
                None => error(404, "Not Found"),
            }
        }
        ("POST", ["issues", _, "labels"], Some(at)) => {
            let i = &mut st.issues[at];
            for l in body["labels"].as_array().into_iter().flatten() {
                let l = l.as_str().unwrap_or_default().to_string();
                if !i.labels.contains(&l) {
                    i.labels.push(l);
                }
            }
            reply(
                200,
                json!(
                    i.labels
                        .iter()
                        .map(|l| json!({"name": l}))
                        .collect::<Vec<_>>()
                ),
            )
        }
        ("POST", ["issues", _, "comments"], Some(at)) => {
            let i = &mut st.issues[at];
            i.comments
                .push(body["body"].as_str().unwrap_or_default().to_string());
            reply(201, json!({"id": i.comments.len(), "body": body["body"]}))
        }
        _ => return None,
    })
}
