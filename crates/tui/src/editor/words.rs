//! Word boundaries for motion and word kills, as Pi finds them: skip the
//! blanks, then one word (cut at ASCII punctuation inside it, so
//! `foo.bar` is two stops) or one run of punctuation. A newline is a stop
//! of its own, and a paste marker is one word.

use unicode_segmentation::UnicodeSegmentation;

fn is_blank(s: &str) -> bool {
    s.chars().all(|c| c.is_whitespace() && c != '\n')
}

fn is_wordlike(s: &str) -> bool {
    s.chars().any(char::is_alphanumeric)
}

/// Where a word motion to the left of `pos` in `text` stops; `markers`
/// are the paste markers, each one unit.
pub fn left(text: &str, pos: usize, markers: &[&str]) -> usize {
    let before = &text[..pos];
    if before.ends_with('\n') {
        return pos - 1;
    }
    let mut segs: Vec<(usize, &str)> = before.split_word_bound_indices().collect();
    let mut at = pos;
    while let Some((i, s)) = segs.last()
        && is_blank(s)
    {
        at = *i;
        segs.pop();
    }
    if let Some(m) = markers.iter().find(|m| text[..at].ends_with(*m)) {
        return at - m.len();
    }
    let Some(&(i, s)) = segs.last() else {
        return at;
    };
    if is_wordlike(s) {
        // Stop after the last ASCII punctuation inside the word.
        if let Some((j, c)) = s.char_indices().rfind(|(_, c)| c.is_ascii_punctuation()) {
            return i + j + c.len_utf8();
        }
        // Ideographs are a segment each: a run of them is one word.
        segs.pop();
        at = i;
        while let Some(&(i, s)) = segs.last()
            && is_wordlike(s)
            && !s.chars().any(|c| c.is_ascii_punctuation())
        {
            at = i;
            segs.pop();
        }
        return at;
    }
    while let Some(&(i, s)) = segs.last() {
        if is_wordlike(s) || is_blank(s) || s == "\n" {
            break;
        }
        at = i;
        segs.pop();
    }
    at
}

/// Where a word motion to the right of `pos` in `text` stops.
pub fn right(text: &str, pos: usize, markers: &[&str]) -> usize {
    let after = &text[pos..];
    if after.starts_with('\n') {
        return pos + 1;
    }
    let mut segs = after.split_word_bound_indices().peekable();
    let mut at = pos;
    while let Some((_, s)) = segs.peek()
        && is_blank(s)
    {
        at += s.len();
        segs.next();
    }
    if let Some(m) = markers.iter().find(|m| text[at..].starts_with(*m)) {
        return at + m.len();
    }
    let Some(&(_, s)) = segs.peek() else {
        return at;
    };
    if is_wordlike(s) {
        if let Some((j, _)) = s
            .char_indices()
            .find(|(j, c)| *j > 0 && c.is_ascii_punctuation())
        {
            return at + j;
        }
        while let Some((_, s)) = segs.peek()
            && is_wordlike(s)
            && !s.chars().any(|c| c.is_ascii_punctuation())
        {
            at += s.len();
            segs.next();
        }
        return at;
    }
    while let Some((_, s)) = segs.peek() {
        if is_wordlike(s) || is_blank(s) || *s == "\n" {
            break;
        }
        at += s.len();
        segs.next();
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stops_like_pi() {
        let t = "say foo.bar   (x) 漢字";
        assert_eq!(left(t, t.len(), &[]), t.len() - "漢字".len());
        assert_eq!(left(t, 11, &[]), 8); // foo.|bar
        assert_eq!(left(t, 8, &[]), 7); // the '.' alone
        assert_eq!(right(t, 0, &[]), 3);
        assert_eq!(right(t, 3, &[]), 7); // " foo" then stop at '.'
        assert_eq!(right(t, 11, &[]), 15); // blanks, then "("
        assert_eq!(left("a\nb", 2, &[]), 1);
        assert_eq!(right("a\nb", 1, &[]), 2);
        let m = "[paste #1 +20 lines]";
        let t = format!("x {m} y");
        assert_eq!(left(&t, 2 + m.len(), &[m]), 2);
        assert_eq!(right(&t, 1, &[m]), 2 + m.len());
    }
}
