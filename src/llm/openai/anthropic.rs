//! Anthropic's Messages API (`POST /v1/messages`): `--api anthropic` (the scratchpad continued,
//! as `--api chat` does) and `--api anthropic-tools` (the actions as tools the model calls, as
//! `--api tools` does). Request bodies, the reply read into the shape the client reads every
//! API's in ([`wire::Choice`]), and the headers.
//!
//! Written from Anthropic's documentation of the endpoint and the shapes of its Python SDK
//! (`anthropic.types`): `system`, `messages` of content blocks, `max_tokens` (required),
//! `stop_sequences`, `tools` of `{name, description, input_schema}`; a reply's `content` of
//! `text`, `thinking` (with its `signature`), `redacted_thinking` and `tool_use` blocks and its
//! `stop_reason`. An assistant turn of a tool-use loop goes back with every block it came with,
//! in order and unmodified (the API refuses a loop whose thinking blocks were changed): the
//! blocks are kept whole in [`ReplyMessage::passback`](crate::llm::ReplyMessage) under
//! `content`, so run files record them and a replay serves them. Prompt caching is explicit:
//! `cache_control` breakpoints on the few-shot prefix (text protocol) or on the system prompt and
//! the conversation's last block (tools), so every step and question after the first reads the
//! prefix from the cache.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::wire::{self, ChatMessage, Choice, WireUsage};
use super::{Leave, ModelConfigError, OpenAiConfig, PromptCache};
use crate::llm::reasoning::ReasoningFields;
use crate::llm::{ConverseRequest, Message, TokenUsage};

/// Anthropic's own endpoint, used for `--api anthropic` when no base URL is given.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
/// The `anthropic-version` header every request carries.
pub const VERSION: &str = "2023-06-01";
/// Where the key is read from for `--api anthropic` unless `--api-key-env` names another variable.
pub const KEY_ENV: &str = "ANTHROPIC_API_KEY";
/// `max_tokens` when `--max-tokens 0` asks for none: the API requires one. With extended
/// thinking the thinking budget is added to it.
pub const DEFAULT_MAX_TOKENS: u32 = 4096;
/// The field of [`crate::llm::ReplyMessage::passback`] that keeps a reply's content blocks.
const BLOCKS: &str = "content";

