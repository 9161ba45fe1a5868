//! `Action`: the nom grammar that reads `Name[argument]` out of a model's completion, in both profiles.

use std::fmt;

use nom::bytes::complete::{tag_no_case, take_while};
use nom::character::complete::{char, digit1, satisfy, space0};
use nom::combinator::{opt, recognize};
use nom::sequence::pair;
use nom::{IResult, Parser};

use crate::base::profile::Profile;

/// What the agent does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Search(String),
    Lookup(String),
    Finish(String),
    /// `think[...]`, which the ReAct environment answers with "Nice thought." (`paper` profile only).
    Think(String),
    /// A registered extra tool, by its canonical name (`Calculate`, `WebSearch`, ...).
    Tool {
        name: String,
        argument: String,
    },
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Search(entity) => write!(f, "Search[{entity}]"),
            Action::Lookup(keyword) => write!(f, "Lookup[{keyword}]"),
            Action::Finish(answer) => write!(f, "Finish[{answer}]"),
            Action::Think(thought) => write!(f, "Think[{thought}]"),
            Action::Tool { name, argument } => write!(f, "{name}[{argument}]"),
        }
    }
}

/// Why a text is not an action. The message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActionError {
    #[error("expected an action such as `Search[entity]`, found `{text}`")]
    NotAnAction { text: String },
    #[error("unknown action `{name}`, expected one of {expected}")]
    UnknownName { name: String, expected: String },
    #[error("expected `[` after `{name}`")]
    MissingBracket { name: String },
    #[error("`{name}[` is never closed: expected `]`")]
    Unclosed { name: String },
    #[error("`{name}[]` needs an argument")]
    EmptyArgument { name: String },
}

/// A completion split into the thought and the text of its action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThoughtAction {
    pub thought: String,
    /// `None` when the completion holds no action: the agent then makes the fallback call.
    pub action: Option<String>,
}

/// The actions a run accepts, and the rules it reads them by.
#[derive(Debug, Clone)]
pub struct ActionGrammar {
    profile: Profile,
    /// Canonical names: Search, Lookup, Finish, then the registered tools.
    names: Vec<String>,
}

impl ActionGrammar {
    pub fn new(profile: Profile, tool_names: impl IntoIterator<Item = String>) -> ActionGrammar {
        let mut names: Vec<String> = ["Search", "Lookup", "Finish"].map(String::from).into();
        if profile == Profile::Default {
            names.extend(tool_names);
        }
        ActionGrammar { profile, names }
    }

    pub fn profile(&self) -> Profile {
        self.profile
    }

    /// The registered extra tools, by canonical name (recorded in run files so replay reads them).
    pub fn tool_names(&self) -> &[String] {
        &self.names[3..]
    }

    /// `Search[...], Lookup[...], Finish[...]` and the registered tools, for observations.
    pub fn valid_actions(&self) -> String {
        let names: Vec<String> = self.names.iter().map(|name| format!("{name}[...]")).collect();
        names.join(", ")
    }

    /// Text that ends a completion in this profile: what the model writes after its action and
    /// should not have. The `paper` profile cuts only at its stop sequence, as the server would.
    pub fn cut_completion<'c>(&self, completion: &'c str, step: usize) -> &'c str {
        let mut end = completion.len();
        match self.profile {
            Profile::Paper => {
                if let Some(idx) = completion.find(&format!("\nObservation {step}:")) {
                    end = idx;
                }
            }
            Profile::Default => {
                for marker in ["\nObservation", "\nQuestion:", "\nClaim:"] {
                    if let Some(idx) = completion.find(marker) {
                        end = end.min(idx);
                    }
                }
            }
        }
        &completion[..end]
    }

    /// Splits a (cut) completion of step `step` into thought and action text.
    pub fn split_completion(&self, completion: &str, step: usize) -> ThoughtAction {
        match self.profile {
            Profile::Paper => split_paper(completion, step),
            Profile::Default => self.split_tolerant(completion),
        }
    }

    /// The thought the fallback call continues from when a completion holds no action.
    pub fn fallback_thought(&self, completion: &str) -> String {
        let first_line = completion.trim().split('\n').next().unwrap_or("");
        match self.profile {
            Profile::Paper => first_line.to_owned(),
            Profile::Default => strip_thought_label(first_line).trim().to_owned(),
        }
    }

    /// The action text of the fallback call's completion (stop `\n`).
    pub fn fallback_action(&self, completion: &str) -> String {
        match self.profile {
            Profile::Paper => completion.trim().to_owned(),
            Profile::Default => {
                let line = completion.trim_start().split('\n').next().unwrap_or("").trim();
                match action_label(line) {
                    Ok((rest, ())) => rest.trim().to_owned(),
                    Err(_) => line.to_owned(),
                }
            }
        }
    }

    /// Parses the text of an action.
    pub fn parse(&self, text: &str) -> Result<Action, ActionError> {
        match self.profile {
            Profile::Paper => parse_paper(text),
            Profile::Default => self.parse_tolerant(text),
        }
    }

    /// How the action reads in the scratchpad and the run file: canonical in the `default`
    /// profile, as written in the `paper` profile.
    pub fn display(&self, text: &str, parsed: &Result<Action, ActionError>) -> String {
        match (self.profile, parsed) {
            (Profile::Default, Ok(action)) => action.to_string(),
            (Profile::Default, Err(_)) => text.trim().to_owned(),
            (Profile::Paper, _) => text.to_owned(),
        }
    }

    fn split_tolerant(&self, completion: &str) -> ThoughtAction {
        let lines: Vec<&str> = completion.trim().lines().collect();
        let labelled = lines.iter().enumerate().find_map(|(idx, line)| {
            let (rest, ()) = action_label(line.trim_start()).ok()?;
            Some((idx, rest.trim().to_owned()))
        });
        // A model that drops the label still writes `Search[...]` on a line of its own.
        let found = labelled.or_else(|| {
            lines.iter().enumerate().skip(1).find_map(|(idx, line)| {
                let line = line.trim();
                self.parse_tolerant(line).ok().map(|_| (idx, line.to_owned()))
            })
        });
        let (thought_lines, action) = match found {
            Some((idx, action)) => (&lines[..idx], Some(action)),
            None => (&lines[..], None),
        };
        let thought = joined_lines(thought_lines);
        ThoughtAction {
            thought: strip_thought_label(&thought).trim().to_owned(),
            action,
        }
    }

    fn parse_tolerant(&self, text: &str) -> Result<Action, ActionError> {
        let trimmed = text.trim();
        let unwrapped = trimmed.trim_start_matches(['"', '\'', '`', '*']);
        let not_an_action = || ActionError::NotAnAction {
            text: trimmed.to_owned(),
        };
        let (rest, written_name) = action_name(unwrapped).map_err(|_| not_an_action())?;
        let Some(name) = self
            .names
            .iter()
            .find(|name| name.eq_ignore_ascii_case(written_name))
        else {
            // `I should Search[...]` is a sentence, not an action with an unknown name.
            if !rest.trim_start().starts_with('[') {
                return Err(not_an_action());
            }
            return Err(ActionError::UnknownName {
                name: written_name.to_owned(),
                expected: self.valid_actions(),
            });
        };
        let rest = rest.trim_start();
        let Some(rest) = rest.strip_prefix('[') else {
            return Err(ActionError::MissingBracket { name: name.clone() });
        };
        let argument = balanced_argument(rest).ok_or_else(|| ActionError::Unclosed { name: name.clone() })?;
        let argument = argument.trim().to_owned();
        if argument.is_empty() && name != "Finish" {
            return Err(ActionError::EmptyArgument { name: name.clone() });
        }
        Ok(match name.as_str() {
            "Search" => Action::Search(argument),
            "Lookup" => Action::Lookup(argument),
            "Finish" => Action::Finish(argument),
            _ => Action::Tool {
                name: name.clone(),
                argument,
            },
        })
    }
}

