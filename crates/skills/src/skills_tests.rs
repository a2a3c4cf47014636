use std::path::Path;

use super::*;
use crate::{ResourceOptions, load_resources};

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill(dir: &Path, name: &str, description: &str) -> PathBuf {
    let path = dir.join(name).join("SKILL.md");
    write(
        &path,
        &format!("---\nname: {name}\ndescription: {description}\n---\n\nBody of {name}.\n"),
    );
    path
}

#[test]
fn skill_root_stops_recursion_and_dot_dirs_are_skipped() {
    let root = tempfile::tempdir().unwrap();
    skill(root.path(), "a", "A");
    skill(&root.path().join("a"), "inner", "never found");
    skill(&root.path().join(".hidden"), "h", "H");
    skill(&root.path().join("node_modules"), "n", "N");
    skill(&root.path().join("group"), "b", "B");
    write(&root.path().join(".gitignore"), "ignored/\n");
    skill(&root.path().join("ignored"), "i", "I");
    let mut d = Vec::new();
    let files = skill_files(root.path(), true, &mut d);
    let names: Vec<_> = files
        .iter()
        .map(|f| f.parent().unwrap().file_name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["a", "b"]);
}

#[test]
fn frontmatter_problems_are_warnings_naming_the_file() {
    let root = tempfile::tempdir().unwrap();
    let cases = [
        ("unclosed", "---\nname: unclosed\ndescription: x\n"),
        ("colon", "---\ndescription: a: b\n---\n"),
        ("nodesc", "---\nname: nodesc\n---\nbody"),
    ];
    for (dir, text) in cases {
        write(&root.path().join(dir).join("SKILL.md"), text);
    }
    let mut d = Vec::new();
    let files = skill_files(root.path(), true, &mut d);
    for f in &files {
        assert!(load_skill_file(f, Origin::User, &mut d).is_none());
    }
    assert_eq!(d.len(), 3);
    for (dir, _) in cases {
        assert!(
            d.iter()
                .any(|x| x.path == root.path().join(dir).join("SKILL.md")),
            "{dir}: {d:?}"
        );
    }
}

#[test]
fn a_readme_without_description_is_ignored_silently() {
    let root = tempfile::tempdir().unwrap();
    write(&root.path().join("group/README.md"), "# readme\n");
    let mut d = Vec::new();
    let files = skill_files(root.path(), false, &mut d);
    assert_eq!(files.len(), 1);
    assert!(load_skill_file(&files[0], Origin::User, &mut d).is_none());
    assert!(d.is_empty());
}

#[test]
fn name_rules_warn_but_load() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("Bad--Name-/SKILL.md");
    write(
        &path,
        "---\ndescription: d\nallowed-tools: Bash(git:*) Read\ndisable-model-invocation: true\n---\n",
    );
    let mut d = Vec::new();
    let s = load_skill_file(&path, Origin::User, &mut d).unwrap();
    assert_eq!(s.name, "Bad--Name-");
    assert_eq!(s.allowed_tools, ["Bash(git:*)", "Read"]);
    assert!(s.disable_model_invocation);
    assert_eq!(d.len(), 3, "{d:?}");
}

#[test]
fn huge_sparse_skill_is_refused_without_reading_it() {
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("big/SKILL.md");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(1 << 30).unwrap();
    let mut d = Vec::new();
    assert!(load_skill_file(&path, Origin::User, &mut d).is_none());
    assert!(d[0].message.contains("256 KiB"), "{d:?}");
}

#[cfg(unix)]
#[test]
fn fifo_named_skill_md_does_not_hang() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("fifo");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("SKILL.md");
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo only creates a node.
    #[allow(unsafe_code)]
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0);
    let mut d = Vec::new();
    let files = skill_files(root.path(), true, &mut d);
    for f in files {
        assert!(load_skill_file(&f, Origin::User, &mut d).is_none());
    }
    // Whether or not the walk lists it, nothing is loaded and nothing blocks.
    assert!(d.iter().all(|x| x.path == path));
}

#[cfg(unix)]
#[test]
fn symlink_loop_and_duplicate_links_are_cut() {
    let root = tempfile::tempdir().unwrap();
    skill(root.path(), "a", "A");
    std::os::unix::fs::symlink(root.path(), root.path().join("loop")).unwrap();
    std::os::unix::fs::symlink(root.path().join("a"), root.path().join("again")).unwrap();
    let opts = ResourceOptions {
        cli_skills: vec![root.path().to_path_buf()],
        no_skills: true,
        ..Default::default()
    };
    let res = load_resources(&opts);
    assert_eq!(res.skills.len(), 1, "{:?}", res.skills);
    assert!(res.diagnostics.is_empty(), "{:?}", res.diagnostics);
}

