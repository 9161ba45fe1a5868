//! Cutting text to a length: for a person reading a message or a table ([`shorten`], with `…`),
//! and for a model reading an observation ([`cut_marked`], which says how much is missing).

use std::borrow::Cow;

/// `text` cut to its first `max_chars` characters, with `…` when anything followed.
pub fn shorten(text: &str, max_chars: usize) -> Cow<'_, str> {
    match text.char_indices().nth(max_chars) {
        Some((idx, _)) => Cow::Owned(format!("{}…", &text[..idx])),
        None => Cow::Borrowed(text),
    }
}

/// `text` cut to `limit` characters, the cut marked ` … [cut: N more characters]` so the model
/// knows text is missing; text within the limit is returned as it is.
pub fn cut_marked(text: &str, limit: usize) -> Cow<'_, str> {
    let Some((cut, _)) = text.char_indices().nth(limit) else {
        return Cow::Borrowed(text);
    };
    let dropped = text[cut..].chars().count();
    Cow::Owned(format!(
        "{} … [cut: {dropped} more characters]",
        text[..cut].trim_end()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shorten_keeps_short_text_and_marks_a_cut() {
        assert_eq!(shorten("short", 5), "short");
        assert_eq!(shorten("longer", 5), "longe…");
        assert_eq!(shorten("ééééé", 3), "ééé…");
        assert_eq!(shorten("", 0), "");
    }

    #[test]
    fn cut_marked_says_how_much_is_missing() {
        assert_eq!(cut_marked("short", 10), "short");
        assert_eq!(cut_marked("a b c d e f", 5), "a b c … [cut: 6 more characters]");
        assert_eq!(cut_marked("abcdefghij", 4), "abcd … [cut: 6 more characters]");
        assert_eq!(cut_marked("ééééé", 3), "ééé … [cut: 2 more characters]");
    }
}
