//! Issue 33's targets for skills and templates: discovery of 200 skills
//! (target ≤ 20 ms) and expanding a 4 KiB template (target ≤ 50 µs).
//! Figures only, no assertions: `cargo bench -p agent-skills`.

use std::time::{Duration, Instant};

use agent_skills::{Expansion, ResourceOptions, expand_input, load_resources};

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn main() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let agent = dir.path().join("agent");
    for i in 0..200 {
        let skill = agent.join(format!("skills/group-{}/skill-{i}", i % 10));
        std::fs::create_dir_all(&skill).expect("a skill directory");
        std::fs::write(
            skill.join("SKILL.md"),
            format!("---\nname: skill-{i}\ndescription: Skill number {i}, for benchmarks.\n---\n\nBody.\n"),
        )
        .expect("a SKILL.md");
    }
    let line = "Check $1 against ${2:-main}, then ${@:3}; all: $ARGUMENTS.\n";
    let template = line.repeat(4096 / line.len() + 1);
    std::fs::create_dir_all(agent.join("prompts")).expect("a prompts directory");
    std::fs::write(agent.join("prompts/big.md"), &template).expect("a template");
    let options = ResourceOptions {
        cwd: dir.path().to_path_buf(),
        agent_dir: Some(agent),
        ..Default::default()
    };

    let runs: Vec<Duration> = (0..30)
        .map(|_| {
            let start = Instant::now();
            let res = load_resources(&options);
            let took = start.elapsed();
            assert_eq!(res.skills.len(), 200);
            took
        })
        .collect();
    println!(
        "discovery of 200 skills: median {:?} (target ≤ 20 ms)",
        median(runs)
    );

    let res = load_resources(&options);
    let input = "/big src/lib.rs release a b c \"d e\"";
    let runs: Vec<Duration> = (0..2_000)
        .map(|_| {
            let start = Instant::now();
            let out = expand_input(input, &res, &[]);
            let took = start.elapsed();
            assert!(matches!(out, Ok(Expansion::Template(_))));
            took
        })
        .collect();
    println!(
        "expanding a {} byte template: median {:?} (target ≤ 50 µs)",
        template.len(),
        median(runs)
    );
}
