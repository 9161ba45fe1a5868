//! OpenAI's Responses API (`POST /v1/responses`, `--api responses` and `--api responses-tools`):
//! the request bodies and the replies read back, as OpenAI documents them (the API reference of
//! `POST /v1/responses` and the `openai` SDK's `types/responses`).
//!
//! The text protocol sends the continue-instruction as `instructions` and the scratchpad as
//! `input`. The API has no `stop` (and no `n`): the client cuts the text at the stop sequences
//! itself, as it does for every API, and asks for CoT-SC's samples one request each. The
//! function-calling protocol sends the conversation as input items — the system and user
//! messages, each earlier reply's `output` items exactly as received (its `reasoning` items with
//! their `encrypted_content`, its `message` and `function_call` items) and a
//! `function_call_output` item per observation — with `store: false` and
//! `include: ["reasoning.encrypted_content"]`, so a reasoning model keeps its reasoning from step
//! to step without the server keeping anything (`--llm-option store=true` overrides).
//!
//! A reply's `message` items are its text, its `reasoning` items' summaries its reasoning (what a
//! step records as `reasoning`), its `function_call` items its calls; `status: "incomplete"` with
//! `incomplete_details.reason: "max_output_tokens"` is the token cap's cut.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::wire::{self, RESPONSES_ID, RESPONSES_OUTPUT, ReasoningEcho, WireUsage};
use super::{CONTINUE_INSTRUCTION, Leave, OpenAiConfig};
use crate::llm::reasoning::{self, Ending, ReasoningFields};
use crate::llm::{ConverseRequest, Message, ReplyMessage, SentCall, TokenUsage, WireCall};

/// The most `output` items one reply keeps: a step is a reasoning item, a message and a call or
/// two; more are dropped, with a warning.
pub const MAX_OUTPUT_ITEMS: usize = 64;

/// What a response is read for; every other field is ignored.
#[derive(Debug, Deserialize)]
struct Response {
    #[serde(default)]
    id: Option<String>,
    /// Absent from a body that is no response.
    #[serde(default)]
    output: Option<Vec<Value>>,
    #[serde(default)]
    status: Option<Value>,
    #[serde(default)]
    incomplete_details: Option<Value>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// One response, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    /// The response's `id` (`resp_…`), which a stored response is chained by.
    pub id: Option<String>,
    /// The `output_text` (and `refusal`) parts of its `message` items, in order.
    pub text: Option<String>,
    /// Its `reasoning` items' summaries (or their `reasoning_text` or `output_text` content when a
    /// server sends that instead), blank-line separated.
    pub reasoning: Option<String>,
    /// Its `function_call` items: `call_id`, `name` and `arguments` as sent.
    pub calls: Vec<WireCall>,
    /// Its `output` items as received, at most [`MAX_OUTPUT_ITEMS`].
    pub output: Vec<Value>,
    /// How it ended, in the words of a chat choice's `finish_reason`
    /// ([`Ending::of_finish_reason`]): the `incomplete_details.reason` of an incomplete response
    /// (`max_output_tokens`: the token cap's cut), else its `status` (`completed`).
    pub finish_reason: Option<String>,
    pub usage: Option<TokenUsage>,
}

/// Why a body is not a response.
#[derive(Debug)]
pub enum NotAResponse {
    /// Not the JSON of a response object: serde's words.
    Json(String),
    /// A JSON object with no `output` list.
    NoOutput,
}

/// Reads a response body.
pub fn read(bytes: &[u8]) -> Result<Read, NotAResponse> {
    let response: Response =
        serde_json::from_slice(bytes).map_err(|error| NotAResponse::Json(error.to_string()))?;
    let mut output = response.output.ok_or(NotAResponse::NoOutput)?;
    if output.len() > MAX_OUTPUT_ITEMS {
        tracing::warn!(
            "the response has {} output items; keeping the first {MAX_OUTPUT_ITEMS}",
            output.len()
        );
        output.truncate(MAX_OUTPUT_ITEMS);
    }
    let (mut texts, mut thoughts, mut calls) = (Vec::new(), Vec::new(), Vec::new());
    for item in &output {
        match item.get("type").and_then(Value::as_str) {
            Some("message") => texts.extend(parts(item, "content", &["output_text", "refusal"])),
            Some("reasoning") => {
                let summary = parts(item, "summary", &["summary_text"]);
                if summary.is_empty() {
                    // `output_text`: how LiteLLM's bridge to Chat Completions writes a
                    // reasoning item's text (fixtures/litellm/SOURCE.md).
                    thoughts.extend(parts(item, "content", &["reasoning_text", "output_text"]));
                } else {
                    thoughts.extend(summary);
                }
            }
            Some("function_call") => calls.push(function_call(item)),
            _ => {}
        }
    }
    let text = (!texts.is_empty()).then(|| texts.concat());
    Ok(Read {
        id: response.id.filter(|id| !id.is_empty()),
        text,
        reasoning: reasoning::join(thoughts.iter().map(String::as_str)),
        calls,
        output,
        finish_reason: finish_reason(response.status.as_ref(), response.incomplete_details.as_ref()),
        usage: response.usage.map(|usage| usage.tokens()),
    })
}

