//! A repository's name on its forge, read from the URL of a git remote.

/// `OWNER/NAME` (or a GitLab `group/subgroup/project`) from a remote URL:
/// `git@github.com:o/r.git`, `https://github.com/o/r`, `ssh://git@host/o/r.git`, or a
/// local path, whose last two components are taken.
pub fn repo_from_url(url: &str) -> Option<String> {
    let url = url.trim().trim_end_matches('/');
    let url = url.strip_suffix(".git").unwrap_or(url);
    let path = if let Some(rest) = url.split_once("://").map(|(_, r)| r) {
        // scheme://[user@]host[:port]/path
        rest.split_once('/').map(|(_, p)| p)?
    } else if let Some((host, path)) = url.split_once(':')
        && !host.contains('/')
    {
        // user@host:path
        path
    } else {
        url
    };
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if parts.len() < 2 {
        return None;
    }
    let take = if url.contains("://") || url.contains('@') {
        parts.len()
    } else {
        2
    };
    Some(parts[parts.len() - take..].join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_from_every_kind_of_remote() {
        assert_eq!(
            repo_from_url("git@github.com:octo/hello.git").as_deref(),
            Some("octo/hello")
        );
        assert_eq!(
            repo_from_url("https://github.com/octo/hello").as_deref(),
            Some("octo/hello")
        );
        assert_eq!(
            repo_from_url("ssh://git@gitlab.example.com:2222/group/sub/proj.git").as_deref(),
            Some("group/sub/proj")
        );
        assert_eq!(
            repo_from_url("/srv/git/octo/hello.git").as_deref(),
            Some("octo/hello")
        );
        assert_eq!(repo_from_url("hello"), None);
    }
}
