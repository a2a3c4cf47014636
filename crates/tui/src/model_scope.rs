//! The models Ctrl+P cycles through when a scope is set: Pi's
//! `enabledModels` setting or its `--models` flag, a list of patterns
//! resolved against the models the session can switch to.
//!
//! A pattern is `provider/id` or an id (any case), else a text found in
//! ids and names (the alias before a dated id, then the latest id), or a
//! glob (`*`, `?`, `[...]`, any case) matched against `provider/id` and
//! the bare id; each may end in `:level` (`sonnet:high`) to pin the
//! thinking level the model gets when Ctrl+P reaches it. Models keep the
//! order of the patterns that found them. A pattern that finds nothing,
//! or an id several providers have, is a warning.
//!
//! ```
//! use agent_ai::{Model, ThinkingLevel};
//! use agent_tui::model_scope::{next_in_scope, resolve_scope};
//! let models = [Model::new("a", "fast-1"), Model::new("a", "big-2"), Model::new("b", "big-3")];
//! let scope = resolve_scope(&["b/*".into(), "fast:low".into()], &models);
//! let ids: Vec<&str> = scope.models.iter().map(|s| s.model.id.as_str()).collect();
//! assert_eq!(ids, ["big-3", "fast-1"]);
//! let next = next_in_scope(&scope.models, &Model::new("b", "big-3"), true).unwrap();
//! assert_eq!((next.model.id.as_str(), next.thinking), ("fast-1", Some(ThinkingLevel::Low)));
//! ```

use agent_ai::{Model, ThinkingLevel};
use globset::GlobBuilder;

/// A model of the scope, with the thinking level its pattern pinned.
#[derive(Debug, Clone, PartialEq)]
pub struct ScopedModel {
    /// The model.
    pub model: Model,
    /// The level it is switched to with (`None`: the session's level).
    pub thinking: Option<ThinkingLevel>,
}

/// Patterns resolved: the models, in order, and what did not resolve.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelScope {
    /// The models Ctrl+P cycles through, each once.
    pub models: Vec<ScopedModel>,
    /// One line for each pattern that found nothing or found an id of
    /// several providers, or had a `:suffix` that is no level.
    pub warnings: Vec<String>,
}

/// `patterns` resolved against `models` (see the module's documentation).
pub fn resolve_scope(patterns: &[String], models: &[Model]) -> ModelScope {
    let mut scope = ModelScope::default();
    for pattern in patterns.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        let (base, thinking) = match split_level(pattern) {
            Some((base, level)) => (base, Some(level)),
            None => (pattern, None),
        };
        let mut found = if base.contains(['*', '?', '[']) {
            // An id such as `model[1m]` is an id, not a glob.
            let exact = exact_matches(base, models);
            if exact.is_empty() {
                glob_matches(base, models)
            } else {
                exact
            }
        } else {
            let mut found = reference(base, models);
            if found.is_empty() && thinking.is_none() {
                // `id:nonsense`: the id without the suffix, with a warning.
                if let Some((id, suffix)) = pattern.rsplit_once(':') {
                    found = reference(id, models);
                    if !found.is_empty() {
                        scope.warnings.push(format!(
                            "model pattern {pattern:?}: {suffix:?} is no thinking level; ignored"
                        ));
                    }
                }
            }
            found
        };
        if found.is_empty() {
            scope
                .warnings
                .push(format!("no models match the pattern {pattern:?}"));
            continue;
        }
        let providers: std::collections::BTreeSet<&str> =
            found.iter().map(|m| m.provider.as_str()).collect();
        if !base.contains(['*', '?', '[']) && providers.len() > 1 {
            let names: Vec<&str> = providers.into_iter().collect();
            scope.warnings.push(format!(
                "model pattern {pattern:?} matches several providers ({}); use provider/id to pick one",
                names.join(", ")
            ));
        }
        for model in found.drain(..) {
            let same =
                |s: &ScopedModel| s.model.provider == model.provider && s.model.id == model.id;
            if !scope.models.iter().any(same) {
                scope.models.push(ScopedModel {
                    model: model.clone(),
                    thinking,
                });
            }
        }
    }
    scope
}

