//! Reading the answer out of a CoT or Standard completion, and FEVER's labels.
//!
//! The ReAct repository published the CoT and Standard prompts but no code that reads their
//! completions: these are our rules, the same in both profiles. A completion with no answer is
//! a run without an answer, never an error.

use crate::agent::fewshot::Format;
use crate::base::task::Task;

/// What kind of answer the task takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerKind {
    /// HotpotQA: free text, scored by the official EM/F1.
    Text,
    /// FEVER: one of `SUPPORTS`, `REFUTES`, `NOT ENOUGH INFO`.
    Label,
}

impl AnswerKind {
    /// The kind of answer `task` takes.
    pub fn of_task(task: Task) -> AnswerKind {
        match task {
            Task::Fever => AnswerKind::Label,
            Task::HotpotQa => AnswerKind::Text,
        }
    }
}

/// The task whose inputs carry `input_label`, the one rule for examples: FEVER's claims are
/// `Claim`s, every other label asks a HotpotQA question.
pub fn task_of_input(input_label: &str) -> Task {
    match input_label {
        "Claim" => Task::Fever,
        _ => Task::HotpotQa,
    }
}

/// What a completion says: its reasoning (CoT) and its answer.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReadCompletion {
    pub thought: Option<String>,
    pub answer: Option<String>,
}

/// Reads a completion of a prompt in `format` (`Cot`: it continues after `Thought:`;
/// `Standard`: after `Answer:`).
///
/// CoT: the answer is the first line that starts with `Answer:` (a model's `**Answer:**`
/// included) or reads `Action: Finish[…]` (Reflexion's CoT format); the thought is what comes before it, without a repeated `Thought:` label. With no
/// such line, the answer is what follows the last "so the answer is" up to the end of its line
/// (without a closing period or quotes). Standard: the first line that is not blank, without a
/// repeated `Answer:` label. An empty answer is no answer. FEVER answers are normalised to its
/// three labels ([`fever_label`]).
pub fn read_completion(completion: &str, format: Format, kind: AnswerKind) -> ReadCompletion {
    let read = match format {
        Format::Standard => ReadCompletion {
            thought: None,
            answer: completion
                .lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .map(|line| strip_label(line, "Answer:").unwrap_or(line).trim().to_owned()),
        },
        _ => read_cot(completion),
    };
    let answer = read
        .answer
        .filter(|answer| !answer.is_empty())
        .map(|answer| match kind {
            AnswerKind::Text => answer,
            AnswerKind::Label => fever_label(&answer),
        });
    ReadCompletion { answer, ..read }
}

fn read_cot(completion: &str) -> ReadCompletion {
    let lines: Vec<&str> = completion.lines().collect();
    // `Answer: …`, or `Action: Finish[…]` as Reflexion's CoT examples end.
    let answer_line = lines.iter().enumerate().find_map(|(idx, line)| {
        let line = line.trim();
        strip_label(line, "Answer:")
            .or_else(|| finish_argument(line))
            .map(|answer| (idx, answer))
    });
    let (thought_lines, answer) = match answer_line {
        Some((idx, answer)) => (&lines[..idx], Some(answer.trim().to_owned())),
        None => (&lines[..], so_the_answer_is(completion)),
    };
    let thought = crate::agent::action::joined_lines(thought_lines);
    let thought = strip_label(&thought, "Thought:")
        .unwrap_or(&thought)
        .trim()
        .to_owned();
    ReadCompletion {
        thought: (!thought.is_empty()).then_some(thought),
        answer,
    }
}

/// `line` after `label` (case-insensitive, markdown emphasis around the label allowed).
fn strip_label<'l>(line: &'l str, label: &str) -> Option<&'l str> {
    let unwrapped = line.trim_start_matches(['*', '_', '#', ' ']);
    let head = unwrapped.get(..label.len())?;
    if !head.eq_ignore_ascii_case(label) {
        return None;
    }
    Some(unwrapped[label.len()..].trim_start_matches(['*', '_']))
}

/// The argument of an `Action: Finish[…]` line (Reflexion's CoT format).
fn finish_argument(line: &str) -> Option<&str> {
    strip_label(line, "Action:")?
        .trim()
        .strip_prefix("Finish[")?
        .strip_suffix(']')
}

