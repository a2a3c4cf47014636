//! Tool names as providers accept them.

/// The longest tool name providers accept.
const MAX_TOOL_NAME: usize = 64;

/// `mcp__<server>__<tool>` with characters outside `[A-Za-z0-9_-]` replaced
/// by `_`, cut to 64 characters with a short stable hash when too long.
///
/// ```
/// assert_eq!(agent_mcp::mcp_tool_name("my files", "read.file"), "mcp__my_files__read_file");
/// let long = agent_mcp::mcp_tool_name("server", &"x".repeat(100));
/// assert_eq!(long.len(), 64);
/// ```
pub fn mcp_tool_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let full = format!("mcp__{}__{}", clean(server), clean(tool));
    if full.len() <= MAX_TOOL_NAME {
        return full;
    }
    // FNV-1a: stable across runs and platforms.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in format!("{server}\0{tool}").bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let suffix = format!("_{:08x}", hash as u32);
    format!("{}{suffix}", &full[..MAX_TOOL_NAME - suffix.len()])
}

/// A tool name as a server gives it, made safe for providers: characters
/// outside `[A-Za-z0-9_-]` become `_`, at most 64 characters.
pub(super) fn plain_tool_name(tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_TOOL_NAME)
        .collect();
    if clean.is_empty() { "_".into() } else { clean }
}