#[test]
fn many_directories_stop_at_the_bound_with_a_warning() {
    let root = tempfile::tempdir().unwrap();
    for i in 0..(MAX_DIRS_PER_ROOT + 50) {
        std::fs::create_dir_all(root.path().join(format!("d{i:05}"))).unwrap();
    }
    let mut d = Vec::new();
    skill_files(root.path(), true, &mut d);
    assert_eq!(d.len(), 1);
    assert!(d[0].message.contains("2000 directories"));
}

#[test]
fn depth_is_bounded() {
    let root = tempfile::tempdir().unwrap();
    let deep = root.path().join("1/2/3/4/5/6/7");
    skill(&deep, "deep", "D");
    skill(&root.path().join("1/2/3/4"), "ok", "O");
    let mut d = Vec::new();
    let files = skill_files(root.path(), true, &mut d);
    assert_eq!(files.len(), 1);
    assert!(files[0].ends_with("ok/SKILL.md"));
}

#[test]
fn first_name_wins_in_order_cli_settings_user_project() {
    let home = tempfile::tempdir().unwrap();
    let agent = home.path().join(".pi/agent");
    let cwd = tempfile::tempdir().unwrap();
    std::fs::create_dir(cwd.path().join(".git")).unwrap();
    let user = skill(&agent.join("skills"), "dup", "user");
    let project = skill(&cwd.path().join(".pi/skills"), "dup", "project");
    skill(&cwd.path().join(".agents/skills/group"), "proj-only", "P");
    let cli_dir = tempfile::tempdir().unwrap();
    let cli = skill(cli_dir.path(), "dup", "cli");
    let mut opts = ResourceOptions {
        cwd: cwd.path().to_path_buf(),
        home: Some(home.path().to_path_buf()),
        agent_dir: Some(agent.clone()),
        project_trusted: true,
        ..Default::default()
    };
    let res = load_resources(&opts);
    let dup = res.skills.iter().find(|s| s.name == "dup").unwrap();
    assert_eq!(dup.file_path, user);
    assert!(
        res.diagnostics
            .iter()
            .any(|d| d.path == project && d.message.contains(&user.display().to_string()))
    );
    assert!(res.skills.iter().any(|s| s.name == "proj-only"));

    opts.cli_skills = vec![cli.clone()];
    let res = load_resources(&opts);
    assert_eq!(
        res.skills
            .iter()
            .find(|s| s.name == "dup")
            .unwrap()
            .file_path,
        cli
    );

    opts.project_trusted = false;
    let res = load_resources(&opts);
    assert!(!res.skills.iter().any(|s| s.origin == Origin::Project));

    opts.no_skills = true;
    let res = load_resources(&opts);
    assert_eq!(res.skills.len(), 1);
}

#[test]
fn settings_forms() {
    let home = tempfile::tempdir().unwrap();
    let agent = home.path().join(".pi/agent");
    skill(&agent.join("skills"), "keep", "K");
    skill(&agent.join("skills"), "drop", "D");
    skill(&agent.join("skills"), "back", "B");
    let extra = skill(&agent.join("extra"), "extra", "E");
    let opts = ResourceOptions {
        agent_dir: Some(agent.clone()),
        settings_skills: vec!["extra".into(), "!**/drop/**".into(), "-skills/back".into()],
        ..Default::default()
    };
    let res = load_resources(&opts);
    let names: Vec<_> = res.skills.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["extra", "keep"]);
    assert_eq!(res.skills[0].file_path, extra);
    let mut opts = opts;
    opts.settings_skills.push("+skills/back".into());
    let res = load_resources(&opts);
    assert!(res.skills.iter().any(|s| s.name == "back"));
}

#[test]
fn missing_cli_path_is_an_error() {
    let opts = ResourceOptions {
        cli_skills: vec!["/nonexistent/skill".into()],
        ..Default::default()
    };
    let res = load_resources(&opts);
    assert!(res.diagnostics[0].is_error);
}

