//! `--api tools`: the actions as functions a chat model calls, and its replies read back into
//! actions.
//!
//! [`FunctionSet`] offers one function per action — `search` {entity}, `lookup` {keyword},
//! `finish` {answer}, then each registered tool under its snake_case name (`calculate`
//! {expression}, `web_search` {query}, a `--tool` command's {input}) — each with a JSON Schema
//! and a description written from the action's contract. [`FunctionSet::read_reply`] turns an
//! assistant message into calls, however the server sent them:
//! - `tool_calls` with arguments as a JSON text or an object, ids missing or repeated (each call
//!   gets a unique id: its own when it has one no earlier call used, else `call_{step}_{k}`);
//! - the five entities of jinja2's HTML escaping inside argument strings (llama-cpp-python's model
//!   writes `&#34;` for `"`, `&#39;` for `'`), decoded; nothing else;
//! - calls written into the text by a server that does not parse them: `<tool_call>{...}</tool_call>`
//!   (Hermes, Qwen), `[TOOL_CALLS][...]` (Mistral), `<|python_tag|>{...}` (Llama 3.1), or the
//!   whole text a JSON call (`{"name": ..., "arguments": ...}`, also in a ```json fence).
//!
//! A call that is not one of the functions, or whose arguments are not the schema's, is still a
//! call: it gets an error observation naming what was wrong ([`CallError`]), as an invalid action
//! does in the text format.

mod transcript;

pub use transcript::{Transcript, system_message};

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::agent::action::Action;
use crate::base::json::type_name;
use crate::llm::{FunctionSpec, Message, ReplyMessage, SentCall, WireCall};
use crate::tools::{Toolbox, function_key, function_name};

/// One function offered to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// The name the model calls: `search`, `web_search`, ...
    pub name: String,
    /// The action it stands for.
    pub kind: FunctionKind,
    /// The one argument's name: `entity`, `keyword`, `answer`, `expression`, ...
    pub parameter: String,
    pub description: String,
    pub parameter_description: String,
}

/// The action a function stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FunctionKind {
    Search,
    Lookup,
    Finish,
    /// A registered tool, by its canonical action name (`Calculate`, `WebSearch`).
    Tool(String),
}

/// The functions one run offers, in the order the text prompt lists its actions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FunctionSet {
    functions: Vec<Function>,
}

/// One call of a reply, ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// Unique in the conversation: what the `tool` message answering it names.
    pub id: String,
    /// The function as the model named it.
    pub name: String,
    /// The arguments as JSON text, as echoed back to the server.
    pub arguments: String,
    pub action: Result<Action, CallError>,
    /// Where the reply held it.
    pub origin: CallOrigin,
    /// The other fields the server put on the call, sent back with it ([`WireCall::passback`]).
    pub passback: Map<String, Value>,
}

/// Where a reply held a call: what decides how the reply is echoed back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOrigin {
    /// An entry of the reply's `tool_calls` (or its legacy `function_call`): echoed as a call.
    ToolCalls,
    /// Written into the reply's text by a server that does not parse calls: echoed as that text,
    /// and only as that text.
    Text,
}

impl Call {
    /// The call as an assistant message carries it back to the server: its unique id, the name,
    /// the arguments and the other fields as sent.
    pub fn sent(&self) -> SentCall {
        SentCall {
            id: self.id.clone(),
            name: self.name.clone(),
            arguments: self.arguments.clone(),
            passback: self.passback.clone(),
        }
    }

    /// How the step's action is written in traces, scratchpads and run files: `Search[X]` for a
    /// valid call, the call itself (`serach({"entity": "X"})`) for one that is not.
    pub fn written(&self) -> String {
        match &self.action {
            Ok(action) => action.to_string(),
            Err(_) => format!("{}({})", self.name, self.arguments),
        }
    }
}

/// What a reply holds: its text (the step's thought) and its calls, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadReply {
    pub thought: String,
    pub calls: Vec<Call>,
}

