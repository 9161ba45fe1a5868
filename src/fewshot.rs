//! `Fewshot`: the worked examples placed before the question — the bundled ReAct prompts or a user's file.

use std::path::{Path, PathBuf};

/// The ReAct paper's HotpotQA examples (`webthink_simple6` of `prompts_naive.json`), verbatim.
const HOTPOTQA: &str = include_str!("../fewshot/hotpotqa.txt");
/// The ReAct paper's FEVER examples (`webthink_simple3` of `fever.json`), verbatim.
const FEVER: &str = include_str!("../fewshot/fever.txt");

/// Few-shot examples and the label the task's inputs carry (`Question` or `Claim`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fewshot {
    /// Where the examples came from (`hotpotqa`, `fever` or a file path), for messages and run files.
    pub name: String,
    pub examples: String,
    /// The word before the task input, as in the examples: `Question` for HotpotQA, `Claim` for FEVER.
    pub input_label: String,
    pub header: Header,
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
}

impl Fewshot {
    /// The six HotpotQA examples the ReAct paper uses.
    pub fn hotpotqa() -> Fewshot {
        Fewshot {
            name: "hotpotqa".to_owned(),
            examples: HOTPOTQA.to_owned(),
            input_label: "Question".to_owned(),
            header: Header::QuestionAnswering,
        }
    }

    /// The three FEVER examples the ReAct paper uses; their first line is the instruction.
    pub fn fever() -> Fewshot {
        Fewshot {
            name: "fever".to_owned(),
            examples: FEVER.to_owned(),
            input_label: "Claim".to_owned(),
            header: Header::InExamples,
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
        if !text.contains("Thought 1:") {
            return None;
        }
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
        })
    }
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
