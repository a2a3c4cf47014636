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

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the epoch.
pub fn iso_timestamp(millis: i64) -> String {
    let secs = millis.div_euclid(1000);
    let ms = millis.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{ms:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Now, as [`iso_timestamp`].
pub fn iso_now() -> String {
    iso_timestamp(agent_ai::now_millis())
}

/// Milliseconds since the epoch of an [`iso_timestamp`] (0 when unreadable).
pub fn parse_iso_millis(text: &str) -> i64 {
    let num = |s: &str| s.parse::<i64>().ok();
    let parse = || -> Option<i64> {
        let (date, time) = text.split_once('T')?;
        let mut d = date.splitn(3, '-');
        let (y, m, day) = (num(d.next()?)?, num(d.next()?)?, num(d.next()?)?);
        let time = time.trim_end_matches('Z');
        let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
        let mut t = hms.splitn(3, ':');
        let (h, mi, s) = (num(t.next()?)?, num(t.next()?)?, num(t.next()?)?);
        let ms = num(&format!("{:0<3}", &frac[..frac.len().min(3)]))?;
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y.rem_euclid(400);
        let mp = if m > 2 { m - 3 } else { m + 9 };
        let doy = (153 * mp + 2) / 5 + day - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(((days * 86_400 + h * 3600 + mi * 60 + s) * 1000) + ms)
    };
    parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        assert_eq!(iso_timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_timestamp(1_733_234_567_890), "2024-12-03T14:02:47.890Z");
        for ms in [0, 951_782_400_123, 1_733_234_567_890, 4_102_444_800_000] {
            assert_eq!(parse_iso_millis(&iso_timestamp(ms)), ms);
        }
    }

    #[test]
    fn entries_keep_pis_shape() {
        let line = r#"{"type":"compaction","id":"f6a7b8c9","parentId":"e5f6a7b8","timestamp":"2024-12-03T14:10:00.000Z","summary":"S","firstKeptEntryId":"c3d4e5f6","tokensBefore":50000}"#;
        let value: Value = serde_json::from_str(line).unwrap();
        let entry = SessionEntry::from_json(&value).unwrap();
        assert_eq!(serde_json::to_string(&entry.to_json()).unwrap(), line);
    }
}
