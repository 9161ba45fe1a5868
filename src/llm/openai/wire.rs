//! The JSON of the OpenAI HTTP API: request bodies we send, and lenient response types we read.
//!
//! Responses come from many servers (OpenAI, vLLM, llama.cpp, Ollama, LM Studio) that each add or
//! leave out fields: unknown fields are ignored, and everything we do not strictly need is optional.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::base::secret::Secrets;
use crate::llm::reasoning::{self, ReasoningFields};
use crate::llm::{Message, ReplyMessage, TokenUsage, WireCall};

/// The instruction a chat model gets so that it continues the scratchpad instead of answering it.
pub const CONTINUE_INSTRUCTION: &str = "Continue the text the user sends, in exactly the format of its examples. \
Reply with only what comes next after the text's last line: do not repeat the text, do not explain, \
and stop after the Action line.";

/// A `/completions` or `/chat/completions` response.
#[derive(Debug, Deserialize)]
pub struct CompletionResponse {
    #[serde(default)]
    pub choices: Vec<Choice>,
    #[serde(default)]
    pub usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
pub struct Choice {
    /// `/completions`: the generated text.
    #[serde(default)]
    pub text: Option<String>,
    /// `/chat/completions`: the assistant's message.
    #[serde(default)]
    pub message: Option<ChatMessage>,
    /// `stop`, `length`, another server's own word, or null: tells a reply of only reasoning the
    /// token cap cut from one the server ended ([`reasoning::Ending`]).
    #[serde(default)]
    pub finish_reason: Option<Value>,
    /// `/completions` of a server whose reasoning parser runs there too.
    #[serde(flatten)]
    pub reasoning: ReasoningFields,
}

#[derive(Debug, Deserialize)]
pub struct ChatMessage {
    /// Null when a model refuses or calls a tool.
    #[serde(default)]
    pub content: Option<String>,
    /// Each call as sent; read leniently ([`wire_call`]), so that one odd entry is the agent's to
    /// refuse, not a failed request.
    #[serde(default)]
    pub tool_calls: Option<Vec<Value>>,
    /// The legacy single call (`functions` API), which some servers still send beside
    /// `tool_calls`, where it may disagree (llama-cpp-python): read only when there is no
    /// `tool_calls`.
    #[serde(default)]
    pub function_call: Option<Value>,
    /// `reasoning` or `reasoning_content`, when the server parses the model's thinking apart.
    #[serde(flatten)]
    pub reasoning: ReasoningFields,
    /// Every other field (`role` among them), as received: what goes back with the message.
    #[serde(flatten)]
    pub other: Map<String, Value>,
}

/// A response's `usage`, in whichever API's words it came: Chat Completions' `prompt_tokens`,
/// `completion_tokens`, `prompt_tokens_details.cached_tokens` and
/// `completion_tokens_details.reasoning_tokens`; the Responses API's `input_tokens`,
/// `output_tokens`, `input_tokens_details.cached_tokens` and
/// `output_tokens_details.reasoning_tokens`; Anthropic's `input_tokens`, `output_tokens`,
/// `cache_read_input_tokens` and `cache_creation_input_tokens`. [`WireUsage::tokens`] reads it
/// into one shape.
#[derive(Debug, Deserialize)]
pub struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub prompt_tokens_details: Option<TokensDetails>,
    #[serde(default)]
    pub completion_tokens_details: Option<TokensDetails>,
    #[serde(default)]
    pub input_tokens: Option<u64>,
    #[serde(default)]
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub input_tokens_details: Option<TokensDetails>,
    #[serde(default)]
    pub output_tokens_details: Option<TokensDetails>,
    #[serde(default)]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub cache_creation_input_tokens: Option<u64>,
}

/// `*_tokens_details`: the part of a count read from the cache, written to it (OpenAI's
/// `cache_write_tokens`), or spent thinking.
#[derive(Debug, Deserialize)]
pub struct TokensDetails {
    #[serde(default)]
    pub cached_tokens: Option<u64>,
    #[serde(default)]
    pub cache_write_tokens: Option<u64>,
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
}

