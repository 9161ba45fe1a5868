//! `Fewshot`: the worked examples placed before the question — the bundled prompts of the ReAct
//! repository (one set per method and task) or a user's file — and their [`Format`].

use std::fmt;
use std::path::{Path, PathBuf};

use crate::base::profile::Profile;

/// The ReAct paper's HotpotQA examples (`webthink_simple6` of `prompts_naive.json`), verbatim.
const HOTPOTQA: &str = include_str!("../../fewshot/hotpotqa.txt");
/// The ReAct paper's FEVER examples (`webthink_simple3` of `fever.json`), verbatim.
const FEVER: &str = include_str!("../../fewshot/fever.txt");
/// The other methods' examples, verbatim: `webact_simple6`, `cotqa_simple6`, `webqa_simple6` of
/// `prompts_naive.json`; `webact_simple3`, `cotqa_simple3`, `webqa_simple3` of `fever.json`.
const HOTPOTQA_ACT: &str = include_str!("../../fewshot/hotpotqa.act.txt");
const HOTPOTQA_COT: &str = include_str!("../../fewshot/hotpotqa.cot.txt");
const HOTPOTQA_STANDARD: &str = include_str!("../../fewshot/hotpotqa.standard.txt");
const FEVER_ACT: &str = include_str!("../../fewshot/fever.act.txt");
const FEVER_COT: &str = include_str!("../../fewshot/fever.cot.txt");
const FEVER_STANDARD: &str = include_str!("../../fewshot/fever.standard.txt");

/// How the examples lay out a solution: what a method's prompt shows the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `Thought n:` / `Action n:` / `Observation n:` (ReAct).
    React,
    /// `Action n:` / `Observation n:`, no thoughts (Act).
    Act,
    /// `Thought: Let's think step by step. …` then `Answer: …` (CoT, CoT-SC).
    Cot,
    /// `Answer: …` alone (Standard).
    Standard,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::React => "ReAct (`Thought 1:` / `Action 1:` / `Observation 1:` lines)",
            Format::Act => "Act (`Action 1:` / `Observation 1:` lines, no thoughts)",
            Format::Cot => "CoT (`Thought:` then `Answer:` lines)",
            Format::Standard => "Standard (`Answer:` lines alone)",
        }
    }

    /// The format of a text of examples, by the lines it holds.
    fn of(text: &str) -> Option<Format> {
        let has_line = |label: &str| text.lines().any(|line| line.starts_with(label));
        if text.contains("Thought 1:") {
            Some(Format::React)
        } else if has_line("Action 1:") {
            Some(Format::Act)
        } else if has_line("Thought:") && has_line("Answer:") {
            Some(Format::Cot)
        } else if has_line("Answer:") {
            Some(Format::Standard)
        } else {
            None
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

use crate::base::task::Task;

/// Few-shot examples and the label the task's inputs carry (`Question` or `Claim`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fewshot {
    /// Where the examples came from (`hotpotqa`, `fever` or a file path), for messages and run files.
    pub name: String,
    pub examples: String,
    /// The word before the task input, as in the examples: `Question` for HotpotQA, `Claim` for FEVER.
    pub input_label: String,
    pub header: Header,
    pub format: Format,
}

/// The instruction placed before the examples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header {
    /// The ReAct notebook's "Solve a question answering task ..." instruction listing the actions.
    QuestionAnswering,
    /// No instruction: the examples carry their own (the FEVER prompt does).
    InExamples,
}

#[derive(Debug, thiserror::Error)]
pub enum FewshotError {
    #[error("cannot read few-shot file `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("few-shot file `{}` holds no example: expected lines like `Question: ...` and `Thought 1: ...`", path.display())]
    NoExample { path: PathBuf },
    #[error("few-shot file `{}` is in the {found} format, but {needed_by} needs the {needed} format", path.display())]
    WrongFormat {
        path: PathBuf,
        found: Format,
        needed: Format,
        /// What needs it: `--method act`, the CoT-SC phase of `--method react-then-cot-sc`.
        needed_by: String,
    },
}

