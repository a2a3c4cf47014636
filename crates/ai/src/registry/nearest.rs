//! Suggestions for a mistyped model name: the known names nearest to it
//! by edit distance.

/// Levenshtein distance over characters.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// The candidates nearest to `asked` by edit distance, best first, at most
/// `limit`; a candidate is compared whole and by its part after the
/// provider's `/`, and only close ones count (distance up to a third of the
/// name, at least 3).
///
/// ```
/// let near = agent_ai::nearest_matches("gpt-5-mni", ["openai/gpt-5-mini", "openai/gpt-4o", "anthropic/claude-opus-4-5"], 3);
/// assert_eq!(near, vec!["openai/gpt-5-mini".to_string()]);
/// ```
pub fn nearest_matches<'a>(
    asked: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    let asked = asked.to_lowercase();
    let short = asked.rsplit('/').next().unwrap_or(&asked).to_string();
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|c| {
            let lower = c.to_lowercase();
            let id = lower.split_once('/').map_or(lower.as_str(), |(_, id)| id);
            let d = edit_distance(&asked, &lower)
                .min(edit_distance(&short, id))
                .min(edit_distance(&asked, id));
            let limit = (short.chars().count() / 3).max(3);
            (d <= limit).then_some((d, c))
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, c)| c.to_string())
        .collect()
}
