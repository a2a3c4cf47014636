//! The lines of a session file, in Pi's version-3 layout.

use std::borrow::Cow;

use agent_ai::Message;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The version written in new headers.
pub const SESSION_VERSION: u64 = 3;

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHeader {
    /// Always `"session"`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Layout version (3; 1 and 2 are read too).
    #[serde(default = "one")]
    pub version: u64,
    /// Session id (a UUID).
    pub id: String,
    /// When it was created (ISO 8601).
    pub timestamp: String,
    /// The working directory.
    #[serde(default)]
    pub cwd: String,
    /// The session this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Where the tools ran, when not on this machine (a remote URI such as
    /// `ssh://host/srv/app`): continuing the session reconnects there.
    /// Our addition; Pi ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
}

fn one() -> u64 {
    1
}

/// What an entry records (the `type` and its own fields).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EntryKind {
    /// A message of the conversation that agent-ai knows (`user`,
    /// `assistant`, `toolResult`), read from a line only when writing it
    /// back would neither lose nor add anything (see [`EntryKind::OtherMessage`]).
    Message {
        /// The message.
        message: Message,
    },
    /// A `message` line whose message is not an [`agent_ai::Message`], kept
    /// as it was read and written back unchanged: Pi's own roles
    /// (`bashExecution`, `custom`, `branchSummary`, `compactionSummary`), a
    /// role of a newer writer, or a known role in a shape that does not
    /// parse or carries fields agent-ai has no place for (Pi's `redacted`
    /// thinking, say). The context still reads what it can of it
    /// ([`message_from_json`](crate::message_from_json)).
    ///
    /// Never deserialised by serde: a `message` line is sorted into this
    /// variant or [`EntryKind::Message`] by [`SessionEntry::from_json`].
    #[serde(rename = "message", skip_deserializing)]
    OtherMessage {
        /// The message as JSON.
        message: Value,
    },
    /// The model changed.
    #[serde(rename_all = "camelCase")]
    ModelChange {
        /// Provider name.
        provider: String,
        /// Model id.
        model_id: String,
    },
    /// The thinking level changed.
    #[serde(rename_all = "camelCase")]
    ThinkingLevelChange {
        /// `off`, `minimal`, `low`, `medium`, `high`, `xhigh`.
        thinking_level: String,
    },
    /// Earlier messages were replaced by a summary.
    #[serde(rename_all = "camelCase")]
    Compaction {
        /// The summary.
        summary: String,
        /// The first entry kept after the summary.
        first_kept_entry_id: String,
        /// Context size before compacting, in tokens.
        tokens_before: u64,
        /// Files read and modified, or an extension's data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        /// Written by an extension.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_hook: Option<bool>,
    },
    /// A summary of a branch left behind.
    #[serde(rename_all = "camelCase")]
    BranchSummary {
        /// The entry the abandoned branch ended at.
        from_id: String,
        /// The summary.
        summary: String,
        /// File tracking data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
        /// Written by an extension.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from_hook: Option<bool>,
    },
    /// Extension state; not part of the model's context.
    #[serde(rename_all = "camelCase")]
    Custom {
        /// The extension's identifier.
        custom_type: String,
        /// Its data.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    /// An extension's message; part of the context.
    #[serde(rename_all = "camelCase")]
    CustomMessage {
        /// The extension's identifier.
        custom_type: String,
        /// Text or content blocks.
        content: Value,
        /// Shown to the user.
        #[serde(default)]
        display: bool,
        /// Not sent to the model.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<Value>,
    },
    /// A bookmark on an entry (`label` absent clears it).
    #[serde(rename_all = "camelCase")]
    Label {
        /// The labelled entry.
        target_id: String,
        /// The label.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    /// Session metadata (its display name).
    SessionInfo {
        /// The name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
    },
}

/// One entry of the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionEntry {
    /// 8 hex characters, unique in the file.
    pub id: String,
    /// The entry it follows; `None` for a first entry.
    pub parent_id: Option<String>,
    /// When it was written (ISO 8601).
    pub timestamp: String,
    /// What it records.
    pub kind: EntryKind,
}