/// The model after (or before) `current` in `scope`, as Pi cycles: from
/// outside the scope to its first (or last) model; `None` when the scope
/// is empty or holds only `current`.
pub fn next_in_scope(scope: &[ScopedModel], current: &Model, forward: bool) -> Option<ScopedModel> {
    let n = scope.len();
    let at = scope
        .iter()
        .position(|s| s.model.provider == current.provider && s.model.id == current.id);
    let next = match at {
        _ if n == 0 => return None,
        None if forward => 0,
        None => n - 1,
        Some(_) if n == 1 => return None,
        Some(i) if forward => (i + 1) % n,
        Some(i) => (i + n - 1) % n,
    };
    scope.get(next).cloned()
}

/// `text:level` split, when the suffix is a thinking level.
fn split_level(text: &str) -> Option<(&str, ThinkingLevel)> {
    let (base, suffix) = text.rsplit_once(':')?;
    let level = suffix.parse().ok()?;
    (!base.is_empty()).then_some((base, level))
}

/// `provider/id` or a bare id, any case.
fn exact_matches<'a>(text: &str, models: &'a [Model]) -> Vec<&'a Model> {
    let text = text.to_lowercase();
    let named: Vec<&Model> = models
        .iter()
        .filter(|m| format!("{}/{}", m.provider, m.id).to_lowercase() == text)
        .collect();
    if !named.is_empty() {
        return named;
    }
    models
        .iter()
        .filter(|m| m.id.to_lowercase() == text)
        .collect()
}

/// An exact reference, else (within the provider the text names, if it
/// names one) the best of the models whose id or name holds the text.
fn reference<'a>(text: &str, models: &'a [Model]) -> Vec<&'a Model> {
    let exact = exact_matches(text, models);
    if !exact.is_empty() {
        return exact;
    }
    let lower = text.to_lowercase();
    // The longest provider the text starts with (`provider/...`), and the
    // rest of the text.
    let named = models
        .iter()
        .filter_map(|m| {
            let rest = lower
                .strip_prefix(&m.provider.to_lowercase())?
                .strip_prefix('/')?;
            (!rest.is_empty()).then_some((m.provider.as_str(), rest))
        })
        .max_by_key(|(p, _)| p.len());
    let (pool, needle): (Vec<&Model>, &str) = match named {
        Some((p, rest)) => (models.iter().filter(|m| m.provider == p).collect(), rest),
        None => (models.iter().collect(), lower.as_str()),
    };
    let hits: Vec<&Model> = pool
        .into_iter()
        .filter(|m| m.id.to_lowercase().contains(needle) || m.name.to_lowercase().contains(needle))
        .collect();
    let aliases: Vec<&Model> = hits.iter().copied().filter(|m| is_alias(&m.id)).collect();
    let pool = if aliases.is_empty() { hits } else { aliases };
    let Some(best) = pool.iter().map(|m| m.id.as_str()).max() else {
        return Vec::new();
    };
    // The same id of several providers: all of them (with a warning).
    pool.iter().copied().filter(|m| m.id == best).collect()
}

/// An id that is not a dated snapshot (`-20250929`), or one named latest.
fn is_alias(id: &str) -> bool {
    let b = id.as_bytes();
    let dated =
        b.len() > 9 && b[b.len() - 9] == b'-' && b[b.len() - 8..].iter().all(u8::is_ascii_digit);
    id.ends_with("-latest") || !dated
}

