//! The lines of a session file, in Pi's version-3 layout.

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
    /// A message of the conversation (any role: user, assistant,
    /// toolResult, bashExecution, custom, ...).
    Message {
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

    /// [`SessionEntry::from_json`] of a value the caller gives up: a
    /// message entry (nearly every line of a session) takes its message
    /// as it is, where deserialising the tagged enum would copy it twice
    /// (serde buffers an internally tagged enum's fields before it reads
    /// them). Loading a long session spends most of its time here.
    pub fn from_json_owned(mut value: Value) -> Option<Self> {
        let is_message = value.get("type").and_then(Value::as_str) == Some("message");
        let message = match value.as_object_mut() {
            Some(fields) if is_message => fields.remove("message"),
            _ => None,
        };
        let Some(message) = message else {
            return Self::from_json(&value);
        };
        let text = |key: &str| value.get(key).and_then(Value::as_str).map(str::to_string);
        Some(SessionEntry {
            id: text("id")?,
            parent_id: text("parentId"),
            timestamp: text("timestamp").unwrap_or_default(),
            kind: EntryKind::Message { message },
        })
    }

    /// Reads an entry line; `None` for a line of an unknown type or shape
    /// (kept out of the tree rather than failing the load).
    pub fn from_json(value: &Value) -> Option<Self> {
        // Deserialised from the borrowed value: no copy of the message.
        let kind = EntryKind::deserialize(value).ok()?;
        Some(SessionEntry {
            id: value.get("id")?.as_str()?.to_string(),
            parent_id: value
                .get("parentId")
                .and_then(Value::as_str)
                .map(str::to_string),
            timestamp: value
                .get("timestamp")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            kind,
        })
    }

    /// The message's role, for message entries.
    pub fn role(&self) -> Option<&str> {
        match &self.kind {
            EntryKind::Message { message } => message.get("role").and_then(Value::as_str),
            _ => None,
        }
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
        let entry = SessionEntry::from_json(&value).unwrap();
        assert_eq!(serde_json::to_string(&entry.to_json()).unwrap(), line);
    }

    #[test]
    fn the_owned_reader_reads_what_the_borrowed_one_does() {
        for line in [
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"message","id":"a2","parentId":"a1","timestamp":"t","message":{"role":"assistant","content":[]},"extra":1}"#,
            r#"{"type":"compaction","id":"f6","parentId":"e5","timestamp":"t","summary":"S","firstKeptEntryId":"c3","tokensBefore":5}"#,
            // Not entries: no message, no id, an id that is not a string.
            r#"{"type":"message","id":"a3","timestamp":"t"}"#,
            r#"{"type":"message","timestamp":"t","message":{}}"#,
            r#"{"type":"message","id":7,"message":{}}"#,
            r#"[1,2]"#,
        ] {
            let value: Value = serde_json::from_str(line).unwrap();
            assert_eq!(
                SessionEntry::from_json_owned(value.clone()),
                SessionEntry::from_json(&value),
                "{line}"
            );
        }
    }
}
