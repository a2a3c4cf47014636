use std::path::Path;

use crate::{
    Error, Expansion, Origin, ResourceOptions, expand_input, list_commands, load_resources,
};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn project() -> (tempfile::TempDir, tempfile::TempDir, ResourceOptions) {
    let home = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(cwd.path().join(".git")).unwrap();
    let agent = home.path().join(".pi/agent");
    write(
        &agent.join("prompts/review.md"),
        "---\ndescription: user review\n---\nReview $1 then ${@:2}",
    );
    write(
        &cwd.path().join(".pi/prompts/review.md"),
        "project review $@",
    );
    write(&cwd.path().join(".pi/prompts/compact.md"), "not reachable");
    write(
        &cwd.path().join(".pi/prompts/deploy.md"),
        "Deploy ${1:-staging}",
    );
    write(
        &cwd.path().join(".pi/skills/lint/SKILL.md"),
        "---\ndescription: Lint things\n---\nRun the linter.",
    );
    let opts = ResourceOptions {
        cwd: cwd.path().to_path_buf(),
        home: Some(home.path().to_path_buf()),
        agent_dir: Some(agent),
        project_trusted: true,
        ..Default::default()
    };
    (home, cwd, opts)
}

#[test]
fn precedence_builtin_extension_skill_template() {
    let (_h, _c, opts) = project();
    let res = load_resources(&opts);
    let taken = ["compact", "model"];
    assert_eq!(
        expand_input("/compact now", &res, &taken).unwrap(),
        Expansion::Unchanged
    );
    assert_eq!(
        expand_input("/review a.rs b c", &res, &taken).unwrap(),
        Expansion::Template("Review a.rs then b c".into())
    );
    assert_eq!(
        expand_input("/deploy", &res, &taken).unwrap(),
        Expansion::Template("Deploy staging".into())
    );
    match expand_input("/skill:lint  src ", &res, &taken).unwrap() {
        Expansion::Skill(text) => {
            assert!(text.contains("Run the linter.\n</skill>\n\nsrc"), "{text}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        expand_input("/unknown x", &res, &taken).unwrap(),
        Expansion::Unchanged
    );
    assert_eq!(
        expand_input("plain text", &res, &taken).unwrap(),
        Expansion::Unchanged
    );
    // The project's review.md is shadowed by the user's, and said so.
    assert!(
        res.diagnostics
            .iter()
            .any(|d| d.message.contains("\"/review\" is shadowed"))
    );
    let shadowed = res.shadowed_by(&taken);
    assert_eq!(shadowed.len(), 1);
    assert!(shadowed[0].path.ends_with(".pi/prompts/compact.md"));
    let commands = list_commands(&res, &taken);
    let names: Vec<_> = commands.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["review", "deploy", "skill:lint"]);
    assert_eq!(commands[0].origin, Origin::User);
}

#[test]
fn untrusted_project_commands_are_refused_naming_the_file() {
    let (_h, cwd, mut opts) = project();
    opts.project_trusted = false;
    let res = load_resources(&opts);
    match expand_input("/deploy prod", &res, &[]) {
        Err(Error::UntrustedProjectFile(p)) => {
            assert_eq!(p, cwd.path().join(".pi/prompts/deploy.md"))
        }
        other => panic!("{other:?}"),
    }
    let err = expand_input("/skill:lint", &res, &[]).unwrap_err();
    assert!(err.to_string().contains("coding-agent trust"), "{err}");
    // The user's own template still works.
    assert!(matches!(
        expand_input("/review x", &res, &[]),
        Ok(Expansion::Template(_))
    ));
}

#[test]
fn expanded_template_is_capped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.md");
    write(&path, &"$@".repeat(100_000));
    let opts = ResourceOptions {
        cli_templates: vec![path],
        ..Default::default()
    };
    let res = load_resources(&opts);
    let long = "y".repeat(20);
    assert!(matches!(
        expand_input(&format!("/big {long}"), &res, &[]),
        Err(Error::ExpansionTooLarge(_))
    ));
}
