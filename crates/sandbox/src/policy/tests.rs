//! The policy's cases: settings layers and what the project may tighten,
//! resolution on this machine, and the environment rules.

use super::*;
use serde_json::json;

fn layers<'a>(global: &'a Value, project: &'a Value) -> SandboxSettings<'a> {
    SandboxSettings {
        user: global.get("sandbox"),
        project: project.get("sandbox"),
    }
}

fn policy(global: Value, project: Value, flag: Option<SandboxMode>) -> SandboxPolicy {
    SandboxPolicy::from_settings(
        layers(&global, &project),
        Path::new("/w/p"),
        flag,
        SandboxMode::Off,
    )
    .unwrap()
}

#[test]
fn a_project_only_tightens() {
    // Cannot turn it off.
    let p = policy(
        json!({"sandbox": {"mode": "workspace-write"}}),
        json!({"sandbox": {"mode": "off", "network": true, "additionalDirectories": ["/"],
               "passEnv": ["AWS_SECRET"], "excludeTmp": false}}),
        None,
    );
    assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
    assert!(!p.network);
    assert_eq!(p.roots, [PathBuf::from("/w/p")]);
    assert!(p.pass_env.is_empty());
    // May turn it on, stricter, narrower, with more deny globs.
    let p = policy(
        json!({}),
        json!({"sandbox": {"mode": "read-only", "roots": ["sub"], "denyRead": ["db/*.sqlite"]}}),
        None,
    );
    assert_eq!(p.mode, SandboxMode::ReadOnly);
    assert_eq!(p.roots, [PathBuf::from("/w/p/sub")]);
    assert!(p.deny_read.contains(&"/w/p/db/*.sqlite".to_string()));
    // The flag stands in for the user's setting, the project still tightens.
    let p = policy(
        json!({"sandbox": {"mode": "read-only"}}),
        json!({}),
        Some(SandboxMode::Off),
    );
    assert_eq!(p.mode, SandboxMode::Off);
    let p = policy(
        json!({}),
        json!({"sandbox": {"mode": "read-only"}}),
        Some(SandboxMode::Off),
    );
    assert_eq!(p.mode, SandboxMode::ReadOnly);
}

#[test]
fn a_spec_travels_as_written_and_resolves_where_it_lands() {
    let (global, project) = (
        json!({"sandbox": {"mode": "read-only", "roots": [".", "../lib"], "denyRead": ["secrets/**", "~/.netrc"],
                           "network": true, "passEnv": ["GH_TOKEN"], "secretEnv": ["CORP_*"], "excludeTmp": true}}),
        json!({"sandbox": {"denyRead": ["db/*.sqlite"]}}),
    );
    let spec = SandboxSpec::from_settings(
        layers(&global, &project),
        Some(SandboxMode::WorkspaceWrite),
        SandboxMode::Off,
    )
    .unwrap();
    // The wire form is JSON with the settings' names, and reads back whole.
    let wire = serde_json::to_value(&spec).unwrap();
    assert_eq!(wire["user"]["mode"], "workspace-write");
    assert_eq!(wire["user"]["denyRead"], json!(["secrets/**", "~/.netrc"]));
    assert_eq!(wire["tightening"][0]["source"], "project");
    let back: SandboxSpec = serde_json::from_value(wire.clone()).unwrap();
    assert_eq!(back, spec);
    // A field this side does not know is refused, not ignored.
    let mut unknown = wire;
    unknown["user"]["allowEverything"] = json!(true);
    assert!(serde_json::from_value::<SandboxSpec>(unknown).is_err());
    // Resolved where it lands: relative paths below that workspace.
    let p = back.resolve(Path::new("/srv/app")).unwrap();
    assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
    assert_eq!(
        p.roots,
        [PathBuf::from("/srv/app"), PathBuf::from("/srv/lib")]
    );
    for glob in ["/srv/app/secrets/**", "/srv/app/db/*.sqlite"] {
        assert!(
            p.deny_read.iter().any(|g| g == glob),
            "{glob}: {:?}",
            p.deny_read
        );
    }
    if let Some(home) = canonical_home() {
        let netrc = format!("{}/.netrc", home.display());
        assert!(p.deny_read.contains(&netrc), "{:?}", p.deny_read);
    }
    assert!(p.network && p.exclude_tmp);
    assert_eq!(p.pass_env, ["GH_TOKEN"]);
    assert!(p.secret_env.iter().any(|s| s == "CORP_*"));
    assert!(p.is_protected(Path::new("/srv/app/.git/config")));
}

