//! `AnswerScore`: exact match and F1 exactly as the official HotpotQA evaluation script computes them.

use std::collections::HashMap;

/// Exact match, F1, precision and recall of one prediction against one gold answer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnswerScore {
    pub em: bool,
    pub f1: f64,
    pub precision: f64,
    pub recall: f64,
}

impl AnswerScore {
    /// The score of no answer, or of an attempt not made: wrong in every measure.
    pub const WRONG: AnswerScore = AnswerScore {
        em: false,
        f1: 0.0,
        precision: 0.0,
        recall: 0.0,
    };

    /// `exact_match_score` and `f1_score` of `hotpot_evaluate_v1.py`.
    pub fn new(prediction: &str, gold: &str) -> AnswerScore {
        let prediction = normalize_answer(prediction);
        let gold = normalize_answer(gold);
        let em = prediction == gold;
        let zero = AnswerScore {
            em,
            f1: 0.0,
            precision: 0.0,
            recall: 0.0,
        };
        let special = ["yes", "no", "noanswer"];
        if (special.contains(&prediction.as_str()) || special.contains(&gold.as_str())) && prediction != gold
        {
            return zero;
        }
        let prediction_tokens: Vec<&str> = prediction.split(' ').filter(|t| !t.is_empty()).collect();
        let gold_tokens: Vec<&str> = gold.split(' ').filter(|t| !t.is_empty()).collect();
        let mut gold_counts: HashMap<&str, usize> = HashMap::new();
        for token in &gold_tokens {
            *gold_counts.entry(token).or_default() += 1;
        }
        let mut n_same = 0usize;
        for token in &prediction_tokens {
            if let Some(count) = gold_counts.get_mut(token).filter(|count| **count > 0) {
                *count -= 1;
                n_same += 1;
            }
        }
        if n_same == 0 {
            return zero;
        }
        let precision = n_same as f64 / prediction_tokens.len() as f64;
        let recall = n_same as f64 / gold_tokens.len() as f64;
        let f1 = 2.0 * precision * recall / (precision + recall);
        AnswerScore {
            em,
            f1,
            precision,
            recall,
        }
    }
}

/// Lower-case, drop ASCII punctuation, drop the words a/an/the, squeeze whitespace — in the
/// official order: `white_space_fix(remove_articles(remove_punc(lower(s))))`.
pub fn normalize_answer(text: &str) -> String {
    let lowered = text.to_lowercase();
    let without_punctuation: String = lowered.chars().filter(|c| !c.is_ascii_punctuation()).collect();
    let without_articles = remove_articles(&without_punctuation);
    without_articles
        .split(is_python_whitespace)
        .filter(|word| !word.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// `re.sub(r'\b(a|an|the)\b', ' ', text)`: whole words only, where a word is a run of Unicode
/// alphanumerics and `_` (Python's `\w`).
fn remove_articles(text: &str) -> String {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(is_word) {
        out.push_str(&rest[..start]);
        let word_len = rest[start..]
            .find(|c: char| !is_word(c))
            .unwrap_or(rest.len() - start);
        let word = &rest[start..start + word_len];
        if matches!(word, "a" | "an" | "the") {
            out.push(' ');
        } else {
            out.push_str(word);
        }
        rest = &rest[start + word_len..];
    }
    out.push_str(rest);
    out
}

/// `str.split()` with no argument: Unicode whitespace plus the ASCII separators `\x1c`–`\x1f`.
fn is_python_whitespace(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(prediction: &str, gold: &str, em: bool, f1: f64) {
        let score = AnswerScore::new(prediction, gold);
        assert_eq!(score.em, em, "em of {prediction:?} against {gold:?}");
        assert!(
            (score.f1 - f1).abs() < 1e-9,
            "f1 of {prediction:?} against {gold:?}: {}",
            score.f1
        );
    }

    #[test]
    fn official_metric_vectors() {
        check("Arthur's Magazine", "Arthur's Magazine", true, 1.0);
        check("arthurs magazine", "Arthur's Magazine", true, 1.0);
        check("The Beatles", "Beatles", true, 1.0);
        check("an apple a day", "apple day", true, 1.0);
        check("  Bill   Clinton ", "Bill Clinton", true, 1.0);
        check("Jonny Craig", "Jonny\" Craig", true, 1.0);
        check("yes", "no", false, 0.0);
        check("yes", "yes", true, 1.0);
        check("Yes.", "yes", true, 1.0);
        check("no answer", "noanswer", false, 0.0);
        check("yes it is", "yes", false, 0.0);
        check("President Richard Nixon", "Richard Nixon", false, 0.8);
        check("1,000", "1000", true, 1.0);
        check("Beyoncé", "beyonce", false, 0.0);
        check("Carl Barât", "carl barât", true, 1.0);
        check("“Creed”", "Creed", false, 0.0);
        check("Créed – band", "Créed band", false, 0.8);
        check("theatre", "the atre", false, 0.0);
        check("the cat sat", "cat sat the mat", false, 0.8);
        check("", "Paris", false, 0.0);
        check("the the", "", true, 0.0);
    }

    #[test]
    fn normalization_follows_the_official_order() {
        assert_eq!(normalize_answer("The U.S. Navy"), "us navy");
        assert_eq!(normalize_answer("A-ha"), "aha");
        assert_eq!(normalize_answer("a_b the_c an"), "ab thec");
        assert_eq!(normalize_answer("É  the\u{a0}É"), "é é");
        assert_eq!(normalize_answer("x\u{1f}y"), "x y");
    }
}
