//! `Prompt`: the fixed part of every request — instruction header, registered tools, few-shot examples.

use std::sync::OnceLock;

use crate::agent::calls::{FunctionSet, Transcript, system_message};
use crate::agent::fewshot::{Fewshot, Format, Header, without_thoughts};
use crate::agent::scratchpad::Scratchpad;
use crate::base::profile::Profile;
use crate::tools::Toolbox;

/// The ReAct notebook's instruction, byte for byte (note the space before the first newline).
pub const PAPER_INSTRUCTION: &str = "Solve a question answering task with interleaving Thought, Action, Observation steps. Thought can reason about the current situation, and Action can be three types: \n(1) Search[entity], which searches the exact entity on Wikipedia and returns the first paragraph if it exists. If not, it will return some similar entities to search.\n(2) Lookup[keyword], which returns the next sentence containing keyword in the current passage.\n(3) Finish[answer], which returns the answer and finishes the task.\nHere are some examples.\n";

const INTRO: &str = "Solve a question answering task with interleaving Thought, Action, Observation steps. Thought can reason about the current situation, and Action can be";
/// The `default` profile's Act instruction: ReAct's without thoughts.
const ACT_INTRO: &str =
    "Solve a question answering task with interleaving Action, Observation steps. Action can be";
/// The `default` profile's CoT instruction (the repository published none: the `paper` profile
/// sends the examples alone).
pub const COT_INSTRUCTION: &str = "Answer the question. Think step by step on a line starting with `Thought:`, then give the short answer alone on a line starting with `Answer:`.\nHere are some examples.\n";
/// The `default` profile's Standard instruction (the repository published none).
pub const STANDARD_INSTRUCTION: &str = "Answer the question with a short answer alone on a line starting with `Answer:`.\nHere are some examples.\n";
const BUILTIN_ACTIONS: [&str; 3] = [
    "Search[entity], which searches the exact entity on Wikipedia and returns the first paragraph if it exists. If not, it will return some similar entities to search.",
    "Lookup[keyword], which returns the next sentence containing keyword in the current passage.",
    "Finish[answer], which returns the answer and finishes the task.",
];

/// The text every step of every question starts with. Built once, shared by all questions.
#[derive(Debug, Clone)]
pub struct Prompt {
    text: String,
    input_label: String,
    fewshot: String,
    format: Format,
    /// The date a `Today is {date}.` line states (`--today`), when the prompt has one.
    today: Option<String>,
    /// What `--api tools` is built from (`default` profile only): the examples, the tools, the date.
    tools_source: Option<ToolsSource>,
    /// What `--api tools` sends instead: the functions, and the system message with the same
    /// examples as tool-call transcripts. Built by the first [`Prompt::tools`]: a text run (and
    /// each of a replay's hundreds of text runs) never pays for it.
    tools: OnceLock<Option<ToolsPrompt>>,
}

#[derive(Debug, Clone)]
struct ToolsSource {
    examples: String,
    toolbox: Toolbox,
    today: Option<String>,
}

/// The fixed part of a tools conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolsPrompt {
    pub functions: FunctionSet,
    pub system: String,
}

/// What the header says beyond the paper's instruction (`default` profile only).
#[derive(Debug, Clone, Default)]
pub struct PromptOptions {
    /// A `Today is {date}.` line so the model does not argue with current facts.
    pub today: Option<String>,
}