/// What a reply body of any of the APIs reports spending: its top-level `usage`, read into one
/// shape; `None` when it has none or is no JSON object.
pub fn reply_usage(body: &[u8]) -> Option<TokenUsage> {
    #[derive(Deserialize)]
    struct Reported {
        usage: Option<WireUsage>,
    }
    let reported: Reported = serde_json::from_slice(body).ok()?;
    Some(reported.usage?.tokens())
}

impl WireUsage {
    /// The counts in one shape: every input token in `prompt_tokens` (Anthropic's
    /// `input_tokens` counts only those after the last cache breakpoint, so its cache reads and
    /// writes are added), of them those read from the cache and those written to it; the output
    /// tokens and, of them, those spent thinking. A count the server leaves out is 0.
    pub fn tokens(&self) -> TokenUsage {
        let detail = |details: &Option<TokensDetails>, field: fn(&TokensDetails) -> Option<u64>| {
            details.as_ref().and_then(field)
        };
        let cache_read = self.cache_read_input_tokens.unwrap_or(0);
        let cache_write = self.cache_creation_input_tokens.unwrap_or(0);
        // OpenAI counts the tokens written among the input's; Anthropic's are apart from it.
        let openai_cache_write = detail(&self.prompt_tokens_details, |d| d.cache_write_tokens)
            .or_else(|| detail(&self.input_tokens_details, |d| d.cache_write_tokens));
        let prompt_tokens = match (self.prompt_tokens, self.input_tokens) {
            (Some(prompt), _) => prompt,
            (None, Some(input)) => input.saturating_add(cache_read).saturating_add(cache_write),
            (None, None) => cache_read.saturating_add(cache_write),
        };
        let cached_tokens = detail(&self.prompt_tokens_details, |d| d.cached_tokens)
            .or_else(|| detail(&self.input_tokens_details, |d| d.cached_tokens))
            .unwrap_or(cache_read);
        TokenUsage {
            prompt_tokens,
            completion_tokens: self.completion_tokens.or(self.output_tokens).unwrap_or(0),
            reasoning_tokens: detail(&self.completion_tokens_details, |d| d.reasoning_tokens)
                .or_else(|| detail(&self.output_tokens_details, |d| d.reasoning_tokens))
                .unwrap_or(0),
            cached_tokens,
            cache_write_tokens: openai_cache_write.unwrap_or(cache_write),
        }
    }
}

/// An error body: `{"error": {"message": ..., "param": ...}}`.
#[derive(Debug, Deserialize)]
pub struct ErrorResponse {
    pub error: ErrorDetail,
}

#[derive(Debug, Deserialize)]
pub struct ErrorDetail {
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub param: Option<String>,
}

impl Choice {
    /// The generated text after any reasoning, whichever API answered (empty when the server sent
    /// none), and the reasoning: its field's, then a leading `<think>` block's.
    pub fn into_text(self) -> (String, Option<String>) {
        let (text, fields) = match (self.text, self.message) {
            (Some(text), _) => (text, self.reasoning),
            (None, Some(message)) => (message.content.unwrap_or_default(), message.reasoning),
            (None, None) => (String::new(), self.reasoning),
        };
        let split = reasoning::split_think(&text);
        let reasoning = reasoning::combine(fields.text(), split.reasoning);
        let rest = if split.rest.len() == text.len() {
            text
        } else {
            split.rest.to_owned()
        };
        (rest, reasoning)
    }
}

