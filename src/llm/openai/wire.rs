//! The JSON of the OpenAI HTTP API: request bodies we send, and lenient response types we read.
//!
//! Responses come from many servers (OpenAI, vLLM, llama.cpp, Ollama, LM Studio) that each add or
//! leave out fields: unknown fields are ignored, and everything we do not strictly need is optional.

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::llm::reasoning::{self, ReasoningFields};
use crate::llm::{Message, ReplyMessage, WireCall};

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
}

#[derive(Debug, Deserialize)]
pub struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
}

#[derive(Debug, Deserialize)]
pub struct CompletionTokensDetails {
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
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
        }
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
    WireCall { id, name, arguments }
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
pub fn message(message: &Message, echo: ReasoningEcho) -> Value {
    let mut value = message_without_reasoning(message, echo);
    if let (Message::Assistant { reasoning, .. }, ReasoningEcho::Send, Value::Object(fields)) =
        (message, echo, &mut value)
    {
        for (key, text) in [
            ("reasoning", &reasoning.reasoning),
            ("reasoning_content", &reasoning.reasoning_content),
        ] {
            if let Some(text) = text {
                fields.insert(key.to_owned(), json!(text));
            }
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
                    json!({
                        "id": call.id,
                        "type": "function",
                        "function": {"name": call.name, "arguments": call.arguments},
                    })
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