#[test]
fn a_later_layer_cannot_widen_the_spec() {
    let mut spec = SandboxSpec::default();
    spec.user.mode = Some(SandboxMode::WorkspaceWrite);
    spec.user.exclude_tmp = Some(true);
    let remote = json!({"mode": "off", "additionalDirectories": ["/"], "network": true,
                        "passEnv": ["AWS_SECRET"], "excludeTmp": false, "denyRead": ["keys/**"]});
    spec.tighten(SandboxLayer::from_value(Some(&remote), "remote settings").unwrap());
    assert_eq!(spec.mode(), SandboxMode::WorkspaceWrite);
    let p = spec.resolve(Path::new("/srv/app")).unwrap();
    assert_eq!(p.mode, SandboxMode::WorkspaceWrite);
    assert_eq!(p.roots, [PathBuf::from("/srv/app")]);
    assert!(!p.network);
    assert!(p.pass_env.is_empty());
    assert!(p.exclude_tmp);
    assert!(p.deny_read.iter().any(|g| g == "/srv/app/keys/**"));
    // A root outside is refused, naming the layer.
    let mut wider = spec.clone();
    let roots = json!({"roots": ["/"]});
    wider.tighten(SandboxLayer::from_value(Some(&roots), "remote settings").unwrap());
    let err = wider.resolve(Path::new("/srv/app")).unwrap_err();
    assert!(err.0.contains("sandbox.roots (remote settings)"), "{err}");
    // An unset mode may be switched on by a later layer, never off.
    let mut off = SandboxSpec::default();
    let on = json!({"mode": "read-only"});
    off.tighten(SandboxLayer::from_value(Some(&on), "remote settings").unwrap());
    assert!(off.is_chosen());
    assert_eq!(
        off.resolve(Path::new("/srv/app")).unwrap().mode,
        SandboxMode::ReadOnly
    );
}

#[test]
fn a_project_root_outside_the_users_is_refused() {
    let (global, project) = (
        json!({"sandbox": {"mode": "workspace-write"}}),
        json!({"sandbox": {"roots": ["/"]}}),
    );
    let settings = layers(&global, &project);
    let err = SandboxPolicy::from_settings(settings, Path::new("/w/p"), None, SandboxMode::Off)
        .unwrap_err();
    assert!(err.0.contains("outside the user's roots"), "{err}");
    // Judged on where a symlink points, not on its name.
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&ws).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, ws.join("escape")).unwrap();
    let (global, project) = (
        json!({"sandbox": {"mode": "workspace-write"}}),
        json!({"sandbox": {"roots": ["escape"]}}),
    );
    let settings = layers(&global, &project);
    let err = SandboxPolicy::from_settings(settings, &ws, None, SandboxMode::Off).unwrap_err();
    assert!(err.0.contains("outside the user's roots"), "{err}");
    let real = std::fs::canonicalize(&ws).unwrap();
    std::fs::create_dir_all(ws.join("sub")).unwrap();
    let (global, project) = (
        json!({"sandbox": {"mode": "workspace-write"}}),
        json!({"sandbox": {"roots": ["sub"], "excludeTmp": true}}),
    );
    let settings = layers(&global, &project);
    let p = SandboxPolicy::from_settings(settings, &ws, None, SandboxMode::Off).unwrap();
    assert_eq!(p.roots, [real.join("sub")]);
    assert!(p.exclude_tmp);
    assert!(p.is_protected(&real.join("sub/.git/config")));
    // The user's root keeps its protected paths after narrowing, and a
    // project root inside one of them is refused.
    assert!(p.is_protected(&real.join(".git/config")));
    std::fs::create_dir_all(ws.join(".git/hooks")).unwrap();
    for root in [".git", ".git/hooks", ".pi", "./.git/../.git"] {
        let (global, project) = (
            json!({"sandbox": {"mode": "workspace-write"}}),
            json!({"sandbox": {"roots": [root]}}),
        );
        let settings = layers(&global, &project);
        let err = SandboxPolicy::from_settings(settings, &ws, None, SandboxMode::Off).unwrap_err();
        assert!(err.0.contains("inside the protected path"), "{root}: {err}");
    }
}

