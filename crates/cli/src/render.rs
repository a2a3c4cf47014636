//! Text mode: assistant text streamed as it arrives, tool calls and results
//! drawn by the tools' own renderers.

use std::io::Write;

use agent_ai::{AssistantMessageEvent, Message, StopReason};
use agent_core::AgentEvent;
use coding_agent::{
    RenderContext, RenderResultOptions, StyledText, Theme, ToolRegistry, sanitize_terminal_text,
};

/// Draws events on stdout (colours only on a terminal, via `anstream`).
pub struct TextRenderer {
    registry: ToolRegistry,
    theme: Theme,
    ctx: RenderContext,
    in_text: bool,
    progress: bool,
    tty: bool,
    /// Call id of the last drawn call header, and the headers of running calls.
    last_header: Option<String>,
    calls: std::collections::HashMap<String, StyledText>,
    after_tool: bool,
    /// What the tests read instead of stdout.
    #[cfg(test)]
    captured: Option<std::sync::Arc<std::sync::Mutex<String>>>,
}

impl TextRenderer {
    /// A renderer using the registry's renderers.
    pub fn new(registry: ToolRegistry, cwd: std::path::PathBuf) -> Self {
        use std::io::IsTerminal;
        let tty = std::io::stdout().is_terminal();
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(100);
        TextRenderer {
            registry,
            theme: Theme::default(),
            ctx: RenderContext { cwd, width },
            in_text: false,
            progress: false,
            tty,
            last_header: None,
            calls: std::collections::HashMap::new(),
            after_tool: false,
            #[cfg(test)]
            captured: None,
        }
    }

    fn write(&self, s: &str) {
        #[cfg(test)]
        if let Some(captured) = &self.captured {
            captured
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push_str(s);
            return;
        }
        let mut out = anstream::stdout();
        let _ = out.write_all(s.as_bytes());
        let _ = out.flush();
    }

    fn block(&self, text: &StyledText, indent: &str) {
        if text.is_empty() {
            return;
        }
        let body = text
            .to_ansi()
            .lines()
            .map(|l| format!("{indent}{l}\n"))
            .collect::<String>();
        self.write(&body);
    }

    fn clear_progress(&mut self) {
        if self.progress {
            self.write("\r\x1b[2K");
            self.progress = false;
        }
    }

    fn end_text(&mut self) {
        if self.in_text {
            self.write("\n");
            self.in_text = false;
        }
    }

