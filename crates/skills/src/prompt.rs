//! The system prompt's skills block, within a budget.

use crate::Skill;

/// How the model can load a skill's file; it picks the block's second line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillReader {
    /// A file-reading tool, by name: "Use the read tool to load ...".
    ReadTool(String),
    /// A shell tool, by name: "Use bash to load ...".
    Shell(String),
    /// A reader exists but is not declared: "Load a skill's file ...".
    Hidden,
}

/// The characters the skills block may take: 2% of the context window's
/// tokens at four characters a token, or 8,000 characters when unknown.
///
/// ```
/// assert_eq!(agent_skills::budget_chars(Some(200_000)), 16_000);
/// assert_eq!(agent_skills::budget_chars(None), 8_000);
/// ```
pub fn budget_chars(context_window: Option<u64>) -> usize {
    match context_window {
        Some(tokens) if tokens > 0 => usize::try_from(tokens / 50 * 4).unwrap_or(usize::MAX),
        _ => 8_000,
    }
}

fn escape_xml(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

fn shorten(s: &str, max: Option<usize>) -> String {
    match max {
        Some(max) if s.chars().count() > max => {
            let mut out: String = s.chars().take(max).collect();
            out.push_str("...");
            out
        }
        _ => s.to_string(),
    }
}

fn render(skills: &[&Skill], reader: &SkillReader, max_description: Option<usize>) -> String {
    let how = match reader {
        SkillReader::ReadTool(name) => {
            format!(
                "Use the {name} tool to load a skill's file when the task matches its description."
            )
        }
        SkillReader::Shell(name) => {
            format!("Use {name} to load a skill's file when the task matches its description.")
        }
        SkillReader::Hidden => "Load a skill's file when the task matches its description.".into(),
    };
    let mut lines = vec![
        "<skills>".to_string(),
        "The following skills provide specialized instructions for specific tasks.".into(),
        how,
        "Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.".into(),
        String::new(),
        "<available_skills>".into(),
    ];
    for skill in skills {
        lines.push("  <skill>".into());
        lines.push(format!("    <name>{}</name>", escape_xml(&skill.name)));
        let description = shorten(&skill.description, max_description);
        lines.push(format!(
            "    <description>{}</description>",
            escape_xml(&description)
        ));
        lines.push(format!(
            "    <location>{}</location>",
            escape_xml(&skill.file_path.to_string_lossy())
        ));
        lines.push("  </skill>".into());
    }
    lines.push("</available_skills>".into());
    lines.push("</skills>".into());
    lines.join("\n")
}

/// The skills block Pi puts after the project context, and warnings.
///
/// Skills marked `disable-model-invocation` are left out; no visible skill or
/// no reader gives an empty string. When the block is over `budget` characters,
/// descriptions are shortened first (to 200, 100, 50 characters), then skills
/// are left out from the end, and each step is reported in the warnings.
///
/// ```
/// use agent_skills::{Origin, Skill, SkillReader, skills_prompt};
/// let skill = Skill {
///     name: "pdf".into(),
///     description: "Read PDFs".into(),
///     file_path: "/s/pdf/SKILL.md".into(),
///     base_dir: "/s/pdf".into(),
///     disable_model_invocation: false,
///     allowed_tools: vec![],
///     origin: Origin::User,
///     body: None,
/// };
/// let (block, warnings) = skills_prompt(&[skill], Some(&SkillReader::ReadTool("read".into())), 8_000);
/// assert!(block.contains("    <name>pdf</name>\n    <description>Read PDFs</description>"));
/// assert!(warnings.is_empty());
/// ```
pub fn skills_prompt(
    skills: &[Skill],
    reader: Option<&SkillReader>,
    budget: usize,
) -> (String, Vec<String>) {
    let mut warnings = Vec::new();
    let Some(reader) = reader else {
        return (String::new(), warnings);
    };
    let mut visible: Vec<&Skill> = skills
        .iter()
        .filter(|s| !s.disable_model_invocation)
        .collect();
    if visible.is_empty() {
        return (String::new(), warnings);
    }
    let full = render(&visible, reader, None);
    if full.len() <= budget {
        return (full, warnings);
    }
    for max in [200, 100, 50] {
        let text = render(&visible, reader, Some(max));
        if text.len() <= budget {
            warnings.push(format!(
                "skills list over its budget of {budget} characters: descriptions shortened to {max} characters"
            ));
            return (text, warnings);
        }
    }
    let mut dropped = Vec::new();
    while let Some(last) = visible.pop() {
        dropped.push(last.name.clone());
        if visible.is_empty() {
            break;
        }
        let text = render(&visible, reader, Some(50));
        if text.len() <= budget {
            dropped.reverse();
            warnings.push(format!(
                "skills list over its budget of {budget} characters: descriptions shortened to 50 characters, skills left out: {}",
                dropped.join(", ")
            ));
            return (text, warnings);
        }
    }
    dropped.reverse();
    warnings.push(format!(
        "skills list over its budget of {budget} characters: no skill listed (left out: {})",
        dropped.join(", ")
    ));
    (String::new(), warnings)
}