impl SessionEntry {
    /// The JSON line: `type`, `id`, `parentId`, `timestamp`, then the
    /// kind's fields (Pi's order).
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        let kind = serde_json::to_value(&self.kind).unwrap_or(Value::Null);
        let Value::Object(fields) = kind else {
            return Value::Null;
        };
        out.insert(
            "type".into(),
            fields.get("type").cloned().unwrap_or(Value::Null),
        );
        out.insert("id".into(), Value::from(self.id.clone()));
        out.insert(
            "parentId".into(),
            self.parent_id
                .clone()
                .map(Value::from)
                .unwrap_or(Value::Null),
        );
        out.insert("timestamp".into(), Value::from(self.timestamp.clone()));
        for (k, v) in fields {
            if k != "type" {
                out.insert(k, v);
            }
        }
        Value::Object(out)
    }

    /// Reads an entry line; `None` for a line of an unknown type or shape
    /// (kept out of the tree rather than failing the load). A `message`
    /// line becomes [`EntryKind::Message`] or [`EntryKind::OtherMessage`]
    /// ([`EntryKind::message_from_value`]).
    ///
    /// Takes the value: a message entry (nearly every line of a session)
    /// takes its message as it is, where deserialising the tagged enum
    /// would copy it twice (serde buffers an internally tagged enum's
    /// fields before it reads them). Loading a long session spends most of
    /// its time here.
    pub fn from_json(mut value: Value) -> Option<Self> {
        let text =
            |value: &Value, key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        let is_message = value.get("type").and_then(Value::as_str) == Some("message");
        let kind = match value.as_object_mut() {
            Some(fields) if is_message => EntryKind::message_from_value(fields.remove("message")?),
            // Deserialised from the borrowed value: no copy of its fields.
            _ => EntryKind::deserialize(&value).ok()?,
        };
        Some(SessionEntry {
            id: text(&value, "id")?,
            parent_id: text(&value, "parentId"),
            timestamp: text(&value, "timestamp").unwrap_or_default(),
            kind,
        })
    }

    /// The message's role, for message entries.
    pub fn role(&self) -> Option<&str> {
        self.kind.role()
    }
}

impl EntryKind {
    /// The kind of a `message` line's message: typed when agent-ai reads it
    /// faithfully, else kept as JSON (see [`EntryKind::OtherMessage`]).
    ///
    /// ```
    /// use agent_sessions::EntryKind;
    /// use serde_json::json;
    /// let user = EntryKind::message_from_value(json!({"role": "user", "content": "hi", "timestamp": 1}));
    /// assert!(matches!(user, EntryKind::Message { .. }));
    /// let shell = EntryKind::message_from_value(json!({"role": "bashExecution", "command": "ls"}));
    /// assert!(matches!(shell, EntryKind::OtherMessage { .. }));
    /// ```
    pub fn message_from_value(message: Value) -> EntryKind {
        match faithful_message(&message) {
            Some(message) => EntryKind::Message { message },
            None => EntryKind::OtherMessage { message },
        }
    }

    /// The message's role, for message entries (typed or not).
    pub fn role(&self) -> Option<&str> {
        match self {
            EntryKind::Message { message } => Some(message.role()),
            EntryKind::OtherMessage { message } => message.get("role").and_then(Value::as_str),
            _ => None,
        }
    }