/// The ReAct notebook: `thought_action.strip().split(f"\nAction {i}: ")` must give exactly two parts.
fn split_paper(completion: &str, step: usize) -> ThoughtAction {
    let stripped = completion.trim();
    let separator = format!("\nAction {step}: ");
    let parts: Vec<&str> = stripped.split(&separator).collect();
    match parts.as_slice() {
        [thought, action] => ThoughtAction {
            thought: (*thought).to_owned(),
            action: Some((*action).to_owned()),
        },
        _ => ThoughtAction {
            thought: stripped.split('\n').next().unwrap_or("").to_owned(),
            action: None,
        },
    }
}

/// `wikienv.step`: first character lowercased, stripped, then case-sensitive prefixes and a final `]`.
fn parse_paper(text: &str) -> Result<Action, ActionError> {
    let action = paper_action_text(text);
    let argument = |prefix: &str| {
        action
            .strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix(']'))
            .map(str::to_owned)
    };
    if let Some(entity) = argument("search[") {
        Ok(Action::Search(entity))
    } else if let Some(keyword) = argument("lookup[") {
        Ok(Action::Lookup(keyword))
    } else if let Some(answer) = argument("finish[") {
        Ok(Action::Finish(answer))
    } else if let Some(thought) = argument("think[") {
        Ok(Action::Think(thought))
    } else {
        Err(ActionError::NotAnAction { text: action })
    }
}

/// `action[0].lower() + action[1:]`, then `.strip()`: the text the paper's environment executes and
/// echoes in `Invalid action: ...`.
pub(crate) fn paper_action_text(text: &str) -> String {
    let mut chars = text.chars();
    let lowered: String = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    };
    lowered.trim().to_owned()
}

/// `Action`, an optional step number, `:` — in any case and spacing.
fn action_label(input: &str) -> IResult<&str, ()> {
    let (rest, _) = (tag_no_case("action"), space0, opt(digit1), space0, char(':')).parse(input)?;
    Ok((rest, ()))
}

fn strip_thought_label(text: &str) -> &str {
    let label: IResult<&str, _> =
        (tag_no_case("thought"), space0, opt(digit1), space0, char(':')).parse(text);
    match label {
        Ok((rest, _)) => rest,
        Err(_) => text,
    }
}

/// A name: a letter or `_`, then letters, digits and `_`.
fn action_name(input: &str) -> IResult<&str, &str> {
    recognize(pair(
        satisfy(|c: char| c.is_ascii_alphabetic() || c == '_'),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ))
    .parse(input)
}

/// The argument up to the `]` that balances the opening `[` (already consumed): nested brackets
/// stay in the argument. `None` when the bracket is never closed.
fn balanced_argument(input: &str) -> Option<&str> {
    let mut depth = 0usize;
    for (idx, c) in input.char_indices() {
        match c {
            '[' => depth += 1,
            ']' if depth == 0 => return Some(&input[..idx]),
            ']' => depth -= 1,
            _ => {}
        }
    }
    // Unbalanced inside (`Finish[a [b]`): up to the last `]`, as the paper's `endswith("]")` would.
    input.rfind(']').map(|idx| &input[..idx])
}

/// A thought written over several lines, as one: each line trimmed, blank ones dropped, joined
/// by spaces.
pub(crate) fn joined_lines(lines: &[&str]) -> String {
    lines
        .iter()
        .map(|line| line.trim())
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests;
