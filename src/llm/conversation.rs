//! The tool-calling conversation (`--api tools`): the messages sent, the functions offered and the
//! assistant's reply as the server sent it.
//!
//! A reply is kept close to the wire ([`ReplyMessage`]: the text, and each tool call with its id
//! and arguments exactly as they came — a JSON string or an object, an id or none) so that a run
//! file records what the model said and a replay decodes it again the same way. Reading the
//! calls out of a reply (ids made unique, arguments checked against the schema, calls written
//! into the text by servers that do not parse them) is the agent's, in the `calls` module.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{CallPurpose, ReasoningFields, TokenUsage};

/// One function offered to the model: OpenAI's `tools[].function`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FunctionSpec {
    pub name: String,
    pub description: String,
    /// A JSON Schema of the arguments object.
    pub parameters: Value,
}

/// One message of the conversation, as sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    System(String),
    User(String),
    /// An assistant reply echoed back, its calls under the ids the tool messages answer, the
    /// reasoning fields it came with (sent back unless `--no-reasoning-echo`) and every other
    /// field the server put on it ([`ReplyMessage::passback`]).
    Assistant {
        content: String,
        calls: Vec<SentCall>,
        reasoning: ReasoningFields,
        passback: Map<String, Value>,
    },
    /// The observation answering one call.
    Tool {
        call_id: String,
        content: String,
    },
}

/// A tool call as echoed back in an assistant message: its (unique) id, the function, the
/// arguments as a JSON text, and every other field the server put on the call
/// ([`WireCall::passback`]: Gemini 3's `extra_content.google.thought_signature`).
#[derive(Debug, Clone, PartialEq)]
pub struct SentCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
    pub passback: Map<String, Value>,
}

/// One turn of a tool-calling conversation.
#[derive(Debug, Clone, Copy)]
pub struct ConverseRequest<'a> {
    pub messages: &'a [Message],
    pub functions: &'a [FunctionSpec],
    /// The step this call belongs to (1-based), so recordings can be served per step.
    pub step: usize,
    pub purpose: CallPurpose,
}

/// The assistant's message, close to what the server sent: a run file records it, a replay
/// serves it back.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReplyMessage {
    /// The reply's text; `null` when the server sent none (as beside tool calls).
    #[serde(default)]
    pub content: Option<String>,
    /// The reasoning fields it came with, if any (a `<think>` block stays in `content`).
    #[serde(flatten)]
    pub reasoning: ReasoningFields,
    /// The tool calls, in the order sent; empty when there were none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireCall>,
    /// Every other field the server put on the message, its JSON value as received
    /// (OpenRouter's `reasoning_details`, a reasoning field that is not text, a field no one
    /// here knows): sent back with the message by the client that sent the request.
    /// Absent from older run files: none.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub passback: Map<String, Value>,
}

impl ReplyMessage {
    /// The thinking the reply came with: its reasoning field's, then a leading `<think>` block's.
    pub fn reasoning_text(&self) -> Option<String> {
        let split = super::reasoning::split_think(self.content.as_deref().unwrap_or(""));
        super::reasoning::combine(self.reasoning.text(), split.reasoning)
    }

    /// The reply's text after any leading `<think>` block: what the agent reads.
    pub fn text(&self) -> &str {
        super::reasoning::split_think(self.content.as_deref().unwrap_or("")).rest
    }

    /// Whether the reply is only reasoning: reasoning, and neither text nor calls after it (the
    /// token cap cut it, or the server ended it there: [`super::reasoning::check_cut`]).
    pub fn is_cut(&self) -> bool {
        self.tool_calls.is_empty() && super::reasoning::is_cut(self.text(), self.reasoning_text().as_deref())
    }
}

/// One tool call as the server sent it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireCall {
    /// `null` when the server sent none (some local servers do not).
    #[serde(default)]
    pub id: Option<String>,
    pub name: String,
    /// A JSON text (OpenAI, vLLM, llama.cpp) or an object (Ollama), as sent.
    pub arguments: Value,
    /// Every other field of the call's entry besides `id`, `type` and `function`, its JSON value
    /// as received (Gemini 3's `extra_content`, which holds the call's thought signature): sent
    /// back with the call. Absent from older run files: none.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub passback: Map<String, Value>,
}

/// A reply and what it cost.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reply {
    pub message: ReplyMessage,
    /// How the server says the reply ended (`finish_reason`).
    pub ending: super::Ending,
    pub usage: Option<TokenUsage>,
}