    /// The message as agent-ai has it, for a message entry of role `user`,
    /// `assistant` or `toolResult`: the typed one, or what agent-ai reads
    /// of one kept as JSON (fields it has no place for left out). `None`
    /// for other entries, Pi's own roles and messages that do not parse.
    ///
    /// ```
    /// use agent_sessions::EntryKind;
    /// use serde_json::json;
    /// // Kept as JSON (no timestamp: agent-ai would add one), read all the same.
    /// let kind = EntryKind::message_from_value(json!({"role": "user", "content": "hi"}));
    /// assert!(matches!(kind, EntryKind::OtherMessage { .. }));
    /// assert_eq!(kind.agent_message().unwrap().role(), "user");
    /// let shell = EntryKind::message_from_value(json!({"role": "bashExecution", "command": "ls"}));
    /// assert!(shell.agent_message().is_none());
    /// ```
    pub fn agent_message(&self) -> Option<Cow<'_, Message>> {
        match self {
            EntryKind::Message { message } => Some(Cow::Borrowed(message)),
            EntryKind::OtherMessage { message }
                if matches!(
                    message.get("role").and_then(Value::as_str),
                    Some("user" | "assistant" | "toolResult")
                ) =>
            {
                Message::deserialize(message).ok().map(Cow::Owned)
            }
            _ => None,
        }
    }

    /// A message entry's message as JSON, as the file has it (typed ones
    /// serialised on the way): for readers that draw any role, such as an
    /// export. `None` for other entries.
    pub fn message_json(&self) -> Option<Cow<'_, Value>> {
        match self {
            EntryKind::Message { message } => Some(Cow::Owned(
                serde_json::to_value(message).unwrap_or(Value::Null),
            )),
            EntryKind::OtherMessage { message } => Some(Cow::Borrowed(message)),
            _ => None,
        }
    }
}

/// `message` read as an [`agent_ai::Message`] if writing that back gives the
/// same JSON: a message agent-ai would change on the way through (a field it
/// has no place for, a default it would add) stays JSON, so no line loses
/// data when a session is forked or exported.
fn faithful_message(message: &Value) -> Option<Message> {
    // Pi's own roles are not agent-ai's: no need to try.
    let role = message.get("role").and_then(Value::as_str)?;
    if !matches!(role, "user" | "assistant" | "toolResult") {
        return None;
    }
    let typed = match Message::deserialize(message) {
        Ok(typed) => typed,
        Err(error) => {
            tracing::debug!(%error, role, "a stored message kept as JSON: it does not parse");
            return None;
        }
    };
    let again = serde_json::to_value(&typed).ok()?;
    if same_json(message, &again) {
        Some(typed)
    } else {
        tracing::debug!(
            role,
            "a stored message kept as JSON: agent-ai would not write it back the same"
        );
        None
    }
}

/// JSON equality where numbers compare by value: Pi writes a zero cost as
/// `0`, agent-ai as `0.0`, the same number.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x == y || ((x.is_f64() || y.is_f64()) && x.as_f64() == y.as_f64())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(key, x)| y.get(key).is_some_and(|y| same_json(x, y)))
        }
        _ => a == b,
    }
}

