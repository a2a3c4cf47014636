//! Gathering skills and templates from every location, in precedence order.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use crate::skills::{add_skills, skill_files};
use crate::templates::{load_template_file, template_files};
use crate::{Diagnostic, Origin, PromptTemplate, Skill};

/// Where to look. Built by the caller, which decides trust.
#[derive(Debug, Clone, Default)]
pub struct ResourceOptions {
    /// The working directory (project skills are searched from here up to the git root).
    pub cwd: PathBuf,
    /// The user's home directory (`~/.agents/skills`); `None` skips it.
    pub home: Option<PathBuf>,
    /// The agent directory (`~/.pi/agent`): `skills/`, `prompts/`, and the base of
    /// relative settings entries; `None` skips it.
    pub agent_dir: Option<PathBuf>,
    /// Whether project files may be read (the project is trusted).
    pub project_trusted: bool,
    /// `--skill` paths (files or directories).
    pub cli_skills: Vec<PathBuf>,
    /// `--prompt-template` paths (files or directories).
    pub cli_templates: Vec<PathBuf>,
    /// The settings key `skills`: paths, `!glob` (leave out), `-path` (leave
    /// out), `+path` (load even when left out by another entry).
    pub settings_skills: Vec<String>,
    /// The settings key `prompts`, same forms.
    pub settings_prompts: Vec<String>,
    /// `--no-skills`: only `--skill` paths are loaded.
    pub no_skills: bool,
    /// `--no-prompt-templates`: only `--prompt-template` paths are loaded.
    pub no_templates: bool,
}

/// Everything found, with warnings.
#[derive(Debug, Clone, Default)]
pub struct Resources {
    /// Skills, first name wins: `--skill`, settings, user, project.
    pub skills: Vec<Skill>,
    /// Templates, first name wins, same order.
    pub templates: Vec<PromptTemplate>,
    /// Warnings and errors, each naming a file.
    pub diagnostics: Vec<Diagnostic>,
    /// The working directory, when its project files were not read because
    /// the project is not trusted: a command naming one of them is refused.
    pub withheld_project: Option<PathBuf>,
}

impl Resources {
    /// A warning for each template a command in `taken` (built-in or
    /// extension commands) makes unreachable, naming the file.
    pub fn shadowed_by(&self, taken: &[&str]) -> Vec<Diagnostic> {
        self.templates
            .iter()
            .filter(|t| taken.contains(&t.name.as_str()))
            .map(|t| {
                Diagnostic::warning(
                    &t.file_path,
                    format!(
                        "template \"/{}\" is shadowed by the built-in command of that name",
                        t.name
                    ),
                )
            })
            .collect()
    }

    /// The untrusted project file `/name` would have used, if any:
    /// `.pi/prompts/NAME.md`, or for `skill:NAME` a `NAME/SKILL.md` in
    /// `.pi/skills` or an `.agents/skills` up to the git root.
    pub fn withheld_file(&self, name: &str) -> Option<PathBuf> {
        let cwd = self.withheld_project.as_ref()?;
        let candidates: Vec<PathBuf> = match name.strip_prefix("skill:") {
            Some(skill) if !skill.contains('/') && !skill.is_empty() => {
                let mut c = vec![cwd.join(".pi/skills").join(skill).join("SKILL.md")];
                c.extend(
                    ancestor_agents_dirs(cwd)
                        .into_iter()
                        .map(|d| d.join(skill).join("SKILL.md")),
                );
                c
            }
            Some(_) => Vec::new(),
            None if !name.contains('/') => vec![cwd.join(".pi/prompts").join(format!("{name}.md"))],
            None => Vec::new(),
        };
        candidates.into_iter().find(|p| p.is_file())
    }
}

/// Settings entries split into paths to load and filters.
struct SettingsEntries {
    load: Vec<PathBuf>,
    exclude_globs: GlobSet,
    exclude_paths: Vec<PathBuf>,
    force: Vec<PathBuf>,
}

fn split_settings(
    entries: &[String],
    base: &Path,
    diagnostics: &mut Vec<Diagnostic>,
) -> SettingsEntries {
    let resolve = |p: &str| {
        let p = expand_home(p);
        if p.is_absolute() { p } else { base.join(p) }
    };
    let mut globs = GlobSetBuilder::new();
    let mut out = SettingsEntries {
        load: Vec::new(),
        exclude_globs: GlobSet::empty(),
        exclude_paths: Vec::new(),
        force: Vec::new(),
    };
    for entry in entries {
        if let Some(pattern) = entry.strip_prefix('!') {
            match Glob::new(pattern) {
                Ok(g) => {
                    globs.add(g);
                }
                Err(e) => diagnostics.push(Diagnostic::warning(
                    Path::new(entry),
                    format!("bad pattern: {e}"),
                )),
            }
        } else if let Some(p) = entry.strip_prefix('-') {
            out.exclude_paths.push(resolve(p));
        } else if let Some(p) = entry.strip_prefix('+') {
            out.force.push(resolve(p));
        } else {
            out.load.push(resolve(entry));
        }
    }
    out.exclude_globs = globs.build().unwrap_or_else(|_| GlobSet::empty());
    out.load.extend(out.force.iter().cloned());
    out
}

impl SettingsEntries {
    /// Whether a file is left out by a `!`/`-` entry and not put back by `+`.
    fn excludes(&self, file: &Path, name: &str) -> bool {
        let forced = self.force.iter().any(|p| file.starts_with(p));
        let out = self.exclude_globs.is_match(file)
            || self.exclude_globs.is_match(name)
            || self.exclude_paths.iter().any(|p| file.starts_with(p));
        out && !forced
    }
}