impl ReadReply {
    /// The assistant message that carries `message`, the reply this was read from, back to the
    /// server as the server sent it: its text (`""` for none) and its `tool_calls` under their
    /// unique ids, and every other field of the message and its calls as received. Calls read
    /// from the text are in the text already, and are not made up again as calls (a block that
    /// did not parse has no name or arguments to send).
    pub fn echo(&self, message: &ReplyMessage) -> Message {
        Message::Assistant {
            content: message.content.clone().unwrap_or_default(),
            reasoning: message.reasoning.clone(),
            passback: message.passback.clone(),
            calls: self
                .calls
                .iter()
                .filter(|call| call.origin == CallOrigin::ToolCalls)
                .map(Call::sent)
                .collect(),
        }
    }
}

/// Why a call cannot run. The message is the model's to read, in the error observation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallError {
    #[error("the reply calls no function")]
    NoCall,
    #[error("the call names no function")]
    NoName,
    #[error("there is no function `{name}`")]
    UnknownFunction { name: String },
    #[error("the arguments of `{function}` are not a JSON object ({problem})")]
    NotJson { function: String, problem: String },
    #[error("`{function}` needs the argument `{parameter}`")]
    Missing { function: String, parameter: String },
    #[error("`{function}`'s argument `{parameter}` must be a string, not {found}")]
    NotAString {
        function: String,
        parameter: String,
        found: &'static str,
    },
    #[error("`{function}`'s argument `{parameter}` is empty")]
    Empty { function: String, parameter: String },
    #[error("`{function}` takes only `{parameter}`, not `{unexpected}`")]
    Unexpected {
        function: String,
        parameter: String,
        unexpected: String,
    },
    #[error("the reply's text holds a call that cannot be read ({problem})")]
    Embedded { problem: String },
}

/// The parameter and the wording of a built-in tool's function, so that a replay without the
/// tool reads its calls as the run did.
const BUILTIN_TOOL_PARAMETERS: [(&str, &str); 2] = [("Calculate", "expression"), ("WebSearch", "query")];

