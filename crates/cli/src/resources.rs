//! Skills and prompt templates for a run: flags, settings and trust decide
//! where [`agent_skills::load_resources`] looks.

use std::path::Path;

use coding_agent::Settings;
use coding_agent::agent_skills::{self, ResourceOptions, Resources};

use crate::args::RunArgs;

/// A settings array of strings (`skills`, `prompts`); anything else is none.
fn strings(settings: &Settings, key: &str) -> Vec<String> {
    settings
        .get(key)
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// Loads them and reports every diagnostic on stderr, naming the file.
pub fn load(args: &RunArgs, settings: &Settings, cwd: &Path, trusted: bool) -> Resources {
    let (resources, diagnostics) = load_quietly(args, settings, cwd, trusted);
    for d in diagnostics {
        eprintln!("coding-agent: {d}");
    }
    resources
}

/// Loads them; the diagnostics are returned as lines (`warning: ...`,
/// `error: ...`), sanitized for a terminal.
pub fn load_quietly(
    args: &RunArgs,
    settings: &Settings,
    cwd: &Path,
    trusted: bool,
) -> (Resources, Vec<String>) {
    let options = ResourceOptions {
        cwd: cwd.to_path_buf(),
        home: std::env::home_dir(),
        agent_dir: coding_agent::agent_dir(),
        project_trusted: trusted,
        cli_skills: args.skills.clone(),
        cli_templates: args.prompt_templates.clone(),
        settings_skills: strings(settings, "skills"),
        settings_prompts: strings(settings, "prompts"),
        no_skills: args.no_skills,
        no_templates: args.no_prompt_templates,
    };
    let resources = agent_skills::load_resources(&options);
    let shadowed = resources.shadowed_by(coding_agent::BUILTIN_COMMANDS);
    let diagnostics = resources
        .diagnostics
        .iter()
        .chain(&shadowed)
        .map(|d| {
            let kind = if d.is_error { "error" } else { "warning" };
            // Names and messages come from the files (a skill's name, a
            // YAML error quoting its text): shown, never interpreted.
            format!(
                "{kind}: {}",
                coding_agent::sanitize_terminal_text(&d.to_string())
            )
        })
        .collect();
    (resources, diagnostics)
}
