//! Switching a session's model by provider and id, the one path RPC's
//! `set_model` and the `/model` command share.

use std::sync::Arc;

use agent_ai::Model;

/// Finds a model by provider and id, with a client that serves it: a
/// front end's way to let a switch cross providers and APIs.
pub type ModelResolver = Arc<
    dyn Fn(&str, &str) -> Result<(Model, Arc<dyn agent_ai::ModelClient>), String> + Send + Sync,
>;

/// Switches `session` to `provider/model_id`: through `resolve` when there
/// is one (any provider and API it knows), else among `models`, else (no
/// list) to another id of the current provider. RPC `set_model` and the
/// `/model` command both come through here.
///
/// # Errors
/// `Model not found: provider/id`, or the resolver's own error.
pub fn switch_model(
    session: &crate::AgentSession,
    models: &[Model],
    resolve: Option<&ModelResolver>,
    provider: &str,
    model_id: &str,
) -> Result<Model, String> {
    if let Some(resolve) = resolve {
        let (model, client) = resolve(provider, model_id)?;
        session.set_model_and_client(model.clone(), client);
        return Ok(model);
    }
    let current = session.agent().state().model;
    let model = if models.is_empty() {
        (provider == current.provider).then(|| {
            let mut m = current.clone();
            m.id = model_id.to_string();
            m.name = model_id.to_string();
            m
        })
    } else {
        models
            .iter()
            .find(|m| m.provider == provider && m.id == model_id)
            .cloned()
    };
    let model = model.ok_or_else(|| format!("Model not found: {provider}/{model_id}"))?;
    session.set_model(model.clone());
    Ok(model)
}