/// What follows the last "so the answer is" (case-insensitive) to the end of its line.
fn so_the_answer_is(completion: &str) -> Option<String> {
    const PHRASE: &str = "so the answer is";
    let lowered = completion.to_ascii_lowercase();
    let start = lowered.rfind(PHRASE)? + PHRASE.len();
    let rest = completion.get(start..)?;
    let line = rest.lines().next().unwrap_or("").trim();
    let line = line.strip_prefix(':').unwrap_or(line).trim();
    let answer = line
        .trim_end_matches('.')
        .trim_matches(['"', '\'', '`', '*'])
        .trim();
    (!answer.is_empty()).then(|| answer.to_owned())
}

/// A FEVER answer as one of its three labels: `SUPPORTS` (also "supported", "Supports."),
/// `REFUTES` ("refuted"), `NOT ENOUGH INFO` ("not enough information"). Anything else is kept
/// as written, and scores wrong.
pub fn fever_label(answer: &str) -> String {
    let letters: String = answer
        .chars()
        .map(|c| {
            if c.is_alphabetic() {
                c.to_ascii_uppercase()
            } else {
                ' '
            }
        })
        .collect();
    let words: Vec<&str> = letters.split_whitespace().collect();
    match words.as_slice() {
        ["SUPPORTS" | "SUPPORTED" | "SUPPORT"] => "SUPPORTS".to_owned(),
        ["REFUTES" | "REFUTED" | "REFUTE"] => "REFUTES".to_owned(),
        ["NOT", "ENOUGH", ..] => "NOT ENOUGH INFO".to_owned(),
        _ => answer.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(
        completion: &str,
        format: Format,
        kind: AnswerKind,
        thought: Option<&str>,
        answer: Option<&str>,
    ) {
        let read = read_completion(completion, format, kind);
        assert_eq!(read.answer.as_deref(), answer, "answer of {completion:?}");
        if format == Format::Cot {
            assert_eq!(read.thought.as_deref(), thought, "thought of {completion:?}");
        }
    }

    #[test]
    fn cot_completions() {
        use AnswerKind::{Label, Text};
        use Format::Cot;
        // The repository's own example, as a model continues it after `Thought:`.
        check(
            " Let's think step by step. Milhouse was named after U.S. president Richard Nixon, so the answer is Richard Nixon.\nAnswer: Richard Nixon",
            Cot,
            Text,
            Some(
                "Let's think step by step. Milhouse was named after U.S. president Richard Nixon, so the answer is Richard Nixon.",
            ),
            Some("Richard Nixon"),
        );
        // No `Answer:` line: the last "so the answer is".
        check(
            " Let's think. So the answer is Paris, or so the answer is \"Lyon\".\n",
            Cot,
            Text,
            Some("Let's think. So the answer is Paris, or so the answer is \"Lyon\"."),
            Some("Lyon"),
        );
        // Reflexion's CoT format: the thought, then `Action: Finish[…]`.
        check(
            " Let's think step by step. It was started in 1844, so the answer is Arthur's Magazine.\nAction: Finish[Arthur's Magazine]\n",
            Cot,
            Text,
            Some("Let's think step by step. It was started in 1844, so the answer is Arthur's Magazine."),
            Some("Arthur's Magazine"),
        );
        // A chat model repeating the label, markdown, and blank lines.
        check(
            "Thought: It is 1844.\n\n**Answer:** 1844\n",
            Cot,
            Text,
            Some("It is 1844."),
            Some("1844"),
        );
        // No answer at all, and an empty one.
        check(" I cannot tell.", Cot, Text, Some("I cannot tell."), None);
        check(" Hm.\nAnswer:   ", Cot, Text, Some("Hm."), None);
        // FEVER, with the repository's unspaced `Answer:REFUTES`.
        check(
            " Hawkins, not Bloomington.\nAnswer:REFUTES",
            Cot,
            Label,
            Some("Hawkins, not Bloomington."),
            Some("REFUTES"),
        );
        check(
            " Unsure.\nAnswer: Not enough information.",
            Cot,
            Label,
            Some("Unsure."),
            Some("NOT ENOUGH INFO"),
        );
    }

    #[test]
    fn standard_completions() {
        use AnswerKind::{Label, Text};
        use Format::Standard;
        check(
            " Arthur's Magazine\nQuestion: next",
            Standard,
            Text,
            None,
            Some("Arthur's Magazine"),
        );
        check("\n\n  Answer: Yes ", Standard, Text, None, Some("Yes"));
        check("   \n", Standard, Text, None, None);
        check(" Supported", Standard, Label, None, Some("SUPPORTS"));
        check(" refutes.", Standard, Label, None, Some("REFUTES"));
        check(" maybe", Standard, Label, None, Some("maybe"));
    }
}