/// The texts of an item's parts (`content` or `summary`) whose `type` is one of `kinds`.
fn parts(item: &Value, field: &str, kinds: &[&str]) -> Vec<String> {
    let Some(parts) = item.get(field).and_then(Value::as_array) else {
        return Vec::new();
    };
    parts
        .iter()
        .filter(|part| {
            part.get("type")
                .and_then(Value::as_str)
                .is_some_and(|kind| kinds.contains(&kind))
        })
        .filter_map(|part| part.get("text").or_else(|| part.get("refusal")))
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// A `function_call` item as a call: its `call_id` (what the `function_call_output` answering it
/// names), `name` and `arguments`.
fn function_call(item: &Value) -> WireCall {
    WireCall {
        id: item.get("call_id").and_then(Value::as_str).map(str::to_owned),
        name: item
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        arguments: item.get("arguments").cloned().unwrap_or(Value::Null),
        passback: Map::new(),
    }
}

/// How a response ended: an incomplete one's reason (`max_output_tokens`, `content_filter`),
/// else its status (`completed`); none when it says neither.
fn finish_reason(status: Option<&Value>, details: Option<&Value>) -> Option<String> {
    let status = status.and_then(Value::as_str).filter(|status| !status.is_empty());
    let reason = match status {
        Some("incomplete") => details
            .and_then(|details| details.get("reason"))
            .and_then(Value::as_str),
        status => status,
    };
    reason.map(str::to_owned)
}

impl Read {
    /// How the response ended.
    pub fn ending(&self) -> Ending {
        Ending::of_finish_reason(self.finish_reason.as_deref())
    }

    /// The response as a text choice, which the client reads as it reads a completion's (cut at
    /// the stop sequences, a leading `<think>` block read apart, capped): its text (empty when it
    /// had none), its reasoning summary and how it ended.
    pub fn into_choice(self) -> wire::Choice {
        wire::Choice {
            text: Some(self.text.unwrap_or_default()),
            message: None,
            finish_reason: self.finish_reason.map(Value::String),
            reasoning: ReasoningFields {
                reasoning: self.reasoning,
                reasoning_content: None,
            },
        }
    }

    /// The reply of a function-calling turn, close to the wire: the text, the reasoning summary
    /// (as a `reasoning` field), the calls, the `output` items as received
    /// ([`RESPONSES_OUTPUT`]), which go back on every later request, and the response's `id`
    /// ([`RESPONSES_ID`]), which a later request names instead when responses are stored.
    pub fn into_reply(self) -> ReplyMessage {
        let mut passback = Map::new();
        if !self.output.is_empty() {
            passback.insert(RESPONSES_OUTPUT.to_owned(), Value::Array(self.output));
        }
        if let Some(id) = self.id {
            passback.insert(RESPONSES_ID.to_owned(), Value::String(id));
        }
        ReplyMessage {
            content: self.text,
            reasoning: ReasoningFields {
                reasoning: self.reasoning,
                reasoning_content: None,
            },
            tool_calls: self.calls,
            passback,
        }
    }
}

/// The body of a text request: the continue-instruction as `instructions`, the scratchpad as
/// `input`, then the sampling fields and the options ([`finish`]).
pub fn text_body(config: &OpenAiConfig, prompt: &str, leave: Leave) -> Value {
    let body = wire::object([
        ("model", json!(config.model)),
        ("instructions", json!(CONTINUE_INSTRUCTION)),
        ("input", json!(prompt)),
    ]);
    finish(body, config, leave)
}

/// The body of one function-calling turn: the conversation as input items ([`input_items`]), the
/// functions as function tools, the model free to call any, then the sampling fields and the
/// options. With `--llm-option store=true` the server keeps each response: a turn after one whose
/// `id` was kept names it as `previous_response_id` and sends only the items after it (the
/// observations), as OpenAI documents for conversation state.
pub fn converse_body(config: &OpenAiConfig, request: &ConverseRequest<'_>, leave: Leave) -> Value {
    let mut body = wire::object([("model", json!(config.model))]);
    let (previous, messages) = match stored_before(config, request.messages) {
        Some((id, after)) => (Some(id), after),
        None => (None, request.messages),
    };
    if let Some(id) = previous {
        body.insert("previous_response_id".to_owned(), json!(id));
    }
    body.insert(
        "input".to_owned(),
        Value::Array(input_items(messages, config.reasoning_echo)),
    );
    let tools: Vec<Value> = request
        .functions
        .iter()
        .map(|function| {
            json!({"type": "function", "name": function.name, "description": function.description,
                   "parameters": function.parameters})
        })
        .collect();
    body.insert("tools".to_owned(), Value::Array(tools));
    body.insert("tool_choice".to_owned(), json!("auto"));
    finish(body, config, leave)
}

/// With `--llm-option store=true`: the `id` of the conversation's last assistant turn that kept
/// one, and the messages after that turn; else none, and the whole conversation goes.
fn stored_before<'m>(config: &OpenAiConfig, messages: &'m [Message]) -> Option<(&'m str, &'m [Message])> {
    if config.options.get("store") != Some(&Value::Bool(true)) {
        return None;
    }
    messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(idx, message)| match message {
            Message::Assistant { passback, .. } => passback
                .get(RESPONSES_ID)
                .and_then(Value::as_str)
                .map(|id| (id, &messages[idx + 1..])),
            _ => None,
        })
}

