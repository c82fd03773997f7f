use super::*;

/// A home with a CLI's settings, a login, past sessions and a large file.
fn home() -> tempfile::TempDir {
    let h = tempfile::tempdir().unwrap();
    let q = h.path().join(".qwen");
    std::fs::create_dir_all(q.join("projects/p")).unwrap();
    std::fs::write(q.join("settings.json"), r#"{"model":"mine"}"#).unwrap();
    std::fs::write(q.join("oauth_creds.json"), r#"{"access_token":"old"}"#).unwrap();
    std::fs::write(q.join("projects/p/chat.jsonl"), "past\n").unwrap();
    std::fs::write(h.path().join(".claude.json"), "{}").unwrap();
    h
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn copy_of<'a>(homes: &'a Homes, real: &Path) -> &'a Path {
    &homes.binds.iter().find(|(_, r)| r == real).unwrap().0
}

/// What an agent writes in its copy stays there; the copy goes with the value.
#[test]
fn writes_in_the_copies_never_reach_the_home() {
    let h = home();
    let base = h.path().join(".local/state/agentloop/homes");
    let homes = Homes::make(h.path(), &base).unwrap();
    let q = copy_of(&homes, &h.path().join(".qwen")).to_path_buf();
    assert_eq!(
        std::fs::read_to_string(q.join("settings.json")).unwrap(),
        r#"{"model":"mine"}"#
    );
    assert!(!q.join("projects").exists(), "past sessions are not copied");
    std::fs::write(q.join("settings.json"), r#"{"hooks":{}}"#).unwrap();
    std::fs::create_dir_all(q.join("commands")).unwrap();
    std::fs::write(q.join("commands/x.md"), "planted").unwrap();
    let file = copy_of(&homes, &h.path().join(".claude.json")).to_path_buf();
    std::fs::write(&file, r#"{"mcpServers":{}}"#).unwrap();
    let dir = homes.dir.clone();
    drop(homes);
    assert!(!dir.exists());
    let real = h.path().join(".qwen");
    assert_eq!(
        std::fs::read_to_string(real.join("settings.json")).unwrap(),
        r#"{"model":"mine"}"#
    );
    assert!(!real.join("commands").exists());
    assert_eq!(
        std::fs::read_to_string(h.path().join(".claude.json")).unwrap(),
        "{}"
    );
}

/// A login refreshed in the copy goes back, only its owner's to read; not when it is
/// no longer a credentials file, nor over one refreshed meanwhile by someone else.
#[test]
fn a_refreshed_login_goes_back_and_nothing_else() {
    use std::os::unix::fs::PermissionsExt;
    let h = home();
    let base = h.path().join("homes");
    let real = h.path().join(".qwen/oauth_creds.json");
    let homes = Homes::make(h.path(), &base).unwrap();
    let q = copy_of(&homes, &h.path().join(".qwen")).to_path_buf();
    std::fs::write(q.join("oauth_creds.json"), r#"{"access_token":"new"}"#).unwrap();
    drop(homes);
    assert_eq!(json(&real), serde_json::json!({"access_token": "new"}));
    let mode = std::fs::metadata(&real).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let homes = Homes::make(h.path(), &base).unwrap();
    let q = copy_of(&homes, &h.path().join(".qwen")).to_path_buf();
    std::fs::write(q.join("oauth_creds.json"), "not json").unwrap();
    drop(homes);
    assert_eq!(json(&real), serde_json::json!({"access_token": "new"}));

    let homes = Homes::make(h.path(), &base).unwrap();
    let q = copy_of(&homes, &h.path().join(".qwen")).to_path_buf();
    std::fs::write(q.join("oauth_creds.json"), r#"{"access_token":"mine"}"#).unwrap();
    std::fs::write(&real, r#"{"access_token":"theirs"}"#).unwrap();
    drop(homes);
    assert_eq!(
        std::fs::read_to_string(&real).unwrap(),
        r#"{"access_token":"theirs"}"#
    );
}

/// Past the budget a file is not copied but seen read-only (a placeholder in the
/// copy for it); a FIFO is left out, never opened.
#[test]
fn what_the_budget_cannot_hold_is_seen_read_only() {
    let h = home();
    let q = h.path().join(".qwen");
    std::fs::write(q.join("big.bin"), vec![0u8; 4096]).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(q.join("fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    let homes = Homes::make_within(h.path(), &h.path().join("homes"), 1024, &[]).unwrap();
    assert_eq!(homes.read_only, vec![q.join("big.bin")]);
    let copy = copy_of(&homes, &q);
    assert_eq!(std::fs::metadata(copy.join("big.bin")).unwrap().len(), 0);
    assert!(!copy.join("fifo").exists());
}

/// The copies a killed driver left are removed by the next; a live process's stay.
#[test]
fn a_dead_processs_copies_are_swept() {
    let h = home();
    let base = h.path().join("homes");
    // A pid no process has: above the kernel's largest.
    let dead = base.join("4194305-0");
    std::fs::create_dir_all(dead.join("0")).unwrap();
    let live = base.join("1-0");
    std::fs::create_dir_all(&live).unwrap();
    let homes = Homes::make(h.path(), &base).unwrap();
    assert!(!dead.exists());
    assert!(live.exists());
    drop(homes);
}

/// Cline keeps each provider's endpoint beside its login: a refreshed login goes
/// back, a changed endpoint does not.
#[test]
fn clines_providers_go_back_only_with_new_logins() {
    let h = tempfile::tempdir().unwrap();
    let dir = h.path().join(".cline/data/settings");
    std::fs::create_dir_all(&dir).unwrap();
    let real = dir.join("providers.json");
    let was = r#"{"openai":{"baseUrl":"https://api.example","auth":{"token":"old"}}}"#;
    std::fs::write(&real, was).unwrap();
    let write = |text: &str| {
        let homes = Homes::make(h.path(), &h.path().join("homes")).unwrap();
        let copy = copy_of(&homes, &h.path().join(".cline")).join("data/settings/providers.json");
        std::fs::write(copy, text).unwrap();
    };
    write(r#"{"openai":{"baseUrl":"http://evil","auth":{"token":"old"}}}"#);
    assert_eq!(std::fs::read_to_string(&real).unwrap(), was);
    let refreshed = r#"{"openai":{"baseUrl":"https://api.example","auth":{"token":"new"}}}"#;
    write(refreshed);
    assert_eq!(
        json(&real),
        serde_json::from_str::<serde_json::Value>(refreshed).unwrap()
    );
}

/// A link the agent put where a credentials file (or a directory on its way) was is
/// not followed: a secret of the person's it cannot read never lands in a file it
/// can.
#[test]
fn a_link_in_the_copy_is_not_followed_back() {
    let h = tempfile::tempdir().unwrap();
    let secret = h.path().join("secret.json");
    std::fs::write(&secret, r#"{"accessToken":"SECRET"}"#).unwrap();
    let claude = h.path().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join(".credentials.json"), r#"{"accessToken":"old"}"#).unwrap();
    let cline = h.path().join(".cline/data/settings");
    std::fs::create_dir_all(&cline).unwrap();
    std::fs::write(
        cline.join("providers.json"),
        r#"{"auth":{"accessToken":"old"}}"#,
    )
    .unwrap();
    let homes = Homes::make(h.path(), &h.path().join("homes")).unwrap();
    let f = copy_of(&homes, &claude).join(".credentials.json");
    std::fs::remove_file(&f).unwrap();
    std::os::unix::fs::symlink(&secret, &f).unwrap();
    let data = copy_of(&homes, &h.path().join(".cline")).join("data");
    std::fs::remove_dir_all(&data).unwrap();
    std::fs::create_dir_all(h.path().join("elsewhere/settings")).unwrap();
    std::fs::write(
        h.path().join("elsewhere/settings/providers.json"),
        r#"{"auth":{"accessToken":"SECRET"}}"#,
    )
    .unwrap();
    std::os::unix::fs::symlink(h.path().join("elsewhere"), &data).unwrap();
    drop(homes);
    assert_eq!(
        std::fs::read_to_string(claude.join(".credentials.json")).unwrap(),
        r#"{"accessToken":"old"}"#
    );
    assert_eq!(
        std::fs::read_to_string(cline.join("providers.json")).unwrap(),
        r#"{"auth":{"accessToken":"old"}}"#
    );
}

/// Only tokens change in a login taken back: not an account's key, not an endpoint,
/// not a new entry (OpenCode's `wellknown` sets a variable), not a `wellknown`'s value.
#[test]
fn only_tokens_go_back() {
    let ok = |was: &str, now: &str| plausible(was.as_bytes(), now.as_bytes()).is_some();
    assert!(ok(
        r#"{"claudeAiOauth":{"accessToken":"a","refreshToken":"r","expiresAt":1,"scopes":["x"]}}"#,
        r#"{"claudeAiOauth":{"accessToken":"b","refreshToken":"s","expiresAt":2,"scopes":["x"]}}"#
    ));
    assert!(ok(
        r#"{"tokens":{"access_token":"a","account_id":"me"},"last_refresh":"t1"}"#,
        r#"{"tokens":{"access_token":"b","account_id":"me"},"last_refresh":"t2"}"#
    ));
    assert!(!ok(
        r#"{"tokens":{"access_token":"a","account_id":"me"}}"#,
        r#"{"tokens":{"access_token":"b","account_id":"them"}}"#
    ));
    assert!(!ok(
        r#"{"OPENAI_API_KEY":null,"tokens":{}}"#,
        r#"{"OPENAI_API_KEY":"sk-theirs","tokens":{}}"#
    ));
    assert!(!ok(
        r#"{"anthropic":{"type":"oauth","access":"a","refresh":"r"}}"#,
        r#"{"anthropic":{"type":"oauth","access":"a","refresh":"r"},"https://x":{"type":"wellknown","key":"NODE_OPTIONS","token":"--require=/x"}}"#
    ));
    assert!(!ok(
        r#"{"https://x":{"type":"wellknown","key":"K","token":"a"}}"#,
        r#"{"https://x":{"type":"wellknown","key":"K","token":"b"}}"#
    ));
    assert!(!ok(
        r#"{"openai":{"baseUrl":"https://a"}}"#,
        r#"{"openai":{"baseUrl":"http://evil"}}"#
    ));
    assert!(!ok(
        r#"{"accessToken":"a"}"#,
        r#"{"accessToken":{"nested":"x"}}"#
    ));
    assert!(!ok(r#"{"accessToken":"a"}"#, "not json"));
    assert!(!ok(r#"["a"]"#, r#"["b"]"#));
    // An endpoint named with "token" is no token.
    assert!(!ok(
        r#"[{"serverName":"s","token":{"accessToken":"a"},"tokenUrl":"https://a"}]"#,
        r#"[{"serverName":"s","token":{"accessToken":"a"},"tokenUrl":"https://evil"}]"#
    ));
    assert!(ok(
        r#"[{"serverName":"s","token":{"accessToken":"a"},"tokenUrl":"https://a"}]"#,
        r#"[{"serverName":"s","token":{"accessToken":"b"},"tokenUrl":"https://a"}]"#
    ));
    // A new member, even one named for a token; a type changed; a member twice.
    assert!(!ok(
        r#"{"a":{"accessToken":"x"}}"#,
        r#"{"a":{"accessToken":"x","tokenEndpoint":"e"}}"#
    ));
    assert!(!ok(
        r#"{"accessToken":"x"}"#,
        r#"{"accessToken":"x","refreshToken":"y"}"#
    ));
    assert!(!ok(r#"{"expiresAt":1}"#, r#"{"expiresAt":"never"}"#));
    assert!(!ok(r#"{"id_token":"a"}"#, r#"{"id_token":null}"#));
    assert!(!ok(
        r#"{"OPENAI_API_KEY":null,"access_token":"a"}"#,
        r#"{"OPENAI_API_KEY":"sk-evil","OPENAI_API_KEY":null,"access_token":"b"}"#
    ));
    // What goes back is the parsed value, written anew.
    let back = plausible(br#"{"access_token":"a"}"#, b"{\"access_token\":\"b\"}   ").unwrap();
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&back).unwrap(),
        serde_json::json!({"access_token": "b"})
    );
}

/// A directory the agent locked in its copy is removed all the same.
#[test]
fn a_locked_directory_in_the_copy_goes_too() {
    use std::os::unix::fs::PermissionsExt;
    let h = home();
    let homes = Homes::make(h.path(), &h.path().join("homes")).unwrap();
    let q = copy_of(&homes, &h.path().join(".qwen")).to_path_buf();
    std::fs::create_dir_all(q.join("locked/inner")).unwrap();
    std::fs::write(q.join("locked/inner/big"), "x").unwrap();
    std::fs::set_permissions(q.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let dir = homes.dir.clone();
    drop(homes);
    assert!(!dir.exists());
}

/// A large tree (plugins, installed packages) is not copied but seen read-only; the
/// small files beside it are copied.
#[test]
fn a_large_tree_is_seen_read_only() {
    let h = home();
    let plugins = h.path().join(".qwen/plugins/p");
    std::fs::create_dir_all(&plugins).unwrap();
    for i in 0..=TREE_FILES {
        std::fs::write(plugins.join(format!("f{i}.js")), "x").unwrap();
    }
    let homes = Homes::make(h.path(), &h.path().join("homes")).unwrap();
    assert_eq!(homes.read_only, vec![h.path().join(".qwen/plugins")]);
    let copy = copy_of(&homes, &h.path().join(".qwen"));
    assert!(copy.join("plugins").is_dir());
    assert!(!copy.join("plugins/p").exists());
    assert!(copy.join("settings.json").is_file());
}

/// A CLI's directory that its environment puts outside the home (`CODEX_HOME`) is a
/// private copy too, its past sessions left out; one inside a copied directory is
/// not copied twice.
#[test]
fn a_directory_the_environment_names_is_a_copy_too() {
    let h = home();
    let elsewhere = tempfile::tempdir().unwrap();
    let codex = elsewhere.path().join("codex-home");
    std::fs::create_dir_all(codex.join("sessions")).unwrap();
    std::fs::write(codex.join("config.toml"), "model = \"mine\"\n").unwrap();
    let base = h.path().join(".local/state/agentloop/homes");
    let more = [
        (codex.clone(), ".codex"),
        (h.path().join(".qwen/inside"), ".qwen"),
    ];
    let homes = Homes::make_with(h.path(), &base, &more).unwrap();
    let copy = copy_of(&homes, &codex).to_path_buf();
    assert!(copy.join("config.toml").is_file());
    assert!(!copy.join("sessions").exists());
    std::fs::write(copy.join("config.toml"), "model = \"theirs\"\n").unwrap();
    assert!(!homes.binds.iter().any(|(_, r)| r.ends_with("inside")));
    drop(homes);
    assert_eq!(
        std::fs::read_to_string(codex.join("config.toml")).unwrap(),
        "model = \"mine\"\n"
    );
}

/// A login refreshed in the copy of a CLI directory the environment names
/// (`CODEX_HOME`) goes back there, as `~/.codex/auth.json` would; the home's own
/// `.codex`, if any, is not touched.
#[test]
fn a_refreshed_login_in_a_directory_the_environment_names_goes_back_there() {
    let h = home();
    let elsewhere = tempfile::tempdir().unwrap();
    let codex = elsewhere.path().join("codex-home");
    std::fs::create_dir_all(&codex).unwrap();
    let was = r#"{"tokens":{"access_token":"old","refresh_token":"r"},"last_refresh":"1"}"#;
    std::fs::write(codex.join("auth.json"), was).unwrap();
    std::fs::create_dir_all(h.path().join(".codex")).unwrap();
    std::fs::write(h.path().join(".codex/auth.json"), was).unwrap();
    let base = h.path().join(".local/state/agentloop/homes");
    let homes = Homes::make_with(h.path(), &base, &[(codex.clone(), ".codex")]).unwrap();
    let copy = copy_of(&homes, &codex).to_path_buf();
    let now = r#"{"tokens":{"access_token":"new","refresh_token":"r2"},"last_refresh":"2"}"#;
    std::fs::write(copy.join("auth.json"), now).unwrap();
    drop(homes);
    assert_eq!(
        json(&codex.join("auth.json")),
        serde_json::from_str::<serde_json::Value>(now).unwrap()
    );
    assert_eq!(
        std::fs::read_to_string(h.path().join(".codex/auth.json")).unwrap(),
        was
    );
}
