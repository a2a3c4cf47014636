//! A definition and its tool, converted both ways.

use std::sync::Arc;

use agent_core::{AgentTool, AgentToolResult};
use coding_agent::{RenderContext, Settings, Theme, ToolDefinition};
use serde_json::json;

use super::def;

#[tokio::test]
async fn a_definition_and_its_tool_convert_both_ways() {
    let d = def("read").arc();
    let cwd = std::env::temp_dir();
    let tool: Arc<dyn AgentTool> = d.tool();
    assert_eq!(tool.name(), "read");
    assert_eq!(tool.label(), "Label");
    assert_eq!(tool.description(), "desc");
    assert_eq!(tool.parameters(), d.parameters());
    assert_eq!(
        tool.execution_mode(),
        Some(agent_core::ExecutionMode::Sequential)
    );
    assert_eq!(
        tool.prepare_arguments(json!({})).unwrap(),
        json!({"prepared": true})
    );
    // The session's working directory reaches the tool through the context.
    let cx = agent_core::ToolCallContext::new("c1")
        .with_extensions(coding_agent::tool_extensions(&cwd, &Settings::default()));
    let out = tool.execute(json!({}), cx).await.unwrap();
    assert_eq!(out.text_content(), format!("read ran in {}", cwd.display()));

    // Back to a definition: the core fields survive, prompt metadata and renderers do not.
    let back = ToolDefinition::new(tool);
    assert_eq!(back.name(), "read");
    assert_eq!(back.label(), "Label");
    assert_eq!(back.description(), "desc");
    assert_eq!(
        back.execution_mode(),
        Some(agent_core::ExecutionMode::Sequential)
    );
    assert_eq!(
        back.prepare_arguments(json!({})).unwrap(),
        json!({"prepared": true})
    );
    assert_eq!(back.prompt_snippet(), None);
    assert!(back.prompt_guidelines().is_empty());
    assert!(
        back.render_call(&json!({}), &Theme::plain(), &RenderContext::default())
            .is_none()
    );
    assert!(
        back.render_result(
            &AgentToolResult::text("x"),
            &Default::default(),
            &Theme::plain(),
            &RenderContext::default()
        )
        .is_none()
    );
}