impl Choice {
    /// The assistant's message of a tool-calling turn, close to the wire: its text and its calls,
    /// from `tool_calls`, else from the legacy `function_call`.
    pub fn into_reply(self) -> ReplyMessage {
        let Some(message) = self.message else {
            // A `/completions`-shaped answer: text only.
            return ReplyMessage {
                content: self.text,
                reasoning: self.reasoning,
                tool_calls: Vec::new(),
                passback: Map::new(),
            };
        };
        let calls: Vec<WireCall> = message
            .tool_calls
            .unwrap_or_default()
            .iter()
            .map(wire_call)
            .collect();
        let calls = if calls.is_empty() {
            message
                .function_call
                .as_ref()
                .filter(|call| call.is_object())
                .map(|call| wire_call(&json!({"function": call})))
                .into_iter()
                .collect()
        } else {
            if let Some(legacy) = &message.function_call
                && calls.first().map(|call| Value::String(call.name.clone())) != legacy.get("name").cloned()
            {
                tracing::debug!(
                    "the reply's legacy `function_call` disagrees with its `tool_calls`; reading `tool_calls`"
                );
            }
            calls
        };
        ReplyMessage {
            content: message.content,
            reasoning: message.reasoning,
            tool_calls: calls,
            passback: passback(message.other, &["role"]),
        }
    }
}

/// `fields` without those named in `read` (the fields the client reads and rebuilds itself) and
/// without nulls (a null says nothing a server would miss): what goes back as received.
fn passback(fields: Map<String, Value>, read: &[&str]) -> Map<String, Value> {
    fields
        .into_iter()
        .filter(|(key, value)| !value.is_null() && !read.contains(&key.as_str()))
        .collect()
}

/// The fields of an assistant message that are its reasoning, which `--no-reasoning-echo` keeps
/// from the server and `export` leaves out: the two reasoning texts, OpenRouter's
/// `reasoning_details`, and a Responses API reply's `output` items (its reasoning items among
/// them; sent only to the Responses API, whose client reads the turn apart). A tool call's
/// fields are never among them: Gemini 3's `extra_content.google.thought_signature` is no
/// reasoning text, and Gemini refuses a history whose calls lack it.
pub const REASONING_FIELDS: [&str; 4] = [
    "reasoning",
    "reasoning_content",
    "reasoning_details",
    RESPONSES_OUTPUT,
];

/// The field of a Responses API reply ([`ReplyMessage::passback`]) that keeps its `output` items
/// as received: what goes back, item for item, as the next requests' input.
pub const RESPONSES_OUTPUT: &str = "output";

/// The field of a Responses API reply ([`ReplyMessage::passback`]) that keeps the response's
/// `id`: with `--llm-option store=true`, the next request names it as its
/// `previous_response_id` instead of sending the conversation again.
pub const RESPONSES_ID: &str = "id";

/// The most bytes (as JSON) of the fields one reply's message and calls pass back
/// ([`ReplyMessage::passback`], [`WireCall::passback`]) together: run files keep them. A field
/// past it is dropped whole, with a warning (an opaque value cut short is worth nothing).
pub const MAX_PASSBACK_BYTES: usize = 256 * 1024;

/// Bounds what `message` passes back: a field whose JSON holds one of `secrets` is dropped (a
/// run file keeps these fields, and no secret may reach one), and so is every field once the
/// fields kept so far reach [`MAX_PASSBACK_BYTES`]; each drop is warned about by name.
pub fn bound_passback(message: &mut ReplyMessage, secrets: &Secrets) {
    let mut budget = MAX_PASSBACK_BYTES;
    let mut keep = |owner: &str, fields: &mut Map<String, Value>| {
        fields.retain(|key, value| {
            let text = value.to_string();
            if secrets.redact(&text) != text {
                tracing::warn!("the {owner}'s field `{key}` holds a secret of the request; not kept");
                return false;
            }
            if text.len() > budget {
                tracing::warn!(
                    "the {owner}'s field `{key}` ({} bytes) is past the {MAX_PASSBACK_BYTES} bytes one reply passes back; not kept",
                    text.len()
                );
                return false;
            }
            budget -= text.len();
            true
        });
    };
    keep("reply", &mut message.passback);
    for call in &mut message.tool_calls {
        keep("tool call", &mut call.passback);
    }
}

