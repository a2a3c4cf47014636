//! Turning `/name args` into the text sent, with one precedence everywhere.

use crate::args::is_js_space;
use crate::{
    Error, Origin, PromptTemplate, Resources, parse_command_args, skill_message, substitute_args,
};

/// What kind of command a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommandSource {
    /// An extension's command.
    Extension,
    /// A prompt template (`source: "prompt"` on the wire, as Pi).
    Prompt,
    /// A skill (`/skill:name`).
    Skill,
}

impl CommandSource {
    /// Pi's wire name: `extension`, `prompt`, `skill`.
    pub fn as_str(self) -> &'static str {
        match self {
            CommandSource::Extension => "extension",
            CommandSource::Prompt => "prompt",
            CommandSource::Skill => "skill",
        }
    }
}

/// One command for a listing (RPC `get_commands`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// The name without the slash (`review`, `skill:pdf`).
    pub name: String,
    /// Its description.
    pub description: String,
    /// What it is.
    pub source: CommandSource,
    /// The file it comes from.
    pub path: std::path::PathBuf,
    /// Where the file was found.
    pub origin: Origin,
    /// A template's `argument-hint`.
    pub argument_hint: Option<String>,
}

/// The templates, then the skills, as commands. Templates whose name is in
/// `taken` (built-in and extension commands) are left out: they cannot be reached.
pub fn list_commands(resources: &Resources, taken: &[&str]) -> Vec<CommandInfo> {
    let templates = resources
        .templates
        .iter()
        .filter(|t| !taken.contains(&t.name.as_str()))
        .map(|t| CommandInfo {
            name: t.name.clone(),
            description: t.description.clone(),
            source: CommandSource::Prompt,
            path: t.file_path.clone(),
            origin: t.origin,
            argument_hint: t.argument_hint.clone(),
        });
    let skills = resources.skills.iter().map(|s| CommandInfo {
        name: format!("skill:{}", s.name),
        description: s.description.clone(),
        source: CommandSource::Skill,
        path: s.file_path.clone(),
        origin: s.origin,
        argument_hint: None,
    });
    templates.chain(skills).collect()
}

/// What [`expand_input`] made of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expansion {
    /// Not a skill or template: send as typed (or run it, if `taken` named it).
    Unchanged,
    /// `/skill:name args`: the skill block.
    Skill(String),
    /// `/name args`: the template, substituted.
    Template(String),
}

/// The command name and arguments of `/name args` (Pi's `^/(\S+)(?:\s+(.*))?$`).
fn split_command(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('/')?;
    let end = rest.find(is_js_space).unwrap_or(rest.len());
    let (name, tail) = rest.split_at(end);
    if name.is_empty() {
        return None;
    }
    Some((name, tail.trim_start_matches(is_js_space)))
}

/// Expands a user line: a name in `taken` (built-in or extension commands,
/// which the caller runs) wins; then `/skill:name args`; then a template.
/// Anything else is [`Expansion::Unchanged`], except a name that only an
/// untrusted project file has: that is [`Error::UntrustedProjectFile`].
///
/// ```
/// use agent_skills::{Expansion, Resources, expand_input};
/// let res = Resources::default();
/// assert_eq!(expand_input("/nothing here", &res, &["compact"]).unwrap(), Expansion::Unchanged);
/// ```
pub fn expand_input(text: &str, resources: &Resources, taken: &[&str]) -> Result<Expansion, Error> {
    let Some((name, args)) = split_command(text) else {
        return Ok(Expansion::Unchanged);
    };
    if taken.contains(&name) {
        return Ok(Expansion::Unchanged);
    }
    if let Some(skill_name) = name.strip_prefix("skill:") {
        let Some(skill) = resources.skills.iter().find(|s| s.name == skill_name) else {
            return withheld(resources, name);
        };
        // Pi: the arguments are everything after the first space, trimmed.
        let args = text.find(' ').map(|i| text[i + 1..].trim()).unwrap_or("");
        return skill_message(skill, args).map(Expansion::Skill);
    }
    let Some(template) = resources.templates.iter().find(|t| t.name == name) else {
        return withheld(resources, name);
    };
    expand_template(template, args).map(Expansion::Template)
}

/// Unchanged, unless the name belongs to an untrusted project file.
fn withheld(resources: &Resources, name: &str) -> Result<Expansion, Error> {
    match resources.withheld_file(name) {
        Some(path) => Err(Error::UntrustedProjectFile(path)),
        None => Ok(Expansion::Unchanged),
    }
}

fn expand_template(template: &PromptTemplate, args: &str) -> Result<String, Error> {
    substitute_args(&template.content, &parse_command_args(args))
}

#[cfg(test)]
#[path = "commands_tests.rs"]
mod tests;