impl Fewshot {
    /// The six HotpotQA examples the ReAct paper uses.
    pub fn hotpotqa() -> Fewshot {
        Fewshot {
            name: "hotpotqa".to_owned(),
            examples: HOTPOTQA.to_owned(),
            input_label: "Question".to_owned(),
            header: Header::QuestionAnswering,
            format: Format::React,
        }
    }

    /// The three FEVER examples the ReAct paper uses; their first line is the instruction.
    pub fn fever() -> Fewshot {
        Fewshot {
            name: "fever".to_owned(),
            examples: FEVER.to_owned(),
            input_label: "Claim".to_owned(),
            header: Header::InExamples,
            format: Format::React,
        }
    }

    /// The bundled examples of `task` in `format`. The `paper` profile takes the repository's
    /// strings verbatim; the `default` profile cleans the other methods' examples
    /// ([`clean_examples`]) and keeps ReAct's verbatim, as every recorded run saw them.
    pub fn bundled(task: Task, format: Format, profile: Profile) -> Fewshot {
        let examples = match (task, format) {
            (Task::HotpotQa, Format::React) => return Fewshot::hotpotqa(),
            (Task::Fever, Format::React) => return Fewshot::fever(),
            (Task::HotpotQa, Format::Act) => HOTPOTQA_ACT,
            (Task::HotpotQa, Format::Cot) => HOTPOTQA_COT,
            (Task::HotpotQa, Format::Standard) => HOTPOTQA_STANDARD,
            (Task::Fever, Format::Act) => FEVER_ACT,
            (Task::Fever, Format::Cot) => FEVER_COT,
            (Task::Fever, Format::Standard) => FEVER_STANDARD,
        };
        let (input_label, header) = match task {
            Task::HotpotQa => ("Question", Header::QuestionAnswering),
            Task::Fever => ("Claim", Header::InExamples),
        };
        Fewshot {
            name: task.name().to_owned(),
            examples: match profile {
                Profile::Paper => examples.to_owned(),
                Profile::Default => clean_examples(examples),
            },
            input_label: input_label.to_owned(),
            header,
            format,
        }
    }

    /// These examples in `format`: themselves, or ReAct examples without their thoughts for Act
    /// (the repository's Act examples are exactly its ReAct examples without the `Thought n:`
    /// lines). `needed_by` names what asks, for the error.
    pub fn in_format(self, format: Format, needed_by: &str) -> Result<Fewshot, FewshotError> {
        match (self.format, format) {
            (found, needed) if found == needed => Ok(self),
            (Format::React, Format::Act) => Ok(Fewshot {
                examples: without_thoughts(&self.examples),
                format: Format::Act,
                ..self
            }),
            (found, needed) => Err(FewshotError::WrongFormat {
                path: PathBuf::from(&self.name),
                found,
                needed,
                needed_by: needed_by.to_owned(),
            }),
        }
    }

    /// A user's examples in the numbered format. The input label is the one the examples use
    /// (`Claim:` lines make it a FEVER-style prompt, which carries its own instruction).
    pub fn from_file(path: &Path) -> Result<Fewshot, FewshotError> {
        let text = std::fs::read_to_string(path).map_err(|source| FewshotError::Read {
            path: path.to_owned(),
            source,
        })?;
        Fewshot::from_text(path.display().to_string(), text).ok_or_else(|| FewshotError::NoExample {
            path: path.to_owned(),
        })
    }

    fn from_text(name: String, text: String) -> Option<Fewshot> {
        let label_of = |line: &str| {
            ["Question", "Claim"]
                .into_iter()
                .find(|label| line.strip_prefix(label).is_some_and(|rest| rest.starts_with(':')))
        };
        let input_label = text.lines().find_map(label_of)?;
        let format = Format::of(&text)?;
        let mut examples = text;
        if !examples.ends_with('\n') {
            examples.push('\n');
        }
        let header = match input_label {
            "Claim" => Header::InExamples,
            _ => Header::QuestionAnswering,
        };
        Some(Fewshot {
            name,
            examples,
            input_label: input_label.to_owned(),
            header,
            format,
        })
    }
}

