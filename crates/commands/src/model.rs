//! `/model` and `/thinking`.

use coding_agent::AgentSession;
use coding_agent::agent_ai::ThinkingLevel;

use crate::Commands;

/// `/model`: the current model and the ones to switch to;
/// `/model PROVIDER/ID` (or `ID` of the current provider) switches.
pub(crate) fn model(
    commands: &Commands,
    session: &AgentSession,
    rest: &str,
) -> Result<String, String> {
    let current = session.agent().model();
    if rest.is_empty() {
        let mut out = format!("current: {}/{}", current.provider, current.id);
        if commands.models.is_empty() {
            out.push_str("\n(/model PROVIDER/ID switches)");
        }
        for m in &commands.models {
            let mark = if m.provider == current.provider && m.id == current.id {
                "*"
            } else {
                " "
            };
            out.push_str(&format!("\n{mark} {}/{}", m.provider, m.id));
        }
        return Ok(out);
    }
    let (provider, id) = match rest.split_once('/') {
        Some((p, id)) if !p.is_empty() && !id.is_empty() => (p.to_string(), id.to_string()),
        _ => (current.provider.clone(), rest.to_string()),
    };
    let model = coding_agent::switch_model(
        session,
        &commands.models,
        commands.resolve_model.as_ref(),
        &provider,
        &id,
    )?;
    Ok(format!("model: {}/{}", model.provider, model.id))
}

/// `/thinking`: the level; `/thinking LEVEL` sets it (clamped to what the
/// model supports, as the session does).
pub(crate) fn thinking(session: &AgentSession, rest: &str) -> Result<String, String> {
    if rest.is_empty() {
        return Ok(format!(
            "thinking: {} (off, minimal, low, medium, high, xhigh)",
            session.thinking_level()
        ));
    }
    let level: ThinkingLevel = rest.parse().map_err(|_| {
        format!("unknown thinking level {rest:?} (off, minimal, low, medium, high, xhigh)")
    })?;
    let set = session.set_thinking_level(level);
    if set == level {
        Ok(format!("thinking: {set}"))
    } else {
        Ok(format!(
            "thinking: {set} (the model does not support {level})"
        ))
    }
}