/// A Messages API response, read leniently: what the client needs, every block whole.
#[derive(Debug, Deserialize)]
struct MessageResponse {
    #[serde(default)]
    content: Vec<Value>,
    /// `end_turn`, `stop_sequence`, `max_tokens`, `tool_use`, `pause_turn`, `refusal`.
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

/// The extended-thinking budget the `thinking` option asks for (`{"type": "enabled",
/// "budget_tokens": N}`), if thinking is on.
fn thinking_budget(options: &Map<String, Value>) -> Option<u64> {
    let thinking = options.get("thinking")?;
    (thinking.get("type").and_then(Value::as_str) == Some("enabled"))
        .then(|| thinking.get("budget_tokens").and_then(Value::as_u64).unwrap_or(0))
}

/// The `max_tokens` every request sends: `--max-tokens`, else [`DEFAULT_MAX_TOKENS`] (plus the
/// thinking budget).
pub(super) fn max_tokens(config: &OpenAiConfig) -> u64 {
    match config.max_tokens {
        Some(max_tokens) => u64::from(max_tokens),
        None => u64::from(DEFAULT_MAX_TOKENS) + thinking_budget(&config.options).unwrap_or(0),
    }
}

/// Checks what the API would refuse before any request: with extended thinking, `max_tokens`
/// must exceed the budget. The temperature is left out of every request then (the API takes
/// only 1 with thinking), and `--max-tokens 0` sends [`DEFAULT_MAX_TOKENS`]: both said once here.
pub(super) fn check(config: &OpenAiConfig) -> Result<(), ModelConfigError> {
    if config.max_tokens.is_none() {
        tracing::info!(
            "the Messages API requires `max_tokens`: `--max-tokens 0` sends {}",
            max_tokens(config)
        );
    }
    if let Some(budget) = thinking_budget(&config.options) {
        let max_tokens = max_tokens(config);
        if max_tokens <= budget {
            return Err(ModelConfigError::ThinkingBudget { budget, max_tokens });
        }
        tracing::info!("extended thinking is on: requests leave out `temperature`, as the API requires");
    }
    Ok(())
}

/// The fields after the messages: `max_tokens`, `temperature` (`temperature` over the model's;
/// none with thinking), `stop_sequences` (those with more than whitespace, which the API
/// refuses; the client cuts at every one anyway), then the user's options.
fn finish(
    config: &OpenAiConfig,
    mut body: Map<String, Value>,
    stop: &[String],
    temperature: Option<f64>,
    leave: Leave,
) -> Value {
    body.insert("max_tokens".to_owned(), json!(max_tokens(config)));
    if !leave.temperature && thinking_budget(&config.options).is_none() {
        body.insert(
            "temperature".to_owned(),
            json!(temperature.unwrap_or(config.temperature)),
        );
    }
    let stop: Vec<&String> = stop.iter().filter(|stop| !stop.trim().is_empty()).collect();
    if !stop.is_empty() && !leave.stop {
        body.insert("stop_sequences".to_owned(), json!(stop));
    }
    for (key, value) in &config.options {
        body.insert(key.clone(), value.clone());
    }
    Value::Object(body)
}

/// A text block, with a cache breakpoint when `cached`.
fn text_block(text: &str, cached: bool) -> Value {
    let mut block = json!({"type": "text", "text": text});
    if cached {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    block
}

/// The body of a text call (`--api anthropic`, and a text call of `--api anthropic-tools`): the
/// continue-instruction as `system`, the prompt as the user's content — two text blocks when
/// `shared_prefix` (the few-shot prompt every question shares) splits it, a cache breakpoint
/// after the first.
pub(super) fn text_body(
    config: &OpenAiConfig,
    prompt: &str,
    shared_prefix: usize,
    stop: &[String],
    temperature: Option<f64>,
    leave: Leave,
) -> Value {
    let split = (config.prompt_cache == PromptCache::Breakpoints
        && shared_prefix > 0
        && shared_prefix < prompt.len()
        && prompt.is_char_boundary(shared_prefix))
    .then(|| prompt.split_at(shared_prefix))
    .filter(|(prefix, rest)| !prefix.trim().is_empty() && !rest.trim().is_empty());
    let content = match split {
        Some((prefix, rest)) => json!([text_block(prefix, true), text_block(rest, false)]),
        None => json!([text_block(prompt, false)]),
    };
    let body = wire::object([
        ("model", json!(config.model)),
        ("system", json!(wire::CONTINUE_INSTRUCTION)),
        ("messages", json!([{"role": "user", "content": content}])),
    ]);
    finish(config, body, stop, temperature, leave)
}

/// The body of one tool-use turn: the system prompt, the conversation as alternating user and
/// assistant messages of content blocks, and the functions as `tools`. With prompt caching, a
/// breakpoint after the system prompt (which caches the tools too) and one on the last block of
/// the conversation, which the next turn reads back.
pub(super) fn converse_body(config: &OpenAiConfig, request: &ConverseRequest<'_>, leave: Leave) -> Value {
    let cached = config.prompt_cache == PromptCache::Breakpoints;
    let mut system = Vec::new();
    let mut messages: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in request.messages {
        let (role, blocks) = match message {
            Message::System(text) => {
                system.push(text_block(text, false));
                continue;
            }
            Message::User(text) => ("user", vec![text_block(text, false)]),
            Message::Tool { call_id, content } => (
                "user",
                vec![json!({"type": "tool_result", "tool_use_id": call_id, "content": content})],
            ),
            Message::Assistant { .. } => ("assistant", assistant_blocks(message, config)),
        };
        // The API takes the results of a turn's calls, and any text after them, as one message.
        match messages.last_mut() {
            Some((last_role, last)) if *last_role == role => last.extend(blocks),
            _ => messages.push((role, blocks)),
        }
    }
    if cached {
        if let Some(last) = system.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        if let Some(last) = messages.last_mut().and_then(|(_, blocks)| blocks.last_mut()) {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
    }
    let messages: Vec<Value> = messages
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect();
    let tools: Vec<Value> = request
        .functions
        .iter()
        .map(|function| {
            json!({"name": function.name, "description": function.description,
                   "input_schema": function.parameters})
        })
        .collect();
    let mut body = wire::object([("model", json!(config.model))]);
    if !system.is_empty() {
        body.insert("system".to_owned(), Value::Array(system));
    }
    body.insert("messages".to_owned(), Value::Array(messages));
    body.insert("tools".to_owned(), Value::Array(tools));
    finish(config, body, &[], None, leave)
}

/// An assistant turn as it goes back: the content blocks it came with, whole and in order
/// (thinking blocks with their signatures), each `tool_use` under the id the agent answers it by;
/// or, when they were not kept (`--no-reasoning-echo`, a turn past the bound of what a reply
/// keeps, a recording of another API), its text and calls rebuilt.
fn assistant_blocks(message: &Message, config: &OpenAiConfig) -> Vec<Value> {
    let Message::Assistant {
        content,
        calls,
        passback,
        ..
    } = message
    else {
        return Vec::new();
    };
    let kept = passback
        .get(BLOCKS)
        .and_then(Value::as_array)
        .filter(|_| config.reasoning_echo == wire::ReasoningEcho::Send);
    if let Some(blocks) = kept {
        let mut calls = calls.iter();
        return blocks
            .iter()
            .map(|block| {
                let mut block = block.clone();
                if block["type"] == "tool_use"
                    && let Some(call) = calls.next()
                {
                    block["id"] = json!(call.id);
                }
                block
            })
            .collect();
    }
    let mut blocks = Vec::new();
    let text = crate::llm::reasoning::split_think(content).rest;
    if !text.trim().is_empty() {
        blocks.push(text_block(text, false));
    }
    for call in calls {
        let input = serde_json::from_str::<Value>(&call.arguments)
            .ok()
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({}));
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    if blocks.is_empty() {
        // The API refuses an empty assistant turn.
        blocks.push(text_block("(no reply)", false));
    }
    blocks
}

/// A Messages API response read as the one choice of a Chat Completions reply: its text blocks
/// joined as the content, its thinking blocks' text as the reasoning, its `tool_use` blocks as
/// the calls (their `input` as the arguments), every block whole under `content` of what goes
/// back, and the `stop_reason` as the finish reason (`max_tokens` cut it, anything else ended).
pub(super) fn choices(bytes: &[u8]) -> Result<(Vec<Choice>, Option<TokenUsage>), serde_json::Error> {
    let response: MessageResponse = serde_json::from_slice(bytes)?;
    let usage = response.usage.as_ref().map(WireUsage::tokens);
    let kind = |block: &Value| block.get("type").and_then(Value::as_str).unwrap_or("").to_owned();
    let texts_of = |wanted: &str, field: &str| -> Option<String> {
        let texts: Vec<&str> = response
            .content
            .iter()
            .filter(|block| kind(block) == wanted)
            .filter_map(|block| block.get(field).and_then(Value::as_str))
            .collect();
        (!texts.is_empty()).then(|| texts.concat())
    };
    let text = texts_of("text", "text");
    let thinking = texts_of("thinking", "thinking");
    let calls: Vec<Value> = response
        .content
        .iter()
        .filter(|block| kind(block) == "tool_use")
        .map(|block| json!({"id": block.get("id"), "name": block.get("name"), "arguments": block.get("input")}))
        .collect();
    let mut other = Map::new();
    other.insert("role".to_owned(), json!("assistant"));
    if !response.content.is_empty() {
        other.insert(BLOCKS.to_owned(), Value::Array(response.content.clone()));
    }
    let finish_reason = response.stop_reason.map(|reason| match reason.as_str() {
        "max_tokens" => json!("length"),
        _ => json!(reason),
    });
    let choice = Choice {
        text: None,
        message: Some(ChatMessage {
            content: text,
            tool_calls: (!calls.is_empty()).then_some(calls),
            function_call: None,
            reasoning: ReasoningFields {
                reasoning: thinking,
                reasoning_content: None,
            },
            other,
        }),
        finish_reason,
        reasoning: ReasoningFields::default(),
    };
    Ok((vec![choice], usage))
}

/// The headers of every request: the key as `x-api-key` (marked sensitive, so no log shows it)
/// and the API version.
pub(super) fn headers(builder: reqwest::RequestBuilder, key: Option<&str>) -> reqwest::RequestBuilder {
    let mut builder = builder.header("anthropic-version", VERSION);
    if let Some(key) = key
        && let Ok(mut value) = reqwest::header::HeaderValue::from_str(key)
    {
        value.set_sensitive(true);
        builder = builder.header("x-api-key", value);
    }
    builder
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::{FunctionSpec, SentCall};

    fn config() -> OpenAiConfig {
        let mut config = OpenAiConfig::new("claude-x");
        config.api = super::super::Api::Anthropic;
        config
    }

    #[test]
    fn a_text_body_splits_the_prompt_at_the_shared_prefix() {
        let stop = ["\nObservation 1:".to_owned(), "\n".to_owned()];
        let body = text_body(
            &config(),
            "EXAMPLES\nQuestion: q\nThought 1:",
            9,
            &stop,
            None,
            Leave::NOTHING,
        );
        assert_eq!(
            body,
            json!({"model": "claude-x", "system": wire::CONTINUE_INSTRUCTION,
                "messages": [{"role": "user", "content": [
                    {"type": "text", "text": "EXAMPLES\n", "cache_control": {"type": "ephemeral"}},
                    {"type": "text", "text": "Question: q\nThought 1:"}]}],
                "max_tokens": 256, "temperature": 0.0, "stop_sequences": ["\nObservation 1:"]})
        );
        let mut off = config();
        off.prompt_cache = PromptCache::Off;
        off.max_tokens = None;
        let body = text_body(&off, "EXAMPLES\nQuestion: q", 9, &[], Some(0.7), Leave::NOTHING);
        assert_eq!(
            body["messages"][0]["content"],
            json!([{"type": "text", "text": "EXAMPLES\nQuestion: q"}])
        );
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(body["temperature"], 0.7);
        assert!(body.get("stop_sequences").is_none());
    }

    #[test]
    fn thinking_leaves_out_the_temperature_and_needs_room_past_its_budget() {
        let mut config = config();
        config.options.insert(
            "thinking".to_owned(),
            json!({"type": "enabled", "budget_tokens": 1024}),
        );
        assert!(matches!(
            check(&config),
            Err(ModelConfigError::ThinkingBudget {
                budget: 1024,
                max_tokens: 256
            })
        ));
        config.max_tokens = None;
        check(&config).unwrap();
        let body = text_body(&config, "p", 0, &[], Some(0.7), Leave::NOTHING);
        assert!(body.get("temperature").is_none());
        assert_eq!(body["max_tokens"], 4096 + 1024);
    }

    #[test]
    fn a_tool_turn_goes_back_with_its_blocks_whole() {
        let blocks = json!([
            {"type": "thinking", "thinking": "I search.", "signature": "sig=="},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "Searching."},
            {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"entity": "X"}}]);
        let reply = json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
            "content": blocks, "stop_reason": "tool_use", "stop_sequence": null,
            "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 90}});
        let (choices, usage) = choices(reply.to_string().as_bytes()).unwrap();
        assert_eq!(usage.unwrap().cached_tokens, 90);
        let message = choices.into_iter().next().unwrap().into_reply();
        assert_eq!(message.content.as_deref(), Some("Searching."));
        assert_eq!(message.reasoning.reasoning.as_deref(), Some("I search."));
        assert_eq!(message.tool_calls[0].arguments, json!({"entity": "X"}));
        let echoed = Message::Assistant {
            content: "Searching.".to_owned(),
            calls: vec![SentCall {
                id: "toolu_1".to_owned(),
                name: "search".to_owned(),
                arguments: "{\"entity\":\"X\"}".to_owned(),
                passback: Map::new(),
            }],
            reasoning: message.reasoning.clone(),
            passback: message.passback.clone(),
        };
        let messages = [
            Message::System("S".to_owned()),
            Message::User("Question: q".to_owned()),
            echoed,
            Message::Tool {
                call_id: "toolu_1".to_owned(),
                content: "X is a page.".to_owned(),
            },
            Message::User("Call a function.".to_owned()),
        ];
        let functions = [FunctionSpec {
            name: "search".to_owned(),
            description: "Search".to_owned(),
            parameters: json!({"type": "object"}),
        }];
        let request = ConverseRequest {
            messages: &messages,
            functions: &functions,
            step: 2,
            purpose: crate::llm::CallPurpose::Step,
        };
        let body = converse_body(&config(), &request, Leave::NOTHING);
        let ephemeral = json!({"type": "ephemeral"});
        assert_eq!(
            body["system"],
            json!([{"type": "text", "text": "S", "cache_control": ephemeral}])
        );
        assert_eq!(
            body["messages"][1],
            json!({"role": "assistant", "content": blocks})
        );
        assert_eq!(
            body["messages"][2]["content"],
            json!([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "X is a page."},
                   {"type": "text", "text": "Call a function.", "cache_control": ephemeral}])
        );
        assert_eq!(
            body["tools"],
            json!([{"name": "search", "description": "Search", "input_schema": {"type": "object"}}])
        );
    }
}