impl Prompt {
    /// Renders the prompt. The `paper` profile ignores tools and options: its header is the notebook's.
    pub fn new(profile: Profile, fewshot: &Fewshot, toolbox: &Toolbox, options: &PromptOptions) -> Prompt {
        let mut text = String::new();
        let format = fewshot.format;
        let mut today = None;
        match (fewshot.header, profile, format) {
            (Header::InExamples, _, _) => {}
            (Header::QuestionAnswering, Profile::Paper, Format::React) => text.push_str(PAPER_INSTRUCTION),
            // The repository published no instruction for the other methods: their examples alone.
            (Header::QuestionAnswering, Profile::Paper, _) => {}
            (Header::QuestionAnswering, Profile::Default, Format::Cot | Format::Standard) => {
                let instruction = match format {
                    Format::Cot => COT_INSTRUCTION,
                    _ => STANDARD_INSTRUCTION,
                };
                let (first, rest) = instruction.split_once('\n').unwrap_or((instruction, ""));
                text.push_str(first);
                text.push('\n');
                if let Some(date) = &options.today {
                    text.push_str(&format!("Today is {date}.\n"));
                    today = Some(date.clone());
                }
                text.push_str(rest);
            }
            (Header::QuestionAnswering, Profile::Default, Format::React | Format::Act) => {
                let descriptions: Vec<&str> = BUILTIN_ACTIONS
                    .into_iter()
                    .chain(toolbox.tools().map(|tool| tool.description()))
                    .collect();
                text.push_str(if format == Format::Act { ACT_INTRO } else { INTRO });
                text.push(' ');
                text.push_str(&count_word(descriptions.len()));
                text.push_str(" types: \n");
                for (idx, description) in descriptions.iter().enumerate() {
                    text.push_str(&format!("({}) {description}\n", idx + 1));
                }
                if let Some(date) = &options.today {
                    text.push_str(&format!("Today is {date}.\n"));
                    today = Some(date.clone());
                }
                text.push_str("Here are some examples.\n");
            }
        }
        text.push_str(&fewshot.examples);
        if profile == Profile::Default && matches!(format, Format::React | Format::Act) {
            for examples in toolbox.tools().filter_map(|tool| tool.examples()) {
                let examples = match format {
                    Format::Act => std::borrow::Cow::Owned(without_thoughts(examples)),
                    _ => std::borrow::Cow::Borrowed(examples),
                };
                if !text.ends_with("\n\n") && !examples.starts_with('\n') {
                    text.push('\n');
                }
                text.push_str(&examples);
                if !text.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        let tools_source = (profile == Profile::Default && format == Format::React).then(|| ToolsSource {
            examples: fewshot.examples.clone(),
            toolbox: toolbox.clone(),
            today: options.today.clone(),
        });
        Prompt {
            text,
            input_label: fewshot.input_label.clone(),
            fewshot: fewshot.name.clone(),
            today,
            format,
            tools_source,
            tools: OnceLock::new(),
        }
    }

    /// A prompt whose text is made elsewhere (Reflexion's trial prompt), over `fewshot`'s
    /// examples; it offers no tools conversation.
    pub fn with_text(text: String, fewshot: &Fewshot) -> Prompt {
        Prompt {
            text,
            input_label: fewshot.input_label.clone(),
            fewshot: fewshot.name.clone(),
            format: fewshot.format,
            today: None,
            tools_source: None,
            tools: OnceLock::new(),
        }
    }

    /// The tools conversation's fixed part; `None` in the `paper` profile, which knows no tools.
    pub fn tools(&self) -> Option<&ToolsPrompt> {
        self.tools
            .get_or_init(|| {
                let source = self.tools_source.as_ref()?;
                let toolbox = &source.toolbox;
                let functions = FunctionSet::new(toolbox.tools().map(|tool| tool.name()), toolbox);
                let transcripts: Vec<Transcript> = std::iter::once(source.examples.as_str())
                    .chain(toolbox.tools().filter_map(|tool| tool.examples()))
                    .map(|examples| Transcript::of(examples, &functions))
                    .collect();
                let system = system_message(&transcripts, &functions, source.today.as_deref());
                Some(ToolsPrompt { functions, system })
            })
            .as_ref()
    }

    /// The label of the task's input: `Question` or `Claim`.
    pub fn input_label(&self) -> &str {
        &self.input_label
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Where the examples came from: `hotpotqa`, `fever` or a file path.
    pub fn fewshot(&self) -> &str {
        &self.fewshot
    }

    /// The date the prompt states (`--today`), which runs record so the prompt can be rebuilt.
    pub fn today(&self) -> Option<&str> {
        self.today.as_deref()
    }

    /// How the examples lay out a solution, and so what each call asks the model for.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The whole request of a one-completion method (CoT, Standard): the scratchpad of the
    /// question, then the label the model continues after (`Thought:` or `Answer:`).
    pub fn answer_request(&self, question: &str) -> String {
        let mut text = self.scratchpad(question).text().to_owned();
        text.push_str(match self.format {
            Format::Cot => "Thought:",
            _ => "Answer:",
        });
        text
    }

    /// Starts the scratchpad of one question: the prompt, then `Question: {question}` on its own line.
    pub fn scratchpad(&self, question: &str) -> Scratchpad {
        let mut text = String::with_capacity(self.text.len() + question.len() + 4096);
        text.push_str(&self.text);
        text.push_str(&self.input_label);
        text.push_str(": ");
        text.push_str(question);
        text.push('\n');
        Scratchpad::new(text)
    }
}

fn count_word(n: usize) -> String {
    const WORDS: [&str; 11] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    ];
    WORDS
        .get(n)
        .map_or_else(|| n.to_string(), |word| (*word).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_prompt_is_the_notebooks() {
        let prompt = Prompt::new(
            Profile::Paper,
            &Fewshot::hotpotqa(),
            &Toolbox::default(),
            &PromptOptions::default(),
        );
        assert!(prompt.text().starts_with(PAPER_INSTRUCTION));
        assert_eq!(
            prompt.text().len(),
            PAPER_INSTRUCTION.len() + Fewshot::hotpotqa().examples.len()
        );
    }

    #[test]
    fn default_prompt_without_tools_equals_the_papers() {
        let fewshot = Fewshot::hotpotqa();
        let paper = Prompt::new(
            Profile::Paper,
            &fewshot,
            &Toolbox::default(),
            &PromptOptions::default(),
        );
        let default = Prompt::new(
            Profile::Default,
            &fewshot,
            &Toolbox::default(),
            &PromptOptions::default(),
        );
        assert_eq!(paper.text(), default.text());
        // Only the `default` profile offers the tools conversation.
        assert!(paper.tools().is_none() && default.tools().is_some());
        let today = PromptOptions {
            today: Some("2026-11-22".into()),
        };
        let dated = Prompt::new(Profile::Default, &fewshot, &Toolbox::default(), &today);
        assert!(
            dated
                .text()
                .contains("finishes the task.\nToday is 2026-11-22.\nHere are some examples.\n")
        );
    }

    #[test]
    fn scratchpad_starts_with_the_question_line() {
        let prompt = Prompt::new(
            Profile::Paper,
            &Fewshot::fever(),
            &Toolbox::default(),
            &PromptOptions::default(),
        );
        let scratchpad = prompt.scratchpad("The sky is green.");
        assert!(
            scratchpad
                .text()
                .ends_with("Finish[NOT ENOUGH INFO]\n\nClaim: The sky is green.\n")
        );
    }
}