#[test]
fn a_project_skill_changed_after_loading_is_sent_as_loaded() {
    let root = tempfile::tempdir().unwrap();
    let path = skill(root.path(), "deploy", "Deploy");
    let mut d = Vec::new();
    let project = load_skill_file(&path, Origin::Project, &mut d).unwrap();
    let user = load_skill_file(&path, Origin::User, &mut d).unwrap();
    // A command the model ran rewrites the file during the session.
    write(
        &path,
        "---\ndescription: Deploy\n---\nCHANGED AFTER TRUST\n",
    );
    let sent = skill_message(&project, "").unwrap();
    assert!(
        sent.contains("Body of deploy.") && !sent.contains("CHANGED"),
        "{sent}"
    );
    // The user's own skills are read at use, as in Pi.
    assert!(
        skill_message(&user, "")
            .unwrap()
            .contains("CHANGED AFTER TRUST")
    );
}

#[test]
fn skill_message_is_pis_block() {
    let root = tempfile::tempdir().unwrap();
    let path = skill(root.path(), "pdf", "PDF");
    let mut d = Vec::new();
    let s = load_skill_file(&path, Origin::User, &mut d).unwrap();
    let dir = path.parent().unwrap().display().to_string();
    let expected = format!(
        "<skill name=\"pdf\" location=\"{}\">\nReferences are relative to {dir}.\n\nBody of pdf.\n</skill>",
        path.display()
    );
    assert_eq!(skill_message(&s, "").unwrap(), expected);
    assert_eq!(
        skill_message(&s, "x y").unwrap(),
        format!("{expected}\n\nx y")
    );
}

fn listed(name: &str, description: &str) -> Skill {
    Skill {
        name: name.into(),
        description: description.into(),
        file_path: PathBuf::from(format!("/s/{name}/SKILL.md")),
        base_dir: PathBuf::from(format!("/s/{name}")),
        disable_model_invocation: false,
        allowed_tools: vec![],
        origin: Origin::User,
        body: None,
    }
}

#[test]
fn the_budget_shortens_descriptions_then_leaves_skills_out() {
    use crate::{SkillReader, skills_prompt};
    let reader = SkillReader::ReadTool("read".into());
    let skills: Vec<Skill> = (0..10)
        .map(|i| listed(&format!("s{i}"), &"d".repeat(300)))
        .collect();
    let (full, w) = skills_prompt(&skills, Some(&reader), usize::MAX);
    assert!(w.is_empty());
    // Room for 200-character descriptions only.
    let (short, w) = skills_prompt(&skills, Some(&reader), full.len() - 10 * 90);
    assert!(short.contains(&format!(
        "<description>{}...</description>",
        "d".repeat(200)
    )));
    assert!(w[0].contains("shortened to 200"), "{w:?}");
    // Not even 50-character descriptions for all: the last skills go.
    let (cut, w) = skills_prompt(&skills, Some(&reader), 1_500);
    assert!(
        cut.len() <= 1_500 && cut.contains("<name>s0</name>") && !cut.contains("<name>s9</name>")
    );
    assert!(w[0].contains("left out: ") && w[0].contains("s9"), "{w:?}");
    // No reader, or nothing visible: no block.
    assert_eq!(skills_prompt(&skills, None, usize::MAX).0, "");
    let hidden = Skill {
        disable_model_invocation: true,
        ..listed("h", "d")
    };
    assert_eq!(skills_prompt(&[hidden], Some(&reader), usize::MAX).0, "");
}

#[test]
fn outside_a_git_repository_only_the_working_directorys_agents_skills_count() {
    let root = tempfile::tempdir().unwrap();
    let project = root.path().join("a").join("project");
    std::fs::create_dir_all(&project).unwrap();
    // Planted above the project, where anyone may write (`/tmp`).
    skill(&root.path().join("a/.agents/skills"), "planted", "Planted");
    skill(&project.join(".agents/skills"), "own", "Own");
    let opts = crate::ResourceOptions {
        cwd: project.clone(),
        project_trusted: true,
        ..Default::default()
    };
    let names: Vec<String> = crate::load_resources(&opts)
        .skills
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert!(names.contains(&"own".to_string()), "{names:?}");
    assert!(!names.contains(&"planted".to_string()), "{names:?}");
    // Inside a repository, the way up to its root counts.
    std::fs::create_dir_all(root.path().join("a/.git")).unwrap();
    let names: Vec<String> = crate::load_resources(&opts)
        .skills
        .iter()
        .map(|s| s.name.clone())
        .collect();
    assert!(names.contains(&"planted".to_string()), "{names:?}");
}