impl FunctionSet {
    /// The functions for the actions `Search`, `Lookup`, `Finish` and the tools `tool_names`
    /// (canonical names, as the grammar holds them). A tool's wording comes from its entry in
    /// `toolbox` when it has one (its description `Name[parameter], which ...`); a tool the
    /// toolbox lacks (a replay) gets its parameter from the built-in tools' table, else `input`.
    pub fn new<'n>(tool_names: impl IntoIterator<Item = &'n str>, toolbox: &Toolbox) -> FunctionSet {
        let mut functions = vec![
            Function {
                name: "search".to_owned(),
                kind: FunctionKind::Search,
                parameter: "entity".to_owned(),
                description: "Searches the exact entity on Wikipedia and returns the first paragraph of its page if it exists. If not, returns some similar entities to search.".to_owned(),
                parameter_description: "The exact entity to search, as the title of its Wikipedia page, e.g. \"Colorado orogeny\".".to_owned(),
            },
            Function {
                name: "lookup".to_owned(),
                kind: FunctionKind::Lookup,
                parameter: "keyword".to_owned(),
                description: "Returns the next sentence containing the keyword in the page last searched; called again with the same keyword, the sentence after it.".to_owned(),
                parameter_description: "The word or phrase to find in the current page.".to_owned(),
            },
            Function {
                name: "finish".to_owned(),
                kind: FunctionKind::Finish,
                parameter: "answer".to_owned(),
                description: "Returns the answer and finishes the task.".to_owned(),
                parameter_description: "The final answer, as short as the examples' answers.".to_owned(),
            },
        ];
        for canonical in tool_names {
            let described = toolbox.get(canonical).map(|tool| tool.description().to_owned());
            let (parameter, contract) = match described.as_deref().and_then(split_description) {
                Some((parameter, contract)) => (parameter.to_owned(), contract),
                None => {
                    let parameter = BUILTIN_TOOL_PARAMETERS
                        .iter()
                        .find(|(name, _)| name.eq_ignore_ascii_case(canonical))
                        .map_or("input", |(_, parameter)| parameter);
                    (parameter.to_owned(), format!("Runs the action {canonical}."))
                }
            };
            functions.push(Function {
                name: function_name(canonical),
                kind: FunctionKind::Tool(canonical.to_owned()),
                parameter_description: format!("The {parameter} to pass to {canonical}."),
                parameter,
                description: contract,
            });
        }
        FunctionSet { functions }
    }

    /// These functions and one for each of `tool_names` they lack (the recorded tools of a run
    /// replayed without them), worded as [`FunctionSet::new`] words a tool it has no entry for.
    pub fn including(&self, tool_names: &[String]) -> FunctionSet {
        let missing: Vec<&str> = tool_names
            .iter()
            .map(String::as_str)
            .filter(|name| {
                !self
                    .functions
                    .iter()
                    .any(|function| matches!(&function.kind, FunctionKind::Tool(tool) if tool.eq_ignore_ascii_case(name)))
            })
            .collect();
        let mut functions = self.functions.clone();
        functions.extend(
            FunctionSet::new(missing, &Toolbox::default())
                .functions
                .into_iter()
                .filter(|function| matches!(function.kind, FunctionKind::Tool(_))),
        );
        FunctionSet { functions }
    }

    pub fn functions(&self) -> &[Function] {
        &self.functions
    }

    /// The `tools` list of a request: one function each, its arguments one required string.
    pub fn specs(&self) -> Vec<FunctionSpec> {
        self.functions
            .iter()
            .map(|function| FunctionSpec {
                name: function.name.clone(),
                description: function.description.clone(),
                parameters: json!({
                    "type": "object",
                    "properties": {
                        function.parameter.clone(): {
                            "type": "string",
                            "description": function.parameter_description,
                        },
                    },
                    "required": [function.parameter],
                    "additionalProperties": false,
                }),
            })
            .collect()
    }

    /// The function standing for `action`, and its arguments object: how an example's
    /// `Search[Colorado orogeny]` is written as a call.
    pub fn call_of(&self, action: &Action) -> Option<(&Function, Value)> {
        let (kind, argument) = match action {
            Action::Search(entity) => (FunctionKind::Search, entity),
            Action::Lookup(keyword) => (FunctionKind::Lookup, keyword),
            Action::Finish(answer) => (FunctionKind::Finish, answer),
            Action::Tool { name, argument } => (FunctionKind::Tool(name.clone()), argument),
            Action::Think(_) => return None,
        };
        let function = self.functions.iter().find(|function| function.kind == kind)?;
        Some((function, json!({function.parameter.clone(): argument})))
    }

    /// `search({"entity": string}), lookup({"keyword": string}), ...`: what an error observation
    /// offers instead.
    pub fn valid_calls(&self) -> String {
        let calls: Vec<String> = self
            .functions
            .iter()
            .map(|function| format!("{}({{\"{}\": string}})", function.name, function.parameter))
            .collect();
        calls.join(", ")
    }

    /// The observation for a call that cannot run.
    pub fn invalid_call_observation(&self, error: &CallError) -> String {
        format!("Invalid call: {error}. Valid calls are {}.", self.valid_calls())
    }

    /// Reads an assistant message of step `step`: its text and its calls. `used_ids` holds the
    /// ids the conversation has used so far; each call's id is added.
    pub fn read_reply(
        &self,
        message: &ReplyMessage,
        step: usize,
        used_ids: &mut HashSet<String>,
    ) -> ReadReply {
        // The thought and the calls are read after any `<think>` block.
        let content = crate::llm::reasoning::split_think(message.content.as_deref().unwrap_or("")).rest;
        let (thought, wire_calls, origin) = if message.tool_calls.is_empty() {
            let (thought, calls) = embedded_calls(content);
            (thought, calls, CallOrigin::Text)
        } else {
            (
                content.trim().to_owned(),
                message.tool_calls.iter().map(|call| Ok(call.clone())).collect(),
                CallOrigin::ToolCalls,
            )
        };
        let calls = wire_calls
            .into_iter()
            .enumerate()
            .map(|(idx, call)| {
                let id = unique_id(
                    call.as_ref().ok().and_then(|call| call.id.as_deref()),
                    step,
                    idx + 1,
                    used_ids,
                );
                match call {
                    Ok(call) => {
                        let arguments = match &call.arguments {
                            Value::String(text) => text.clone(),
                            Value::Null => "{}".to_owned(),
                            other => other.to_string(),
                        };
                        let action = self.action(&call);
                        Call {
                            id,
                            name: call.name,
                            arguments,
                            action,
                            origin,
                            passback: call.passback,
                        }
                    }
                    Err((text, problem)) => Call {
                        id,
                        name: String::new(),
                        arguments: text,
                        action: Err(CallError::Embedded { problem }),
                        origin,
                        passback: Map::new(),
                    },
                }
            })
            .collect();
        ReadReply { thought, calls }
    }

    /// The action a call stands for, when it names a function and its arguments fit the schema.
    fn action(&self, call: &WireCall) -> Result<Action, CallError> {
        let name = call.name.trim();
        if name.is_empty() {
            return Err(CallError::NoName);
        }
        let function = self
            .functions
            .iter()
            .find(|function| function.name == name)
            .or_else(|| {
                // `Search`, `webSearch`, `web-search`: one function all the same.
                let key = function_key(name);
                self.functions
                    .iter()
                    .find(|function| function_key(&function.name) == key)
            })
            .ok_or_else(|| CallError::UnknownFunction {
                name: name.to_owned(),
            })?;
        let argument = argument(function, &call.arguments)?;
        Ok(match &function.kind {
            FunctionKind::Search => Action::Search(argument),
            FunctionKind::Lookup => Action::Lookup(argument),
            FunctionKind::Finish => Action::Finish(argument),
            FunctionKind::Tool(name) => Action::Tool {
                name: name.clone(),
                argument,
            },
        })
    }
}

