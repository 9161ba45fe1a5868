//! Page titles: MediaWiki's normalisation (what Wikipedia's "Go" compares), the looser keys an
//! offline search also accepts, and how alike two titles are (the re-ranking of a miss).

/// Characters MediaWiki never allows in a title: an entity holding one cannot open a page by
/// title, so it goes straight to the ranked search (as `[Mercury]` does on Wikipedia).
const ILLEGAL_IN_TITLES: &[char] = &['#', '<', '>', '[', ']', '{', '|', '}'];

/// MediaWiki's title normalisation: underscores are spaces, runs of whitespace collapse, the ends
/// are trimmed and the first letter is upper case (`the_beatles ` → `The beatles`).
pub fn mediawiki_title(entity: &str) -> String {
    let mut out = String::with_capacity(entity.len());
    let mut pending_space = false;
    for c in entity.chars() {
        if c == '_' || c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        if out.is_empty() {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The case-insensitive form of a title: MediaWiki-normalised, then lower case.
pub fn folded_title(entity: &str) -> String {
    mediawiki_title(entity).to_lowercase()
}

/// Whether `entity` could be a page title at all (no `[`, `|`, `#`, ...).
pub fn is_possible_title(entity: &str) -> bool {
    !entity.contains(ILLEGAL_IN_TITLES) && !entity.trim().is_empty()
}

/// Lowercase letters and digits, words separated by one space: `"Arthur's  Magazine!"` →
/// `arthurs magazine`. Apostrophes and periods join (`arthur's` → `arthurs`); other punctuation
/// separates. Two titles with the same key differ only in case and punctuation.
pub fn title_key(title: &str) -> String {
    let mut out = String::with_capacity(title.len());
    let mut pending_space = false;
    for c in title.chars() {
        if c.is_alphanumeric() {
            if pending_space && !out.is_empty() {
                out.push(' ');
            }
            pending_space = false;
            out.extend(c.to_lowercase());
        } else if !matches!(c, '\'' | '’' | '‘' | '`' | '.') {
            pending_space = true;
        }
    }
    out
}

/// How alike two title keys (see [`title_key`]) are, in `[0, 2]`: the Dice coefficient of their
/// character bigrams plus the share of the query's words found in the title.
pub fn title_similarity(query: &str, title: &str) -> f64 {
    let bigrams = |text: &str| -> Vec<(char, char)> {
        let chars: Vec<char> = text.chars().collect();
        let mut pairs: Vec<(char, char)> = chars.windows(2).map(|pair| (pair[0], pair[1])).collect();
        pairs.sort_unstable();
        pairs
    };
    let (a, b) = (bigrams(query), bigrams(title));
    let dice = if a.is_empty() && b.is_empty() {
        0.0
    } else {
        // Multiset intersection of the sorted bigram lists.
        let (mut i, mut j, mut common) = (0, 0, 0usize);
        while i < a.len() && j < b.len() {
            match a[i].cmp(&b[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    common += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        2.0 * common as f64 / (a.len() + b.len()) as f64
    };
    let words: Vec<&str> = query.split(' ').filter(|word| !word.is_empty()).collect();
    let title_words: Vec<&str> = title.split(' ').collect();
    let overlap = if words.is_empty() {
        0.0
    } else {
        words.iter().filter(|word| title_words.contains(word)).count() as f64 / words.len() as f64
    };
    dice + overlap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mediawiki_normalisation() {
        #[track_caller]
        fn check(entity: &str, expected: &str) {
            assert_eq!(mediawiki_title(entity), expected, "{entity:?}");
        }
        check("the_beatles", "The beatles");
        check("  Colorado   orogeny ", "Colorado orogeny");
        check("Colorado\u{a0}orogeny", "Colorado orogeny");
        check("éire", "Éire");
        check("iPhone", "IPhone");
        check("", "");
        check("__", "");
        assert_eq!(folded_title("VIVA_media"), "viva media");
    }

    #[test]
    fn possible_titles() {
        assert!(is_possible_title("Mercury (planet)"));
        assert!(!is_possible_title("[Mercury]"));
        assert!(!is_possible_title("a|b"));
        assert!(!is_possible_title("  "));
    }

    #[test]
    fn keys_ignore_case_and_punctuation() {
        assert_eq!(title_key("Arthur's  Magazine!"), "arthurs magazine");
        assert_eq!(title_key("Viva (UK and Ireland)"), "viva uk and ireland");
        assert_eq!(title_key("ProSiebenSat.1 Media"), "prosiebensat1 media");
        assert_eq!(
            title_key("Up the Shambles – Live in Manchester"),
            "up the shambles live in manchester"
        );
        assert_eq!(title_key("Parallel 36°30′ north"), "parallel 36 30 north");
        assert_eq!(title_key("  "), "");
    }

    #[test]
    fn similarity_prefers_the_title_one_typo_away() {
        let query = title_key("Colorado orogenyy");
        let near = title_similarity(&query, &title_key("Colorado orogeny"));
        let far = title_similarity(&query, &title_key("Colorado"));
        assert!(near > far, "{near} <= {far}");
        assert_eq!(title_similarity("", ""), 0.0);
    }
}