    /// Draws one event.
    pub fn handle(&mut self, event: &AgentEvent) {
        match event {
            AgentEvent::MessageUpdate {
                assistant_message_event,
                ..
            } => match assistant_message_event {
                AssistantMessageEvent::TextDelta { delta, .. } => {
                    self.clear_progress();
                    if self.after_tool {
                        self.write("\n");
                        self.after_tool = false;
                    }
                    self.in_text = true;
                    self.write(&sanitize_terminal_text(delta));
                }
                AssistantMessageEvent::ThinkingDelta { delta, .. } => {
                    self.clear_progress();
                    self.in_text = true;
                    let style = self.theme.muted;
                    self.write(&format!(
                        "{}{}{}",
                        style.render(),
                        sanitize_terminal_text(delta),
                        style.render_reset()
                    ));
                }
                AssistantMessageEvent::TextEnd { .. }
                | AssistantMessageEvent::ThinkingEnd { .. } => {
                    self.end_text();
                }
                _ => {}
            },
            AgentEvent::MessageEnd {
                message: Message::Assistant(a),
            } => {
                self.end_text();
                if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) {
                    let what = if a.stop_reason == StopReason::Aborted {
                        "cancelled"
                    } else {
                        "error"
                    };
                    let msg =
                        sanitize_terminal_text(a.error_message.as_deref().unwrap_or_default())
                            .into_owned();
                    let style = self.theme.error;
                    let mut err = anstream::stderr();
                    let _ = writeln!(
                        err,
                        "{}{what}: {msg}{}",
                        style.render(),
                        style.render_reset()
                    );
                }
            }
            // A call a running tool made (a script's `tools.read(...)`): one
            // line under its parent, `↳` and the tool's own call line; a
            // failure adds its first line. Its progress and result stay out:
            // the parent's result says what came of it.
            AgentEvent::ToolExecutionStart {
                tool_name,
                args,
                parent_tool_call_id: Some(_),
                ..
            } => {
                self.end_text();
                self.clear_progress();
                let mut call = self
                    .registry
                    .render_call(tool_name, args, &self.theme, &self.ctx);
                call.lines.truncate(1);
                self.block(&call, "  ↳ ");
            }
            AgentEvent::ToolExecutionEnd {
                tool_name,
                result,
                is_error,
                parent_tool_call_id: Some(_),
                ..
            } => {
                if !*is_error {
                    return;
                }
                self.clear_progress();
                let text = result.text_content();
                let first = text.lines().next().unwrap_or_default();
                let line = format!("{tool_name}: {}", sanitize_terminal_text(first));
                self.block(&StyledText::from_text(&line, self.theme.error), "    x ");
            }
            AgentEvent::ToolExecutionUpdate {
                parent_tool_call_id: Some(_),
                ..
            } => {}
            AgentEvent::ToolExecutionStart {
                tool_call_id,
                tool_name,
                args,
                parent_tool_call_id: None,
            } => {
                self.end_text();
                self.clear_progress();
                let call = self
                    .registry
                    .render_call(tool_name, args, &self.theme, &self.ctx);
                self.write("\n");
                self.block(&call, "");
                self.last_header = Some(tool_call_id.clone());
                self.calls.insert(tool_call_id.clone(), call);
            }
            AgentEvent::ToolExecutionUpdate {
                tool_name,
                partial_result,
                ..
            } => {
                if !self.tty {
                    return;
                }
                // The tool's own drawing of the partial result, its last
                // non-empty line as the progress line.
                let options = RenderResultOptions {
                    is_partial: true,
                    ..Default::default()
                };
                let view = self.registry.render_result(
                    tool_name,
                    partial_result,
                    &options,
                    &self.theme,
                    &self.ctx,
                );
                let text = view.to_plain();
                let Some(last) = text.lines().rev().find(|l| !l.trim().is_empty()) else {
                    return;
                };
                let max = self.ctx.width.saturating_sub(6).max(10);
                let shown: String = sanitize_terminal_text(last).chars().take(max).collect();
                let style = self.theme.muted;
                self.write(&format!(
                    "\r\x1b[2K  {}… {shown}{}",
                    style.render(),
                    style.render_reset()
                ));
                self.progress = true;
            }
            AgentEvent::ToolExecutionEnd {
                tool_call_id,
                tool_name,
                result,
                is_error,
                parent_tool_call_id: None,
            } => {
                self.clear_progress();
                let header = self.calls.remove(tool_call_id);
                // In a parallel batch results arrive out of order: repeat the call line.
                if self.last_header.as_deref() != Some(tool_call_id.as_str())
                    && let Some(header) = header
                {
                    self.write("\n");
                    self.block(&header, "");
                }
                self.last_header = None;
                self.after_tool = true;
                let options = RenderResultOptions {
                    is_error: *is_error,
                    ..Default::default()
                };
                let view = self.registry.render_result(
                    tool_name,
                    result,
                    &options,
                    &self.theme,
                    &self.ctx,
                );
                // A tool that draws itself gets no indented frame.
                let indent = match self.registry.render_shell(tool_name) {
                    coding_agent::RenderShell::SelfDrawn => "",
                    _ => "  ",
                };
                self.block(&view, indent);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_core::AgentToolResult;
    use serde_json::json;

    /// The text without colour sequences.
    fn plain(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn a_nested_call_is_a_line_under_its_parent() {
        let captured = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut r = TextRenderer::new(ToolRegistry::new(vec![]), "/work".into());
        r.captured = Some(captured.clone());
        r.tty = false;
        let parent = |id: Option<&str>| id.map(str::to_string);
        let start = |id: &str, name: &str, args, p: Option<&str>| AgentEvent::ToolExecutionStart {
            tool_call_id: id.into(),
            tool_name: name.into(),
            args,
            parent_tool_call_id: parent(p),
        };
        let end = |id: &str, name: &str, result, is_error, p: Option<&str>| {
            AgentEvent::ToolExecutionEnd {
                tool_call_id: id.into(),
                tool_name: name.into(),
                result,
                is_error,
                parent_tool_call_id: parent(p),
            }
        };
        r.handle(&start("c1", "script", json!({}), None));
        r.handle(&start("c1/1", "probe", json!({"n": 1}), Some("c1")));
        r.handle(&end(
            "c1/1",
            "probe",
            AgentToolResult::text("fine"),
            false,
            Some("c1"),
        ));
        r.handle(&start("c1/2", "probe", json!({"n": 2}), Some("c1")));
        r.handle(&end(
            "c1/2",
            "probe",
            AgentToolResult::error("denied by rule\nsecond line"),
            true,
            Some("c1"),
        ));
        r.handle(&end(
            "c1",
            "script",
            AgentToolResult::text("2 calls"),
            false,
            None,
        ));
        let out = plain(&captured.lock().unwrap());
        assert_eq!(
            out,
            "\nscript\n  ↳ probe {\"n\":1}\n  ↳ probe {\"n\":2}\n    x probe: denied by rule\n  2 calls\n"
        );
    }

    /// A tool that draws itself (`RenderShell::SelfDrawn`) gets no frame:
    /// its view starts at the margin, where a default tool's is indented.
    #[test]
    fn a_self_drawn_tool_gets_no_indented_frame() {
        let drawn = |name: &str| {
            coding_agent::tool(name)
                .description("test")
                .execute(|_: serde_json::Value, _| async { Ok(AgentToolResult::text("x")) })
                .with_render_result(|result, _, _, _| {
                    Some(agent_tool::StyledText::plain(&format!(
                        "drawn {}",
                        result.text_content()
                    )))
                })
        };
        let registry = ToolRegistry::new(vec![
            drawn("framed"),
            drawn("bare").with_render_shell(coding_agent::RenderShell::SelfDrawn),
        ]);
        let captured = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let mut r = TextRenderer::new(registry, "/work".into());
        r.captured = Some(captured.clone());
        r.tty = false;
        for name in ["framed", "bare"] {
            r.handle(&AgentEvent::ToolExecutionStart {
                tool_call_id: name.into(),
                tool_name: name.into(),
                args: json!({}),
                parent_tool_call_id: None,
            });
            r.handle(&AgentEvent::ToolExecutionEnd {
                tool_call_id: name.into(),
                tool_name: name.into(),
                result: AgentToolResult::text(name),
                is_error: false,
                parent_tool_call_id: None,
            });
        }
        let out = plain(&captured.lock().unwrap());
        assert!(out.contains("\n  drawn framed\n"), "{out:?}");
        assert!(out.contains("\ndrawn bare\n"), "{out:?}");
    }
}