/// ReAct examples as Act examples: every `Thought n:` line dropped.
pub fn without_thoughts(examples: &str) -> String {
    let mut kept = String::with_capacity(examples.len());
    for line in examples.split_inclusive('\n') {
        let is_thought = line
            .strip_prefix("Thought ")
            .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
        if !is_thought {
            kept.push_str(line);
        }
    }
    kept
}

/// The `default` profile's cleaning of the repository's examples for the methods other than
/// ReAct: mojibake repaired (text that was UTF-8 read as Latin-1, `1898 â\u{80}\u{93} August` →
/// `1898 – August`; a stray C1 control character left of a broken one is dropped), spaces at
/// the ends of lines removed, and `Answer:REFUTES` spaced as the other answers are.
pub fn clean_examples(examples: &str) -> String {
    let mut cleaned = String::with_capacity(examples.len());
    for line in examples.split_inclusive('\n') {
        let (text, newline) = match line.strip_suffix('\n') {
            Some(text) => (text, "\n"),
            None => (line, ""),
        };
        let mut text = repair_mojibake(text.trim_end_matches(' '));
        if let Some(answer) = text.strip_prefix("Answer:")
            && !answer.starts_with(' ')
            && !answer.is_empty()
        {
            text = format!("Answer: {answer}");
        }
        cleaned.push_str(&text);
        cleaned.push_str(newline);
    }
    cleaned
}

/// Runs of U+0080..U+00FF that are the Latin-1 reading of UTF-8 bytes, decoded back; C1 controls
/// (U+0080..U+009F) that do not decode are dropped.
fn repair_mojibake(text: &str) -> String {
    let is_latin1_high = |c: char| ('\u{80}'..='\u{ff}').contains(&c);
    if !text.chars().any(|c| ('\u{80}'..='\u{9f}').contains(&c)) {
        return text.to_owned();
    }
    let mut repaired = String::with_capacity(text.len());
    let mut run: Vec<u8> = Vec::new();
    let flush = |run: &mut Vec<u8>, repaired: &mut String| {
        match std::str::from_utf8(run) {
            Ok(decoded) => repaired.push_str(decoded),
            Err(_) => repaired.extend(
                run.iter()
                    .map(|&byte| char::from(byte))
                    .filter(|c| !('\u{80}'..='\u{9f}').contains(c)),
            ),
        }
        run.clear();
    };
    for c in text.chars() {
        if is_latin1_high(c) {
            // invariant: the char is at most U+00FF, so it fits a byte
            run.push(u8::try_from(u32::from(c)).expect("a Latin-1 char fits a byte"));
        } else {
            flush(&mut run, &mut repaired);
            repaired.push(c);
        }
    }
    flush(&mut run, &mut repaired);
    repaired
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bundled_prompts_are_the_papers() {
        let hotpotqa = Fewshot::hotpotqa();
        assert_eq!(hotpotqa.examples.matches("\nQuestion: ").count(), 6);
        assert!(
            hotpotqa
                .examples
                .starts_with("\nQuestion: What is the elevation range")
        );
        assert!(hotpotqa.examples.ends_with("Action 3: Finish[yes]\n"));
        let fever = Fewshot::fever();
        assert_eq!(fever.examples.matches("\nClaim: ").count(), 3);
        assert_eq!(fever.input_label, "Claim");
    }

    #[test]
    fn user_examples_need_an_input_and_a_thought() {
        let text = "Question: 2+2?\nThought 1: easy.\nAction 1: Finish[4]".to_owned();
        let fewshot = Fewshot::from_text("mine".into(), text).unwrap();
        assert_eq!(fewshot.input_label, "Question");
        assert!(fewshot.examples.ends_with("Finish[4]\n"));
        assert_eq!(Fewshot::from_text("x".into(), "Thought 1: hm".into()), None);
        let claim = "Claim: Sky is blue.\nThought 1: yes\nAction 1: Finish[SUPPORTS]\n";
        assert_eq!(
            Fewshot::from_text("c".into(), claim.into()).unwrap().header,
            Header::InExamples
        );
    }
}