/// The temperature (unless refused), `max_output_tokens`, `store: false` and the reasoning's
/// encrypted content asked for, then the user's options, which override them. No `stop`: the API
/// has none.
fn finish(mut body: Map<String, Value>, config: &OpenAiConfig, leave: Leave) -> Value {
    if !leave.temperature {
        body.insert("temperature".to_owned(), json!(config.temperature));
    }
    if let Some(max_tokens) = config.max_tokens {
        body.insert("max_output_tokens".to_owned(), json!(max_tokens));
    }
    body.insert("store".to_owned(), json!(false));
    body.insert("include".to_owned(), json!(["reasoning.encrypted_content"]));
    for (key, value) in &config.options {
        body.insert(key.clone(), value.clone());
    }
    Value::Object(body)
}

/// The conversation as input items: system and user messages; each assistant turn as the
/// `output` items it came with, in their order and unchanged (its `function_call` items answered
/// under the ids the agent gave the calls); each observation as a `function_call_output` item.
/// With `--no-reasoning-echo` the `reasoning` items stay out.
pub fn input_items(messages: &[Message], echo: ReasoningEcho) -> Vec<Value> {
    let mut items = Vec::new();
    for message in messages {
        match message {
            Message::System(content) => {
                items.push(json!({"type": "message", "role": "system", "content": content}));
            }
            Message::User(content) => {
                items.push(json!({"type": "message", "role": "user", "content": content}));
            }
            Message::Assistant {
                content,
                calls,
                passback,
                ..
            } => assistant_items(content, calls, passback, echo, &mut items),
            Message::Tool { call_id, content } => {
                items.push(json!({"type": "function_call_output", "call_id": call_id, "output": content}))
            }
        }
    }
    items
}