/// The models whose `provider/id` or id the glob matches (any case; `*`
/// does not cross a `/`). A pattern that is not a glob matches nothing.
fn glob_matches<'a>(pattern: &str, models: &'a [Model]) -> Vec<&'a Model> {
    let Ok(glob) = GlobBuilder::new(pattern)
        .case_insensitive(true)
        .literal_separator(true)
        .build()
    else {
        return Vec::new();
    };
    let glob = glob.compile_matcher();
    models
        .iter()
        .filter(|m| glob.is_match(format!("{}/{}", m.provider, m.id)) || glob.is_match(&m.id))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(provider: &str, id: &str, name: &str) -> Model {
        let mut m = Model::new(provider, id);
        m.name = name.into();
        m
    }

    fn catalogue() -> Vec<Model> {
        vec![
            named("anthropic", "claude-sonnet-4-5", "Claude Sonnet 4.5"),
            named(
                "anthropic",
                "claude-sonnet-4-5-20250929",
                "Claude Sonnet 4.5",
            ),
            named("anthropic", "claude-haiku-4-5", "Claude Haiku 4.5"),
            named("openai", "gpt-5", "GPT-5"),
            named("openai", "gpt-5-mini", "GPT-5 mini"),
            named("openrouter", "openai/gpt-5", "GPT-5"),
            named("bedrock", "claude-haiku-4-5", "Claude Haiku 4.5"),
        ]
    }

    fn ids(scope: &ModelScope) -> Vec<String> {
        scope
            .models
            .iter()
            .map(|s| format!("{}/{}", s.model.provider, s.model.id))
            .collect()
    }

    #[test]
    fn references_fuzzy_texts_and_globs_resolve_in_pattern_order() {
        let models = catalogue();
        let scope = resolve_scope(
            &[
                "OpenAI/GPT-5-mini".into(),
                "sonnet:high".into(),
                "openrouter/**".into(),
                "gpt-5".into(),
            ],
            &models,
        );
        assert_eq!(
            ids(&scope),
            [
                "openai/gpt-5-mini",
                // The alias, not the dated snapshot.
                "anthropic/claude-sonnet-4-5",
                // `**` crosses the `/` inside OpenRouter's id (`*` would not).
                "openrouter/openai/gpt-5",
                "openai/gpt-5",
            ]
        );
        assert_eq!(scope.models[1].thinking, Some(ThinkingLevel::High));
        assert_eq!(scope.models[0].thinking, None);
        assert!(scope.warnings.is_empty(), "{:?}", scope.warnings);
    }

    #[test]
    fn what_does_not_resolve_is_a_warning() {
        let models = catalogue();
        let scope = resolve_scope(
            &[
                "nothing-like-it".into(),
                "claude-haiku-4-5".into(),
                "gpt-5-mini:turbo".into(),
                "[".into(),
                "  ".into(),
            ],
            &models,
        );
        assert_eq!(
            ids(&scope),
            [
                "anthropic/claude-haiku-4-5",
                "bedrock/claude-haiku-4-5",
                "openai/gpt-5-mini"
            ]
        );
        let text = scope.warnings.join("\n");
        assert!(text.contains("\"nothing-like-it\""), "{text}");
        assert!(
            text.contains("several providers (anthropic, bedrock)"),
            "{text}"
        );
        assert!(text.contains("\"turbo\" is no thinking level"), "{text}");
        assert!(
            text.contains("\"[\""),
            "a broken glob matches nothing: {text}"
        );
    }

    #[test]
    fn the_cycle_wraps_and_enters_from_outside() {
        let scope = resolve_scope(&["gpt-5".into(), "claude-haiku-4-5".into()], &catalogue());
        let models: Vec<ScopedModel> = scope.models;
        let at = |p: &str, id: &str| Model::new(p, id);
        let id = |s: Option<ScopedModel>| s.map(|s| format!("{}/{}", s.model.provider, s.model.id));
        assert_eq!(
            id(next_in_scope(&models, &at("openai", "gpt-5"), true)),
            Some("anthropic/claude-haiku-4-5".into())
        );
        assert_eq!(
            id(next_in_scope(
                &models,
                &at("bedrock", "claude-haiku-4-5"),
                true
            )),
            Some("openai/gpt-5".into())
        );
        assert_eq!(
            id(next_in_scope(&models, &at("x", "y"), false)),
            Some("bedrock/claude-haiku-4-5".into())
        );
        assert_eq!(
            next_in_scope(&models[..1], &at("openai", "gpt-5"), true),
            None
        );
        assert_eq!(next_in_scope(&[], &at("openai", "gpt-5"), true), None);
    }
}