/// One entry of `tool_calls`: `{"id", "type": "function", "function": {"name", "arguments"}}`,
/// read whatever is missing — an entry with no name keeps an empty one, which the agent refuses
/// as a call to no function. Some servers put `name` and `arguments` at the top of the entry.
fn wire_call(entry: &Value) -> WireCall {
    let function = entry
        .get("function")
        .filter(|function| function.is_object())
        .unwrap_or(entry);
    let id = match entry.get("id") {
        Some(Value::String(id)) => Some(id.clone()),
        Some(Value::Number(id)) => Some(id.to_string()),
        _ => None,
    };
    let name = match function.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => String::new(),
    };
    let arguments = function
        .get("arguments")
        .or_else(|| function.get("parameters"))
        .cloned()
        .unwrap_or(Value::Null);
    let read: &[&str] = if std::ptr::eq(function, entry) {
        &["id", "type", "name", "arguments", "parameters"]
    } else {
        &["id", "type", "function"]
    };
    let passback = match entry {
        Value::Object(fields) => self::passback(fields.clone(), read),
        _ => Map::new(),
    };
    WireCall {
        id,
        name,
        arguments,
        passback,
    }
}

/// Whether an assistant turn goes back to the server with the reasoning it came with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningEcho {
    /// Under the field it arrived in (`reasoning`, `reasoning_content`), a `<think>` block left in
    /// the content: interleaved-thinking models (gpt-oss, MiniMax-M2) keep their chain.
    #[default]
    Send,
    /// Without it (`--no-reasoning-echo`): no reasoning field, the content's `<think>` block cut.
    Drop,
}

/// One conversation message as OpenAI's API takes it. An assistant message's `content` is `""`
/// rather than `null` beside its calls (llama-cpp-python answers 500 to `null`), and its calls'
/// arguments are JSON text, whatever the server sent; its reasoning goes back as `echo` says.
/// Every other field the server put on the message and on each call goes back as received
/// (the message's reasoning fields among them, [`REASONING_FIELDS`], only as `echo` says).
pub fn message(message: &Message, echo: ReasoningEcho) -> Value {
    let mut value = message_without_reasoning(message, echo);
    let (
        Message::Assistant {
            reasoning, passback, ..
        },
        Value::Object(fields),
    ) = (message, &mut value)
    else {
        return value;
    };
    if echo == ReasoningEcho::Send {
        for (key, text) in [
            ("reasoning", &reasoning.reasoning),
            ("reasoning_content", &reasoning.reasoning_content),
        ] {
            if let Some(text) = text {
                fields.insert(key.to_owned(), json!(text));
            }
        }
    }
    for (key, field) in passback {
        if (echo == ReasoningEcho::Send || !REASONING_FIELDS.contains(&key.as_str()))
            && !fields.contains_key(key)
        {
            fields.insert(key.clone(), field.clone());
        }
    }
    value
}