/// One assistant turn's items: its `output` as received, each `function_call` item under the id
/// of the call the agent ran in its place (the k-th call for the k-th item; an item past the
/// calls the agent kept is left out, as no output answers it); a call with no item of its own
/// after them. A turn that kept no `output` (a recording from before, or one past the size
/// bound) goes back as its text and its calls.
fn assistant_items(
    content: &str,
    calls: &[SentCall],
    passback: &Map<String, Value>,
    echo: ReasoningEcho,
    items: &mut Vec<Value>,
) {
    let mut calls = calls.iter();
    match passback.get(RESPONSES_OUTPUT).and_then(Value::as_array) {
        Some(output) => {
            for item in output {
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        let Some(call) = calls.next() else { continue };
                        let mut item = item.clone();
                        item["call_id"] = json!(call.id);
                        items.push(item);
                    }
                    Some("reasoning") if echo == ReasoningEcho::Drop => {}
                    _ => items.push(item.clone()),
                }
            }
        }
        None if !content.is_empty() => {
            items.push(json!({"type": "message", "role": "assistant", "content": content}));
        }
        None => {}
    }
    for call in calls {
        items.push(
            json!({"type": "function_call", "call_id": call.id, "name": call.name,
                          "arguments": call.arguments}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(output: Value, status: &str, details: Value) -> Vec<u8> {
        json!({"id": "resp_1", "object": "response", "status": status, "incomplete_details": details,
               "output": output,
               "usage": {"input_tokens": 2006, "input_tokens_details": {"cached_tokens": 1920},
                         "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 128},
                         "total_tokens": 2306}})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn a_response_reads_into_text_reasoning_calls_and_its_ending() {
        let output = json!([
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA",
             "summary": [{"type": "summary_text", "text": "First."}, {"type": "summary_text", "text": "Second."}]},
            {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "I search.", "annotations": []}]},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "search",
             "arguments": "{\"entity\":\"X\"}", "status": "completed"},
        ]);
        let read = read(&response(output.clone(), "completed", Value::Null)).unwrap();
        assert_eq!(read.ending(), Ending::Ended);
        assert_eq!(read.text.as_deref(), Some("I search."));
        assert_eq!(read.reasoning.as_deref(), Some("First.\n\nSecond."));
        assert_eq!(read.calls[0].id.as_deref(), Some("call_1"));
        assert_eq!(read.calls[0].arguments, json!("{\"entity\":\"X\"}"));
        let usage = read.usage.unwrap();
        assert_eq!((usage.cached_tokens, usage.reasoning_tokens), (1920, 128));
        let reply = read.into_reply();
        assert_eq!(reply.passback[RESPONSES_OUTPUT], output);
        assert_eq!(reply.reasoning.reasoning.as_deref(), Some("First.\n\nSecond."));
    }

    #[test]
    fn the_token_cap_is_an_incomplete_response_for_max_output_tokens() {
        let cut =
            |status: &str, details: Value| read(&response(json!([]), status, details)).unwrap().ending();
        assert_eq!(
            cut("incomplete", json!({"reason": "max_output_tokens"})),
            Ending::Cut
        );
        assert_eq!(
            cut("incomplete", json!({"reason": "content_filter"})),
            Ending::Ended
        );
        assert_eq!(cut("incomplete", Value::Null), Ending::Unknown);
        assert_eq!(cut("completed", Value::Null), Ending::Ended);
        assert_eq!(cut("", Value::Null), Ending::Unknown);
        assert!(matches!(read(b"{\"choices\": []}"), Err(NotAResponse::NoOutput)));
        assert!(matches!(read(b"[1]"), Err(NotAResponse::Json(_))));
    }

    #[test]
    fn an_assistant_turn_goes_back_as_its_output_items_under_the_agents_call_ids() {
        let output = json!([
            {"type": "reasoning", "id": "rs_1", "encrypted_content": "gAAA", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "search", "arguments": "{}"},
            {"type": "function_call", "id": "fc_2", "call_id": "call_1", "name": "lookup", "arguments": "{}"},
        ]);
        let sent = |id: &str, name: &str| SentCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: "{}".to_owned(),
            passback: Map::new(),
        };
        let turn = Message::Assistant {
            content: String::new(),
            calls: vec![sent("call_1", "search"), sent("call_1_2", "lookup")],
            reasoning: ReasoningFields::default(),
            passback: json!({"output": output}).as_object().unwrap().clone(),
        };
        let messages = [
            Message::User("q".to_owned()),
            turn,
            Message::Tool {
                call_id: "call_1".to_owned(),
                content: "o".to_owned(),
            },
        ];
        let items = input_items(&messages, ReasoningEcho::Send);
        assert_eq!(
            items[0],
            json!({"type": "message", "role": "user", "content": "q"})
        );
        assert_eq!(items[1], output[0]);
        assert_eq!(items[2], output[1]);
        assert_eq!(items[3]["call_id"], "call_1_2");
        assert_eq!(items[3]["id"], "fc_2");
        assert_eq!(
            items[4],
            json!({"type": "function_call_output", "call_id": "call_1", "output": "o"})
        );
        let dropped = input_items(&messages, ReasoningEcho::Drop);
        assert_eq!(dropped.len(), 4);
        assert_eq!(dropped[1]["type"], "function_call");
    }
}