/// The one argument of `function` out of `arguments` (a JSON text or an object), checked against
/// its schema: an object with exactly the one string property, not empty. The entities a server's
/// HTML escaping writes are decoded ([`unescape_markup`]).
fn argument(function: &Function, arguments: &Value) -> Result<String, CallError> {
    let parsed;
    let empty = Map::new();
    let object: &Map<String, Value> = match arguments {
        Value::Object(object) => object,
        // No arguments at all: the schema's required one is missing.
        Value::Null => &empty,
        Value::String(text) => {
            parsed = serde_json::from_str::<Value>(text).map_err(|error| CallError::NotJson {
                function: function.name.clone(),
                problem: error.to_string(),
            })?;
            parsed.as_object().ok_or_else(|| CallError::NotJson {
                function: function.name.clone(),
                problem: format!("found {}", type_name(&parsed)),
            })?
        }
        other => {
            return Err(CallError::NotJson {
                function: function.name.clone(),
                problem: format!("found {}", type_name(other)),
            });
        }
    };
    if let Some(unexpected) = object.keys().find(|key| **key != function.parameter) {
        return Err(CallError::Unexpected {
            function: function.name.clone(),
            parameter: function.parameter.clone(),
            unexpected: unexpected.clone(),
        });
    }
    match object.get(&function.parameter) {
        None => Err(CallError::Missing {
            function: function.name.clone(),
            parameter: function.parameter.clone(),
        }),
        Some(Value::String(text)) => {
            let text = unescape_markup(text).trim().to_owned();
            if text.is_empty() {
                return Err(CallError::Empty {
                    function: function.name.clone(),
                    parameter: function.parameter.clone(),
                });
            }
            Ok(text)
        }
        Some(other) => Err(CallError::NotAString {
            function: function.name.clone(),
            parameter: function.parameter.clone(),
            found: type_name(other),
        }),
    }
}

/// What jinja2's HTML escaping (markupsafe) writes for `&`, `<`, `>`, `"` and `'`. llama-cpp-python
/// renders its chat templates with it, so its model, which reads `Arthur&#39;s Magazine` in its
/// prompt, writes `First for Women&#34;` in its arguments (fixtures/openai/tools/llama-cpp-python).
const MARKUP_ESCAPES: [(&str, char); 5] = [
    ("&amp;", '&'),
    ("&lt;", '<'),
    ("&gt;", '>'),
    ("&#34;", '"'),
    ("&#39;", '\''),
];

/// `text` with [`MARKUP_ESCAPES`] decoded, left to right in one pass (`&amp;lt;` is `&lt;`). Any
/// other `&` stays as written: another entity (`&eacute;`), one without its `;` (`&not done`), a
/// bare ampersand.
fn unescape_markup(text: &str) -> String {
    let mut decoded = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        decoded.push_str(&rest[..at]);
        let tail = &rest[at..];
        match MARKUP_ESCAPES.iter().find(|(entity, _)| tail.starts_with(entity)) {
            Some((entity, character)) => {
                decoded.push(*character);
                rest = &tail[entity.len()..];
            }
            None => {
                decoded.push('&');
                rest = &tail[1..];
            }
        }
    }
    decoded.push_str(rest);
    decoded
}