fn message_without_reasoning(message: &Message, echo: ReasoningEcho) -> Value {
    let assistant_content = |content: &str| match echo {
        ReasoningEcho::Send => content.to_owned(),
        ReasoningEcho::Drop => reasoning::split_think(content).rest.to_owned(),
    };
    match message {
        Message::System(content) => json!({"role": "system", "content": content}),
        Message::User(content) => json!({"role": "user", "content": content}),
        Message::Assistant { content, calls, .. } if calls.is_empty() => {
            json!({"role": "assistant", "content": assistant_content(content)})
        }
        Message::Assistant { content, calls, .. } => {
            let content = assistant_content(content);
            let calls: Vec<Value> = calls
                .iter()
                .map(|call| {
                    let mut entry = json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    });
                    if let Value::Object(fields) = &mut entry {
                        for (key, field) in &call.passback {
                            fields.entry(key.clone()).or_insert_with(|| field.clone());
                        }
                    }
                    entry
                })
                .collect();
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Message::Tool { call_id, content } => {
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

/// The server's own explanation of a failed request: `error.message` of a JSON body (or its
/// `error` or `message` string), else the body itself, else nothing. Whole: the caller redacts the
/// key and only then shortens it.
pub fn error_message(body: &[u8]) -> Option<String> {
    if let Ok(response) = serde_json::from_slice::<ErrorResponse>(body)
        && let Some(message) = response.error.message
    {
        return Some(message);
    }
    // Some servers answer `{"error": "text"}`, vLLM `{"object": "error", "message": "text"}`.
    if let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body)
        && let Some(Value::String(message)) = object.get("error").or_else(|| object.get("message"))
    {
        return Some(message.clone());
    }
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

/// The `param` an error body names, when it names one.
pub fn error_param(body: &[u8]) -> Option<String> {
    serde_json::from_slice::<ErrorResponse>(body)
        .ok()
        .and_then(|response| response.error.param)
}

/// The request fields a refusal of tool calling names as its `param`.
const TOOL_FIELDS: [&str; 2] = ["tools", "tool_choice"];
/// Words of an error message that speak of tool calling as a feature or of the `tools` field.
const TOOL_FEATURE: [&str; 8] = [
    "tools",
    "tool choice",
    "tool_choice",
    "tool calling",
    "tool-calling",
    "tool use",
    "function calling",
    "function-calling",
];
/// Words that refuse it: the server or model lacks it, or needs a setting the user must change.
const REFUSAL: [&str; 5] = [
    "not support",
    "unsupported",
    "requires",
    "not enabled",
    "not available",
];

/// Whether an error body refuses the `tools` field itself — the server or the model has no tool
/// calling, so every conversation would be refused alike — rather than something in one
/// conversation (an echoed call, a `tool` message), which another question's need not repeat.
/// The refusals on record (fixtures/openai/tools/documented) are vLLM without a tool parser
/// (`"auto" tool choice requires --enable-auto-tool-choice ...`), llama.cpp without `--jinja`
/// (`tools param requires --jinja flag`) and an Ollama model whose template has no tools
/// (`... does not support tools`). Their like: an error whose `param` is the field (OpenAI's
/// `unsupported_parameter`), or a message that names tools or tool calling with a refusal
/// (`not support`, `unsupported`, `requires`, `not enabled`, `not available`) and no message of
/// the conversation (`messages with role 'tool' must ...`, `an assistant message with 'tool_calls'
/// ...`).
pub fn refuses_tools(body: &[u8]) -> bool {
    if error_param(body).is_some_and(|param| TOOL_FIELDS.contains(&param.as_str())) {
        return true;
    }
    let Some(message) = error_message(body) else {
        return false;
    };
    let message = message.to_lowercase();
    !message.contains("message")
        && TOOL_FEATURE.iter().any(|words| message.contains(words))
        && REFUSAL.iter().any(|words| message.contains(words))
}

/// The JSON object of one request, in the order fields are written.
pub fn object(fields: impl IntoIterator<Item = (&'static str, Value)>) -> Map<String, Value> {
    fields
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(passback: Value, call_passback: Value) -> ReplyMessage {
        let object = |value: Value| match value {
            Value::Object(fields) => fields,
            _ => Map::new(),
        };
        ReplyMessage {
            content: None,
            reasoning: ReasoningFields::default(),
            tool_calls: vec![WireCall {
                id: Some("c".to_owned()),
                name: "search".to_owned(),
                arguments: json!("{}"),
                passback: object(call_passback),
            }],
            passback: object(passback),
        }
    }

    /// The usage objects of the three APIs, in their documented shapes (OpenAI's prompt-caching
    /// guide and its Responses API reference, Anthropic's prompt-caching page), read into one.
    #[test]
    fn every_apis_usage_reads_into_one_shape() {
        let tokens = |usage: Value| serde_json::from_value::<WireUsage>(usage).unwrap().tokens();
        let chat = tokens(
            json!({"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
            "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 128, "audio_tokens": 0,
                "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}),
        );
        assert_eq!(
            chat,
            TokenUsage {
                prompt_tokens: 2006,
                completion_tokens: 300,
                reasoning_tokens: 128,
                cached_tokens: 1920,
                cache_write_tokens: 0
            }
        );
        let responses = tokens(
            json!({"input_tokens": 2006, "input_tokens_details": {"cached_tokens": 1920, "cache_write_tokens": 0},
            "output_tokens": 300, "output_tokens_details": {"reasoning_tokens": 128}, "total_tokens": 2306}),
        );
        assert_eq!(responses, chat);
        // OpenAI's newer usage says what the request wrote to the cache, of its input tokens.
        let written = tokens(
            json!({"input_tokens": 2006, "output_tokens": 1, "total_tokens": 2007,
            "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 1920},
            "output_tokens_details": {"reasoning_tokens": 0}}),
        );
        assert_eq!((written.prompt_tokens, written.cache_write_tokens), (2006, 1920));
        // Anthropic's `input_tokens` are those after the last breakpoint: the whole input adds
        // the cache's reads and writes.
        let anthropic = tokens(json!({"input_tokens": 21, "cache_creation_input_tokens": 188086,
            "cache_read_input_tokens": 1920, "output_tokens": 393}));
        assert_eq!(
            anthropic,
            TokenUsage {
                prompt_tokens: 21 + 188_086 + 1920,
                completion_tokens: 393,
                reasoning_tokens: 0,
                cached_tokens: 1920,
                cache_write_tokens: 188_086
            }
        );
        // A server that reports less reports zeros.
        assert_eq!(
            tokens(json!({"prompt_tokens": 5})),
            TokenUsage {
                prompt_tokens: 5,
                ..TokenUsage::default()
            }
        );
    }

    #[test]
    fn fields_that_hold_a_secret_or_overflow_are_not_kept() {
        let secrets = Secrets::new().with("sk-secret-key");
        let mut message = reply(
            json!({"leak": {"echo": "Bearer sk-secret-key"}, "kept": [1], "huge": "x".repeat(MAX_PASSBACK_BYTES)}),
            json!({"extra_content": {"google": {"thought_signature": "abc"}}}),
        );
        bound_passback(&mut message, &secrets);
        assert_eq!(message.passback, *json!({"kept": [1]}).as_object().unwrap());
        assert_eq!(
            message.tool_calls[0].passback,
            *json!({"extra_content": {"google": {"thought_signature": "abc"}}})
                .as_object()
                .unwrap()
        );
    }

    #[test]
    fn the_fields_of_a_message_and_its_calls_are_read_apart_and_go_back() {
        let choice: Choice = serde_json::from_value(json!({"message": {
            "role": "assistant", "content": null, "refusal": null, "reasoning": "r",
            "reasoning_details": [{"type": "reasoning.text", "text": "r"}],
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "search", "arguments": "{}"},
                            "extra_content": {"google": {"thought_signature": "sig"}}}]}}))
        .unwrap();
        let message = choice.into_reply();
        assert_eq!(
            Value::Object(message.passback.clone()),
            json!({"reasoning_details": [{"type": "reasoning.text", "text": "r"}]})
        );
        let echoed = Message::Assistant {
            content: String::new(),
            calls: vec![crate::llm::SentCall {
                id: "c".to_owned(),
                name: "search".to_owned(),
                arguments: "{}".to_owned(),
                passback: message.tool_calls[0].passback.clone(),
            }],
            reasoning: message.reasoning.clone(),
            passback: message.passback.clone(),
        };
        let sent = super::message(&echoed, ReasoningEcho::Send);
        assert_eq!(sent["reasoning"], "r");
        assert_eq!(sent["reasoning_details"][0]["text"], "r");
        assert_eq!(
            sent["tool_calls"][0]["extra_content"]["google"]["thought_signature"],
            "sig"
        );
        let dropped = super::message(&echoed, ReasoningEcho::Drop);
        assert!(dropped.get("reasoning").is_none() && dropped.get("reasoning_details").is_none());
        assert_eq!(
            dropped["tool_calls"][0]["extra_content"]["google"]["thought_signature"],
            "sig"
        );
    }
}
