//! The few-shot examples of the text format rewritten as worked tool-call transcripts, and the
//! system message of a `--api tools` conversation.
//!
//! The transcripts are generated from the very examples the text format shows (the bundled
//! `fewshot/*.txt` or a user's file), line for line, so that the two formats see the same
//! worked questions: `Thought n:` becomes the reply's text (`Assistant:`), `Action n: Search[X]`
//! the call `search({"entity": "X"})` (`Call:`), `Observation n:` its result (`Result:`). The
//! bundled ones are also kept, generated, as `fewshot/*.tools.txt` for reading (a test holds them
//! equal to what this module writes).

use crate::agent::action::ActionGrammar;
use crate::base::profile::Profile;

use crate::agent::calls::{FunctionKind, FunctionSet};

/// A few-shot file in transcript form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transcript {
    /// The text before the first example (the FEVER prompt's instruction), trimmed.
    pub preamble: String,
    /// The examples, one block per question, separated by blank lines.
    pub examples: String,
}

impl Transcript {
    /// Rewrites `text`, examples in the numbered `Question:`/`Thought n:`/`Action n:`/
    /// `Observation n:` format, with `functions` naming the calls. An action that is not one of
    /// the functions is kept as written.
    pub fn of(text: &str, functions: &FunctionSet) -> Transcript {
        let tool_names = functions
            .functions()
            .iter()
            .filter_map(|function| match &function.kind {
                FunctionKind::Tool(name) => Some(name.clone()),
                _ => None,
            });
        let grammar = ActionGrammar::new(Profile::Default, tool_names);
        let mut preamble = String::new();
        let mut blocks: Vec<Vec<String>> = Vec::new();
        for line in text.lines() {
            let is_input = ["Question:", "Claim:"]
                .iter()
                .any(|label| line.starts_with(label));
            if is_input {
                blocks.push(vec![line.trim_end().to_owned()]);
                continue;
            }
            let Some(block) = blocks.last_mut() else {
                preamble.push_str(line);
                preamble.push('\n');
                continue;
            };
            if line.trim().is_empty() {
                continue;
            }
            let rewritten = match numbered(line) {
                Some(("Thought", rest)) => format!("Assistant: {rest}"),
                Some(("Action", rest)) => {
                    let call = grammar
                        .parse(rest)
                        .ok()
                        .and_then(|action| functions.call_of(&action))
                        .map(|(function, arguments)| format!("{}({arguments})", function.name));
                    format!("Call: {}", call.as_deref().unwrap_or(rest))
                }
                Some(("Observation", rest)) => format!("Result: {rest}"),
                _ => line.trim_end().to_owned(),
            };
            block.push(rewritten);
        }
        let examples: Vec<String> = blocks.iter().map(|block| block.join("\n") + "\n").collect();
        Transcript {
            preamble: preamble.trim().to_owned(),
            examples: examples.join("\n"),
        }
    }
}

/// `Thought 3: text` → (`Thought`, `text`).
fn numbered(line: &str) -> Option<(&'static str, &str)> {
    ["Thought", "Action", "Observation"]
        .into_iter()
        .find_map(|label| {
            let rest = line.strip_prefix(label)?.strip_prefix(' ')?;
            let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits == 0 {
                return None;
            }
            let rest = rest[digits..].strip_prefix(':')?;
            Some((label, rest.strip_prefix(' ').unwrap_or(rest)))
        })
}

/// The system message of a tools conversation: the task (the examples' own instruction when they
/// carry one, else question answering), how to work with the functions, the functions' contracts,
/// the date when given, and the worked examples.
pub fn system_message(examples: &[Transcript], functions: &FunctionSet, today: Option<&str>) -> String {
    let mut text = String::new();
    let preamble = examples
        .first()
        .map_or("", |transcript| transcript.preamble.as_str());
    if preamble.is_empty() {
        text.push_str("Solve a question answering task by calling functions.");
    } else {
        text.push_str(preamble);
        text.push_str(" Work by calling functions.");
    }
    text.push_str(
        " Before each call, reason about the current situation in the text of your reply; then call one function. Each call's result comes back to you before you go on. The functions:\n",
    );
    for (idx, function) in functions.functions().iter().enumerate() {
        text.push_str(&format!(
            "({}) {}({}): {}\n",
            idx + 1,
            function.name,
            function.parameter,
            function.description
        ));
    }
    if let Some(today) = today {
        text.push_str(&format!("Today is {today}.\n"));
    }
    text.push_str(
        "Here are some examples. In each, \"Assistant:\" is the text of a reply, \"Call:\" the function it calls, and \"Result:\" what the call returned.\n\n",
    );
    let blocks: Vec<&str> = examples
        .iter()
        .map(|transcript| transcript.examples.as_str())
        .filter(|examples| !examples.is_empty())
        .collect();
    text.push_str(&blocks.join("\n"));
    text
}