/// The call's own id when it has one the conversation has not used, else `call_{step}_{k}`
/// (made unique too). Added to `used`.
fn unique_id(sent: Option<&str>, step: usize, k: usize, used: &mut HashSet<String>) -> String {
    let sent = sent.map(str::trim).filter(|id| !id.is_empty() && id.len() <= 256);
    let id = match sent {
        Some(id) if !used.contains(id) => id.to_owned(),
        _ => {
            let base = format!("call_{step}_{k}");
            let mut id = base.clone();
            let mut n = 1;
            while used.contains(&id) {
                n += 1;
                id = format!("{base}_{n}");
            }
            id
        }
    };
    used.insert(id.clone());
    id
}

/// `Calculate[expression], which evaluates ...` → (`expression`, `Evaluates ...`).
fn split_description(description: &str) -> Option<(&str, String)> {
    let open = description.find('[')?;
    let close = open + description[open..].find(']')?;
    let parameter = description[open + 1..close].trim();
    let valid = !parameter.is_empty() && parameter.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return None;
    }
    let rest = description[close + 1..].trim_start_matches(',').trim();
    let rest = rest.strip_prefix("which ").unwrap_or(rest);
    let mut contract = String::with_capacity(rest.len());
    let mut chars = rest.chars();
    if let Some(first) = chars.next() {
        contract.extend(first.to_uppercase());
        contract.push_str(chars.as_str());
    }
    Some((parameter, contract))
}

/// A call written into a reply's text, or the text that looked like one and did not parse.
type Embedded = Result<WireCall, (String, String)>;

/// The calls a server left in the reply's text, and the text without them (the thought).
fn embedded_calls(content: &str) -> (String, Vec<Embedded>) {
    // `<tool_call>{...}</tool_call>`, any number of them.
    if content.contains("<tool_call>") {
        let mut thought = String::new();
        let mut calls = Vec::new();
        let mut rest = content;
        while let Some(start) = rest.find("<tool_call>") {
            thought.push_str(&rest[..start]);
            let after = &rest[start + "<tool_call>".len()..];
            let (body, next) = match after.find("</tool_call>") {
                Some(end) => (&after[..end], &after[end + "</tool_call>".len()..]),
                None => (after, ""),
            };
            calls.extend(json_calls(body));
            rest = next;
        }
        thought.push_str(rest);
        return (thought.trim().to_owned(), calls);
    }
    for marker in ["[TOOL_CALLS]", "<|python_tag|>"] {
        if let Some(start) = content.find(marker) {
            let calls = json_calls(&content[start + marker.len()..]);
            return (content[..start].trim().to_owned(), calls);
        }
    }
    // The whole text one JSON call (or a list of them), perhaps in a ```json fence.
    let trimmed = content.trim();
    let unfenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|inner| inner.strip_suffix("```"))
        .unwrap_or(trimmed)
        .trim();
    if unfenced.starts_with('{') || unfenced.starts_with('[') {
        let calls = json_calls(unfenced);
        let all_calls = !calls.is_empty() && calls.iter().all(Result::is_ok);
        if all_calls {
            return (String::new(), calls);
        }
    }
    (trimmed.to_owned(), Vec::new())
}

/// `{"name", "arguments" | "parameters"}` or a list of them; text that does not parse is one
/// refused call.
fn json_calls(text: &str) -> Vec<Embedded> {
    let text = text.trim();
    let problem = |problem: String| vec![Err((text.to_owned(), problem))];
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(error) => return problem(error.to_string()),
    };
    let entries = match value {
        Value::Array(entries) => entries,
        other => vec![other],
    };
    entries
        .into_iter()
        .map(|entry| match entry.get("name") {
            Some(Value::String(name)) => Ok(WireCall {
                passback: Map::new(),
                id: None,
                name: name.clone(),
                arguments: entry
                    .get("arguments")
                    .or_else(|| entry.get("parameters"))
                    .cloned()
                    .unwrap_or(Value::Null),
            }),
            _ => Err((entry.to_string(), "no `name` naming the function".to_owned())),
        })
        .collect()
}

#[cfg(test)]
mod tests;