/// A fresh 8-hex-character entry id not in `taken`.
pub(crate) fn new_entry_id(taken: impl Fn(&str) -> bool) -> String {
    for _ in 0..100 {
        let id = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
        if !taken(&id) {
            return id;
        }
    }
    uuid::Uuid::new_v4().to_string()
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the epoch, the shape of
/// JavaScript's `toISOString`, which Pi's files use. Instants beyond years
/// -9999 and 9999 are clamped to the first or last one shown.
pub fn iso_timestamp(millis: i64) -> String {
    let timestamp = jiff::Timestamp::from_millisecond(millis).unwrap_or(if millis < 0 {
        jiff::Timestamp::MIN
    } else {
        jiff::Timestamp::MAX
    });
    // Always three fraction digits: Pi writes them even when they are zero.
    format!("{timestamp:.3}")
}

/// Now, as [`iso_timestamp`].
pub fn iso_now() -> String {
    iso_timestamp(agent_ai::now_millis())
}

/// Milliseconds since the epoch of an [`iso_timestamp`] (0 when unreadable).
/// A time without an offset (or a bare date, at midnight) is taken as UTC.
pub fn parse_iso_millis(text: &str) -> i64 {
    if let Ok(timestamp) = text.parse::<jiff::Timestamp>() {
        return timestamp.as_millisecond();
    }
    text.parse::<jiff::civil::DateTime>()
        .ok()
        .and_then(|civil| jiff::tz::Offset::UTC.to_timestamp(civil).ok())
        .map_or(0, jiff::Timestamp::as_millisecond)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_keep_pis_shape() {
        assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_timestamp(1_733_234_567_890), "2024-12-03T14:02:47.890Z");
        assert_eq!(iso_timestamp(1_767_225_600_000), "2026-01-01T00:00:00.000Z");
        assert_eq!(iso_timestamp(951_782_400_007), "2000-02-29T00:00:00.007Z");
        assert_eq!(iso_timestamp(-1), "1969-12-31T23:59:59.999Z");
        assert!(iso_timestamp(i64::MAX).starts_with("9999-12-"));
        assert!(iso_timestamp(i64::MIN).starts_with("-009999-01-"));
        for ms in [0, 951_782_400_123, 1_733_234_567_890, 4_102_444_800_000] {
            assert_eq!(parse_iso_millis(&iso_timestamp(ms)), ms);
        }
    }

    #[test]
    fn timestamps_read_leniently() {
        // Pi's own files, and what other writers put there.
        let new_year = 1_767_225_600_000;
        for (text, millis) in [
            ("2026-01-01T00:00:00.000Z", new_year),
            ("2026-01-01T00:00:00Z", new_year),
            ("2026-01-01T00:00:00.1234Z", new_year + 123),
            ("2026-01-01T02:00:00.000+02:00", new_year),
            ("2026-01-01T00:00:00.000", new_year),
            ("2026-01-01", new_year),
        ] {
            assert_eq!(parse_iso_millis(text), millis, "{text}");
        }
        for unreadable in ["", "yesterday", "2026-13-01T00:00:00Z", "2026-01-01T25:00Z"] {
            assert_eq!(parse_iso_millis(unreadable), 0, "{unreadable}");
        }
    }

    #[test]
    fn entries_keep_pis_shape() {
        let line = r#"{"type":"compaction","id":"f6a7b8c9","parentId":"e5f6a7b8","timestamp":"2024-12-03T14:10:00.000Z","summary":"S","firstKeptEntryId":"c3d4e5f6","tokensBefore":50000}"#;
        let value: Value = serde_json::from_str(line).unwrap();
        let entry = SessionEntry::from_json(value).unwrap();
        assert_eq!(serde_json::to_string(&entry.to_json()).unwrap(), line);
    }

    fn read(line: &str) -> Option<SessionEntry> {
        SessionEntry::from_json(serde_json::from_str(line).unwrap())
    }

    #[test]
    fn lines_that_are_not_entries_are_left_out() {
        for line in [
            // No message, no id, an id that is not a string, not an object.
            r#"{"type":"message","id":"a3","timestamp":"t"}"#,
            r#"{"type":"message","timestamp":"t","message":{}}"#,
            r#"{"type":"message","id":7,"message":{}}"#,
            r#"{"type":"compaction","id":"f6","summary":"S"}"#,
            r#"{"type":"no_such_type","id":"f7"}"#,
            r#"[1,2]"#,
        ] {
            assert_eq!(read(line), None, "{line}");
        }
    }

    #[test]
    fn messages_agent_ai_reads_faithfully_are_typed() {
        // Pi writes a zero cost as `0`; agent-ai as `0.0`: the same value.
        let line = r#"{"type":"message","id":"a4","parentId":"a3","timestamp":"2025-11-20T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"Use ls.","thinkingSignature":"sig"},{"type":"toolCall","id":"toolu_01","name":"ls","arguments":{"path":"."}}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":1200,"output":40,"cacheRead":0,"cacheWrite":0,"totalTokens":1240,"cost":{"input":0.0036,"output":0.0006,"cacheRead":0,"cacheWrite":0,"total":0.0042}},"stopReason":"toolUse","timestamp":1763629202000}}"#;
        let entry = read(line).unwrap();
        let EntryKind::Message { message } = &entry.kind else {
            panic!("{:?}", entry.kind)
        };
        assert_eq!(message.as_assistant().unwrap().tool_calls().count(), 1);
        assert_eq!(entry.role(), Some("assistant"));
        // Written back: the same JSON, numbers by value.
        let original: Value = serde_json::from_str(line).unwrap();
        assert!(same_json(&entry.to_json(), &original));
        for line in [
            r#"{"type":"message","id":"u","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi","timestamp":1}}"#,
            r#"{"type":"message","id":"r","parentId":"u","timestamp":"t","message":{"role":"toolResult","toolCallId":"c","toolName":"ls","content":[{"type":"text","text":"x"}],"details":{},"isError":false,"timestamp":2}}"#,
        ] {
            let entry = read(line).unwrap();
            assert!(matches!(entry.kind, EntryKind::Message { .. }), "{line}");
            assert_eq!(serde_json::to_string(&entry.to_json()).unwrap(), line);
        }
    }

    #[test]
    fn other_messages_are_kept_and_written_back_byte_for_byte() {
        for (line, role) in [
            // Pi's own roles.
            (
                r#"{"type":"message","id":"b1","parentId":"a1","timestamp":"t","message":{"role":"bashExecution","command":"git status","output":"On branch main","exitCode":0,"cancelled":false,"truncated":false,"timestamp":1763629204000}}"#,
                Some("bashExecution"),
            ),
            // A role of a newer writer.
            (
                r#"{"type":"message","id":"b2","parentId":"b1","timestamp":"t","message":{"role":"reviewNote","text":"later","score":0.5}}"#,
                Some("reviewNote"),
            ),
            // A known role that does not parse (content is a number).
            (
                r#"{"type":"message","id":"b3","parentId":"b2","timestamp":"t","message":{"role":"user","content":42}}"#,
                Some("user"),
            ),
            // A known role with a field agent-ai has no place for.
            (
                r#"{"type":"message","id":"b4","parentId":"b3","timestamp":"t","message":{"role":"assistant","content":[{"type":"thinking","thinking":"","thinkingSignature":"opaque","redacted":true}],"provider":"anthropic","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":5,"responseId":"msg_1"}}"#,
                Some("assistant"),
            ),
            // A user message without a timestamp: agent-ai would add one.
            (
                r#"{"type":"message","id":"b5","parentId":"b4","timestamp":"t","message":{"role":"user","content":"no time"}}"#,
                Some("user"),
            ),
            // No role at all.
            (
                r#"{"type":"message","id":"b6","parentId":"b5","timestamp":"t","message":{"text":"?"}}"#,
                None,
            ),
            (
                r#"{"type":"message","id":"b7","parentId":"b6","timestamp":"t","message":"just text"}"#,
                None,
            ),
        ] {
            let entry = read(line).unwrap_or_else(|| panic!("{line}"));
            assert!(
                matches!(entry.kind, EntryKind::OtherMessage { .. }),
                "{line}: {:?}",
                entry.kind
            );
            assert_eq!(entry.role(), role, "{line}");
            assert_eq!(serde_json::to_string(&entry.to_json()).unwrap(), line);
        }
    }

    #[test]
    fn numbers_compare_by_value_and_nothing_else_does() {
        use serde_json::json;
        assert!(same_json(
            &json!({"a": [0, 1.5]}),
            &json!({"a": [0.0, 1.5]})
        ));
        assert!(!same_json(&json!({"a": 1}), &json!({"a": 1, "b": null})));
        assert!(!same_json(&json!({"a": 1}), &json!({"a": "1"})));
        assert!(!same_json(&json!([1, 2]), &json!([2, 1])));
        assert!(!same_json(&json!(u64::MAX), &json!(u64::MAX - 1)));
    }
}
