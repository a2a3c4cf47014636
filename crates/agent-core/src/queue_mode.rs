//! How an agent delivers messages queued while it works.

/// How queued steering or follow-up messages are delivered; on the wire
/// (settings' `steeringMode`/`followUpMode`, RPC's `set_*_mode`) as
/// `"one-at-a-time"` or `"all"`.
///
/// ```
/// use agent_core::QueueMode;
/// let mode: QueueMode = serde_json::from_str("\"one-at-a-time\"").unwrap();
/// assert_eq!(mode, QueueMode::OneAtATime);
/// assert_eq!(serde_json::to_string(&QueueMode::All).unwrap(), "\"all\"");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum QueueMode {
    /// One message per poll (the default).
    #[default]
    OneAtATime,
    /// Every queued message at once.
    All,
}