fn expand_home(p: &str) -> PathBuf {
    match (p.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => PathBuf::from(p),
    }
}

/// `.agents/skills` from `cwd` up to the git root, innermost first. Without
/// a git root only `cwd`'s own: the directories above it (`/tmp`, a shared
/// home) are anyone's to write in, and nothing the user trusted.
fn ancestor_agents_dirs(cwd: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in cwd.ancestors() {
        out.push(dir.join(".agents/skills"));
        if dir.join(".git").exists() {
            return out;
        }
    }
    vec![cwd.join(".agents/skills")]
}

/// Skill files at an explicit path: the file itself, or a walk of the directory.
fn explicit_skill_files(path: &Path, diagnostics: &mut Vec<Diagnostic>) -> Vec<PathBuf> {
    if path.is_dir() {
        skill_files(path, true, diagnostics)
    } else if path.exists() {
        vec![path.to_path_buf()]
    } else {
        diagnostics.push(Diagnostic::error(path, "does not exist"));
        Vec::new()
    }
}

fn explicit_template_files(path: &Path, diagnostics: &mut Vec<Diagnostic>) -> Vec<PathBuf> {
    if path.is_dir() {
        template_files(path)
    } else if path.exists() {
        vec![path.to_path_buf()]
    } else {
        diagnostics.push(Diagnostic::error(path, "does not exist"));
        Vec::new()
    }
}

/// Every file a trusted project could contribute as a skill or template:
/// what `.pi/skills`, the `.agents/skills` up to the git root and
/// `.pi/prompts` hold, walked under the same bounds. A trust record pins them,
/// so a changed one makes the project untrusted again.
pub fn project_files(cwd: &Path) -> Vec<PathBuf> {
    let mut ignored = Vec::new();
    let mut files = skill_files(&cwd.join(".pi/skills"), true, &mut ignored);
    for dir in ancestor_agents_dirs(cwd) {
        files.extend(skill_files(&dir, false, &mut ignored));
    }
    files.extend(template_files(&cwd.join(".pi/prompts")));
    files
}

/// Loads skills and templates from every location the options allow.
///
/// Precedence (first name wins, a clash warns naming both files): `--skill`,
/// settings, user, project; the same for templates. Project locations are
/// read only when `project_trusted`.
pub fn load_resources(options: &ResourceOptions) -> Resources {
    let mut res = Resources {
        withheld_project: (!options.project_trusted).then(|| options.cwd.clone()),
        ..Resources::default()
    };
    let diags = &mut res.diagnostics;
    let base = options.agent_dir.clone().unwrap_or_default();

    // Skills.
    let mut seen = HashSet::new();
    let mut groups: Vec<(Origin, Vec<PathBuf>)> = Vec::new();
    let cli: Vec<PathBuf> = options
        .cli_skills
        .iter()
        .flat_map(|p| explicit_skill_files(p, diags))
        .collect();
    groups.push((Origin::Cli, cli));
    let settings = split_settings(&options.settings_skills, &base, diags);
    if !options.no_skills {
        let files = settings
            .load
            .iter()
            .flat_map(|p| explicit_skill_files(p, diags))
            .collect();
        groups.push((Origin::Settings, files));
        let mut user = Vec::new();
        if let Some(agent) = &options.agent_dir {
            user.extend(skill_files(&agent.join("skills"), true, diags));
        }
        if let Some(home) = &options.home {
            user.extend(skill_files(&home.join(".agents/skills"), false, diags));
        }
        groups.push((Origin::User, user));
        if options.project_trusted {
            let mut project = skill_files(&options.cwd.join(".pi/skills"), true, diags);
            for dir in ancestor_agents_dirs(&options.cwd) {
                project.extend(skill_files(&dir, false, diags));
            }
            groups.push((Origin::Project, project));
        }
    }
    for (origin, files) in groups {
        let files = files
            .into_iter()
            .filter(|f| origin == Origin::Cli || !settings.excludes(f, ""))
            .collect();
        add_skills(&mut res.skills, &mut seen, files, origin, diags);
    }
    res.skills
        .retain(|s| s.origin == Origin::Cli || !settings.excludes(&s.file_path, &s.name));

    // Templates.
    let mut groups: Vec<(Origin, Vec<PathBuf>)> = Vec::new();
    let cli = options
        .cli_templates
        .iter()
        .flat_map(|p| explicit_template_files(p, diags))
        .collect();
    groups.push((Origin::Cli, cli));
    let settings = split_settings(&options.settings_prompts, &base, diags);
    if !options.no_templates {
        let files = settings
            .load
            .iter()
            .flat_map(|p| explicit_template_files(p, diags))
            .collect();
        groups.push((Origin::Settings, files));
        if let Some(agent) = &options.agent_dir {
            groups.push((Origin::User, template_files(&agent.join("prompts"))));
        }
        if options.project_trusted {
            groups.push((
                Origin::Project,
                template_files(&options.cwd.join(".pi/prompts")),
            ));
        }
    }
    let mut seen = HashSet::new();
    for (origin, files) in groups {
        for file in files {
            let canonical = std::fs::canonicalize(&file).unwrap_or_else(|_| file.clone());
            if !seen.insert(canonical) {
                continue;
            }
            let Some(t) = load_template_file(&file, origin, diags) else {
                continue;
            };
            if origin != Origin::Cli && settings.excludes(&file, &t.name) {
                continue;
            }
            if let Some(first) = res.templates.iter().find(|x| x.name == t.name) {
                diags.push(Diagnostic::warning(
                    &file,
                    format!(
                        "template \"/{}\" is shadowed by {}",
                        t.name,
                        first.file_path.display()
                    ),
                ));
                continue;
            }
            res.templates.push(t);
        }
    }
    res
}
