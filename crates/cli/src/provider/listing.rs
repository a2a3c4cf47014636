//! `--list-models`, and the models RPC may switch to.

use super::*;

/// What RPC `set_model`, `cycle_model` and `get_available_models` work
/// with: the registry's models whose provider has a key (the current model
/// first), and a resolver that builds a client for any `provider/id` the
/// flags could have named. A scripted run keeps its script: no resolver,
/// and no list (any id of the scripted provider goes).
pub fn switchable(
    args: &RunArgs,
    settings: &Settings,
    current: &Model,
) -> (Vec<Model>, Option<coding_agent::ModelResolver>) {
    if current.provider == "scripted" {
        return (Vec::new(), None);
    }
    let Ok(registry) = registry() else {
        return (Vec::new(), None);
    };
    let mut models = vec![current.clone()];
    models.extend(
        registry
            .models()
            .filter(|m| registry.has_api_key(&m.provider))
            .filter(|m| !(m.provider == current.provider && m.id == current.id))
            .cloned(),
    );
    let (args, settings, current) = (args.clone(), settings.clone(), current.clone());
    let resolve: coding_agent::ModelResolver = Arc::new(move |provider, id| {
        let mut args = args.clone();
        // The flags' endpoint and key belong to the provider they started
        // with; another provider comes from the registry and environment.
        if provider != current.provider {
            args.base_url = None;
            args.api = None;
            args.api_key = None;
        }
        args.provider = Some(provider.to_string());
        args.model = Some(id.to_string());
        select_with(&args, &settings, &registry)
            .map(|(client, model)| (model, client))
            .map_err(|e| e.trim_start_matches("coding-agent: ").to_string())
    });
    (models, Some(resolve))
}

/// What the terminal UI's model selector offers in a scripted run (where
/// [`switchable`] lists nothing, since any id of the scripted provider
/// goes): the registry's model ids under the scripted provider, each once,
/// the current one first. Empty for any other provider.
pub fn scripted_choices(current: &Model) -> Vec<Model> {
    if current.provider != "scripted" {
        return Vec::new();
    }
    let Ok(registry) = registry() else {
        return vec![current.clone()];
    };
    let mut seen = std::collections::HashSet::new();
    seen.insert(current.id.clone());
    let mut models = vec![current.clone()];
    for known in registry.models() {
        if seen.insert(known.id.clone()) {
            models.push(Model {
                provider: "scripted".into(),
                api: "scripted".into(),
                base_url: String::new(),
                headers: Default::default(),
                ..known.clone()
            });
        }
    }
    models
}

/// Prints the models matching `search` as a table, with the built-in
/// table's date.
pub fn list_models(registry: &ModelRegistry, search: &str) -> String {
    let money = |v: f64| {
        if v == 0.0 {
            "-".to_string()
        } else {
            format!("${v}")
        }
    };
    let tokens = |n: u64| {
        if n >= 1_000_000 && n.is_multiple_of(1_000_000) {
            format!("{}M", n / 1_000_000)
        } else if n >= 1000 {
            format!("{}K", n / 1000)
        } else {
            n.to_string()
        }
    };
    let mut rows = vec![[
        "provider".to_string(),
        "model".into(),
        "context".into(),
        "max out".into(),
        "in $/M".into(),
        "out $/M".into(),
        "reasoning".into(),
    ]];
    for m in registry.search(search) {
        rows.push([
            m.provider.clone(),
            m.id.clone(),
            tokens(m.context_window),
            tokens(m.max_tokens),
            money(m.cost.input),
            money(m.cost.output),
            if m.reasoning { "yes" } else { "no" }.into(),
        ]);
    }
    let mut widths = [0usize; 7];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    if rows.len() == 1 {
        out.push_str(&format!("(no model matches {search:?})\n"));
    }
    out.push_str(&format!(
        "Built-in table of {}; add or change models in <agent dir>/models.json.",
        agent_ai::BUILTIN_MODELS_DATE
    ));
    out
}
