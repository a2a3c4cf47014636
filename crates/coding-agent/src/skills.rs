//! Skills and prompt templates in a session: which tool loads a skill file,
//! and the one command precedence every mode uses.

use std::sync::Arc;

use agent_skills::{Expansion, Resources, SkillReader};
use agent_tool::ToolDefinition;

use crate::AgentSession;

/// The commands built into coding-agent, in every mode. A template or skill
/// with one of these names is never expanded (built-in > extension >
/// `/skill:` > template).
pub const BUILTIN_COMMANDS: &[&str] = &[
    "help",
    "new",
    "resume",
    "tree",
    "fork",
    "name",
    "compact",
    "exit",
    "quit",
    "model",
    "settings",
    "session",
    "reload",
    "export",
    "share",
    "copy",
    "login",
    "logout",
    "hotkeys",
    "changelog",
    "scoped-models",
    "debug",
    "clone",
    "import",
    "thinking",
    "trust",
];

/// The tool the model uses to load a skill's file, found from what tools
/// declare (no tool is named here): the first active tool whose only
/// required argument is `path`, else the first whose required arguments
/// include `command`.
pub(crate) fn skill_reader(active: &[ToolDefinition]) -> Option<SkillReader> {
    let required = |d: &ToolDefinition| -> Vec<String> {
        d.parameters()
            .get("required")
            .and_then(|r| r.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    if let Some(d) = active.iter().find(|d| required(d) == ["path"]) {
        return Some(SkillReader::ReadTool(d.name().to_string()));
    }
    active
        .iter()
        .find(|d| required(d).iter().any(|r| r == "command"))
        .map(|d| SkillReader::Shell(d.name().to_string()))
}

/// `text` with a skill or template command expanded.
pub(crate) fn expand(text: &str, resources: &Resources) -> Result<String, agent_skills::Error> {
    Ok(
        match agent_skills::expand_input(text, resources, BUILTIN_COMMANDS)? {
            Expansion::Unchanged => text.to_string(),
            Expansion::Skill(t) | Expansion::Template(t) => t,
        },
    )
}

impl AgentSession {
    /// Expands `/skill:name args` and `/template args` into the text to
    /// send, the same in every mode; built-in command names
    /// ([`crate::BUILTIN_COMMANDS`]) are never expanded. Other text is
    /// returned as given.
    ///
    /// # Errors
    /// The skill file cannot be read, the expansion is over 1 MiB, or the
    /// command names an untrusted project file.
    pub fn expand_input(&self, text: &str) -> Result<String, agent_skills::Error> {
        let resources = self.resources();
        expand(text, &resources)
    }

    /// The `/` commands this session's prompt templates and skills add,
    /// as `(name without the slash, description)`: what a completion menu
    /// offers beside the built-in commands.
    pub fn prompt_commands(&self) -> Vec<(String, String)> {
        agent_skills::list_commands(&self.resources(), BUILTIN_COMMANDS)
            .into_iter()
            .map(|c| (c.name, c.description))
            .collect()
    }

    /// The skills and prompt templates this session was given.
    pub fn resources(&self) -> Arc<agent_skills::Resources> {
        self.lock().resources.clone()
    }

    /// Replaces the skills and prompt templates (`/reload`): the next
    /// request's system prompt lists the new skills, and expansion uses
    /// the new templates. The conversation is kept.
    pub fn set_resources(&self, resources: agent_skills::Resources) {
        self.lock().resources = Arc::new(resources);
        self.refresh();
    }
}
