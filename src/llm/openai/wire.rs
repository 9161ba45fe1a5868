//! The JSON of the OpenAI HTTP API: request bodies we send, and lenient response types we read.
//!
//! Responses come from many servers (OpenAI, vLLM, llama.cpp, Ollama, LM Studio) that each add or
//! leave out fields: unknown fields are ignored, and everything we do not strictly need is optional.

use serde::Deserialize;
use serde_json::{Map, Value};

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
    /// `stop`, `length`, another server's own word, or null: only logged.
    #[serde(default)]
    pub finish_reason: Option<Value>,
}

#[derive(Debug, Deserialize)]
pub struct ChatMessage {
    /// Null when a model refuses or calls a tool.
    #[serde(default)]
    pub content: Option<String>,
}

#[derive(Debug, Deserialize)]
pub struct WireUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
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
    /// The generated text, whichever API answered; empty when the server sent none.
    pub fn into_text(self) -> String {
        match (self.text, self.message) {
            (Some(text), _) => text,
            (None, Some(message)) => message.content.unwrap_or_default(),
            (None, None) => String::new(),
        }
    }
}

/// The server's own explanation of a failed request: `error.message` of a JSON body, else the body
/// itself, else nothing. Whole: the caller redacts the key and only then shortens it.
pub fn error_message(body: &[u8]) -> Option<String> {
    if let Ok(response) = serde_json::from_slice::<ErrorResponse>(body)
        && let Some(message) = response.error.message
    {
        return Some(message);
    }
    // Some servers answer `{"error": "text"}`.
    if let Ok(Value::Object(object)) = serde_json::from_slice::<Value>(body)
        && let Some(Value::String(message)) = object.get("error")
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

/// The JSON object of one request, in the order fields are written.
pub fn object(fields: impl IntoIterator<Item = (&'static str, Value)>) -> Map<String, Value> {
    fields
        .into_iter()
        .map(|(key, value)| (key.to_owned(), value))
        .collect()
}