#[test]
fn a_writable_home_is_refused() {
    let Some(home) = canonical_home() else {
        return;
    };
    let (global, project) = (json!({"sandbox": {"mode": "workspace-write"}}), json!({}));
    let settings = layers(&global, &project);
    let err = SandboxPolicy::from_settings(settings, &home, None, SandboxMode::Off).unwrap_err();
    assert!(err.0.contains("home directory"), "{err}");
    let err =
        SandboxPolicy::from_settings(settings, Path::new("/"), None, SandboxMode::Off).unwrap_err();
    assert!(err.0.contains("home directory"), "{err}");
    // A default (the MCP server's) becomes read-only instead.
    let p = SandboxPolicy::from_settings(
        SandboxSettings::default(),
        &home,
        None,
        SandboxMode::WorkspaceWrite,
    )
    .unwrap();
    assert_eq!(p.mode, SandboxMode::ReadOnly);
}

#[test]
fn wrong_shapes_are_errors() {
    let (global, project) = (json!({"sandbox": {"mode": "strict"}}), json!({}));
    let settings = layers(&global, &project);
    let err = SandboxPolicy::from_settings(settings, Path::new("/w"), None, SandboxMode::Off)
        .unwrap_err();
    assert!(err.0.contains("sandbox.mode"), "{err}");
    let (global, project) = (
        json!({"sandbox": {"mode": "read-only", "roots": "/"}}),
        json!({}),
    );
    let settings = layers(&global, &project);
    assert!(
        SandboxPolicy::from_settings(settings, Path::new("/w"), None, SandboxMode::Off).is_err()
    );
}

#[test]
fn secret_patterns_match_whole_names_ignoring_case() {
    let p = policy(
        json!({"sandbox": {"mode": "workspace-write", "secretEnv": ["MY_PRIVATE_*", "*internal*", "A?B", "x[1]", "**_Q"],
                           "passEnv": ["MY_PRIVATE_OK"]}}),
        json!({"sandbox": {"secretEnv": ["CORP_*_ID"]}}),
        None,
    );
    let env = p.env_filter();
    for hidden in [
        "MY_PRIVATE_THING",
        "my_private_",
        "My_Private_X/Y",
        "INTERNAL",
        "THE_INTERNAL_HOST",
        "A?B",
        "a?b",
        "X[1]",
        "_Q",
        "RUN_Q",
        "CORP_EU_ID",
        "corp__id",
    ] {
        assert!(env.hides_env(hidden), "{hidden}");
        assert_eq!(p.hides_env(hidden), env.hides_env(hidden), "{hidden}");
    }
    for kept in [
        "MY_PRIVATE_OK",
        "MY_PRIVATE",
        "XMY_PRIVATE_THING",
        "AXB",
        "X1",
        "Q",
        "CORP_ID",
        "CORP_EU_IDS",
        "PATH",
    ] {
        assert!(!env.hides_env(kept), "{kept}");
        assert_eq!(p.hides_env(kept), env.hides_env(kept), "{kept}");
    }
}

#[test]
fn secret_patterns_that_do_not_compile_hide_everything() {
    // Past globset's regex size limit.
    let huge = "a*".repeat(400_000);
    let (global, project) = (
        json!({"sandbox": {"mode": "read-only", "secretEnv": [huge.clone()]}}),
        json!({}),
    );
    let resolved = SandboxPolicy::from_settings(
        layers(&global, &project),
        Path::new("/w"),
        None,
        SandboxMode::Off,
    );
    let Err(err) = resolved else {
        panic!("a pattern past the size limit was accepted");
    };
    assert!(err.0.contains("sandbox.secretEnv"), "{}", &err.0[..100]);
    let mut p = SandboxPolicy::new(SandboxMode::WorkspaceWrite, "/w");
    p.secret_env.push(huge);
    p.pass_env.push("HOME".into());
    assert!(p.hides_var("PATH", "/usr/bin"));
    assert!(!p.hides_var("HOME", "/root"));
}
