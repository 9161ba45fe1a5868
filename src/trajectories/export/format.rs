//! The three formats of `export`: OpenAI chat fine-tuning JSONL, Alpaca JSON, ShareGPT JSONL.

use std::collections::HashSet;
use std::io::{self, Write};
use std::str::FromStr;

use serde_json::{Value, json};

use crate::llm::openai::{ReasoningEcho, wire_message};
use crate::llm::{FunctionSpec, Message, SentCall, reasoning};
use crate::tools::function_key;

use crate::trajectories::export::{ExportReasoning, PromptPart};
use crate::trajectories::rebuild::{Example, Speaker, ToolsConversation, Turn};

/// What `export --format` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// One `{"messages": [...]}` a line (and `"tools"` for a `tools` run), as OpenAI's
    /// fine-tuning takes them: the prompt as `system`, the question and each observation as
    /// `user`, each model turn as `assistant` (a `tools` run: its conversation as sent).
    OpenAiChat,
    /// One JSON array of `{"instruction", "input", "output"}`: the prompt and the question; empty;
    /// the trajectory.
    Alpaca,
    /// One `{"conversations": [{"from", "value"}]}` a line: `system`, `human`, `gpt`.
    ShareGpt,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown export format `{name}`, expected `openai-chat`, `alpaca` or `sharegpt`")]
pub struct UnknownFormat {
    name: String,
}

impl FromStr for ExportFormat {
    type Err = UnknownFormat;

    fn from_str(name: &str) -> Result<ExportFormat, UnknownFormat> {
        match name {
            "openai-chat" | "openai" => Ok(ExportFormat::OpenAiChat),
            "alpaca" => Ok(ExportFormat::Alpaca),
            "sharegpt" => Ok(ExportFormat::ShareGpt),
            _ => Err(UnknownFormat {
                name: name.to_owned(),
            }),
        }
    }
}

/// One example as written, how many bytes of text it holds (for the token estimate), and the
/// calls to functions it does not offer that were left out with their replies.
pub struct Written {
    pub value: Value,
    pub text_bytes: usize,
    pub unknown_calls: Vec<String>,
}

impl ExportFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            ExportFormat::OpenAiChat => "openai-chat",
            ExportFormat::Alpaca => "alpaca",
            ExportFormat::ShareGpt => "sharegpt",
        }
    }

    /// `example` in this format, its prompt part as `prompt` says and the model's thinking as
    /// `reasoning` says; none when it holds nothing the model wrote (a run whose first model call
    /// failed): such an example trains on nothing.
    pub fn example(
        self,
        example: &Example,
        prompt: PromptPart,
        reasoning: ExportReasoning,
    ) -> Option<Written> {
        let system = match prompt {
            PromptPart::Instruction => example.instruction.as_str(),
            PromptPart::WithExamples => example.prompt.as_str(),
        };
        // A run cut short (`--all`) ends with what the model wrote last: an observation after it
        // teaches nothing.
        let mut turns = example.turns.as_slice();
        while let [rest @ .., last] = turns
            && last.speaker == Speaker::Input
            && !rest.is_empty()
        {
            turns = rest;
        }
        // A tools conversation in `openai-chat` is checked on its messages, below.
        let conversed = self == ExportFormat::OpenAiChat && example.conversation.is_some();
        if !conversed && !turns.iter().any(|turn| turn.speaker == Speaker::Model) {
            return None;
        }
        match self {
            ExportFormat::OpenAiChat => match &example.conversation {
                Some(conversation) => openai_conversation(conversation, system, prompt, reasoning),
                None => Some(openai_turns(system, turns, reasoning)),
            },
            ExportFormat::ShareGpt => Some(sharegpt(system, turns, reasoning)),
            ExportFormat::Alpaca => Some(alpaca(system, turns, reasoning)),
        }
    }

    /// Writes the `index`-th example (from 0).
    pub fn write(self, out: &mut dyn Write, value: &Value, index: usize) -> io::Result<()> {
        // invariant: a JSON value of strings, arrays and objects always serializes
        let line = serde_json::to_string(value).expect("a JSON value serializes");
        match self {
            ExportFormat::Alpaca => {
                let separator = if index == 0 { "[\n" } else { ",\n" };
                write!(out, "{separator}{line}")
            }
            ExportFormat::OpenAiChat | ExportFormat::ShareGpt => writeln!(out, "{line}"),
        }
    }

    /// Ends the file after `n_examples` were written.
    pub fn finish(self, out: &mut dyn Write, n_examples: usize) -> io::Result<()> {
        match (self, n_examples) {
            (ExportFormat::Alpaca, 0) => writeln!(out, "[]"),
            (ExportFormat::Alpaca, _) => writeln!(out, "\n]"),
            _ => Ok(()),
        }?;
        out.flush()
    }
}

/// A `tools` run's conversation in `openai-chat`: its messages as sent, cut after the model's last,
/// the functions it offered, the calls to others left out; none when the model wrote nothing.
fn openai_conversation(
    conversation: &ToolsConversation,
    system: &str,
    prompt: PromptPart,
    reasoning: ExportReasoning,
) -> Option<Written> {
    let (offered, unknown_calls) = offered_calls(&conversation.messages, &conversation.functions);
    let mut sent = offered.as_slice();
    while let [rest @ .., Message::Tool { .. } | Message::User(_)] = sent {
        sent = rest;
    }
    if !sent
        .iter()
        .any(|message| matches!(message, Message::Assistant { .. }))
    {
        return None;
    }
    let messages: Vec<Message> = sent
        .iter()
        .filter_map(|message| match message {
            // The system message as sent, or its instruction alone.
            Message::System(sent) => match prompt {
                PromptPart::WithExamples => Some(Message::System(sent.clone())),
                PromptPart::Instruction => system_message(system),
            },
            assistant @ Message::Assistant { .. } => Some(without_passback(assistant)),
            other => Some(other.clone()),
        })
        .collect();
    let tools: Vec<Value> = conversation
        .functions
        .iter()
        .map(|function| json!({"type": "function", "function": function}))
        .collect();
    let text_bytes = messages.iter().map(message_bytes).sum();
    let messages: Vec<Value> = messages
        .iter()
        .map(|message| {
            let thought = match message {
                Message::Assistant {
                    content,
                    reasoning: fields,
                    ..
                } => reasoning::combine(fields.text(), reasoning::split_think(content).reasoning),
                _ => None,
            };
            with_reasoning(
                wire_message(message, ReasoningEcho::Drop),
                thought.as_deref(),
                reasoning,
            )
        })
        .collect();
    Some(Written {
        value: json!({"messages": messages, "tools": tools}),
        text_bytes,
        unknown_calls,
    })
}

/// An assistant turn without what the server passed back on it and its calls
/// ([`crate::llm::ReplyMessage::passback`]): a Responses API reply's output items (encrypted
/// reasoning among them) and response id, Anthropic's content blocks (thinking with its
/// signature), Gemini's thought signatures, OpenRouter's `reasoning_details`. They keep a
/// server's state, they are no training text, and fine-tuning refuses keys beyond its own.
fn without_passback(message: &Message) -> Message {
    let mut message = message.clone();
    if let Message::Assistant { calls, passback, .. } = &mut message {
        passback.clear();
        for call in calls {
            call.passback.clear();
        }
    }
    message
}

/// A text run's turns in `openai-chat`: the prompt as `system`, inputs as `user`, the model's
/// turns as `assistant`.
fn openai_turns(system: &str, turns: &[Turn], reasoning: ExportReasoning) -> Written {
    let messages: Vec<(Message, Option<&str>)> = system_message(system)
        .map(|message| (message, None))
        .into_iter()
        .chain(turns.iter().map(|turn| match turn.speaker {
            Speaker::Input => (Message::User(turn.text.clone()), None),
            Speaker::Model => (
                Message::Assistant {
                    content: turn.text.clone(),
                    calls: Vec::new(),
                    reasoning: Default::default(),
                    passback: Default::default(),
                },
                turn.reasoning.as_deref(),
            ),
        }))
        .collect();
    let text_bytes = messages
        .iter()
        .map(|(message, thought)| message_bytes(message) + kept_bytes(*thought, reasoning))
        .sum();
    let messages: Vec<Value> = messages
        .iter()
        .map(|(message, thought)| {
            with_reasoning(wire_message(message, ReasoningEcho::Drop), *thought, reasoning)
        })
        .collect();
    Written {
        value: json!({"messages": messages}),
        text_bytes,
        unknown_calls: Vec::new(),
    }
}

/// A text run's turns in ShareGPT: `system`, `human`, `gpt`.
fn sharegpt(system: &str, turns: &[Turn], reasoning: ExportReasoning) -> Written {
    let system = system_text(system);
    let mut conversations: Vec<Value> = Vec::new();
    let mut text_bytes = 0;
    if let Some(system) = system {
        text_bytes += system.len();
        conversations.push(json!({"from": "system", "value": system}));
    }
    for turn in turns {
        let text = turn_text(turn, reasoning);
        text_bytes += text.len();
        let from = match turn.speaker {
            Speaker::Input => "human",
            Speaker::Model => "gpt",
        };
        conversations.push(json!({"from": from, "value": text}));
    }
    Written {
        value: json!({"conversations": conversations}),
        text_bytes,
        unknown_calls: Vec::new(),
    }
}

/// A text run in Alpaca: the prompt and the question as the instruction, the rest as the output.
fn alpaca(system: &str, turns: &[Turn], reasoning: ExportReasoning) -> Written {
    let (question, rest) = turns
        .split_first()
        .map_or((None, &[][..]), |(first, rest)| (Some(first), rest));
    let mut instruction = system.to_owned();
    if let Some(Turn { text, .. }) = question {
        instruction.push_str(text);
    }
    let output = rest
        .iter()
        .map(|turn| turn_text(turn, reasoning))
        .collect::<Vec<_>>()
        .join("\n");
    Written {
        text_bytes: instruction.len() + output.len(),
        value: json!({"instruction": instruction, "input": "", "output": output}),
        unknown_calls: Vec::new(),
    }
}

/// The messages of a tools conversation without the calls to functions it does not offer (a
/// model's `serach`: the agent answered it with an error observation, and OpenAI's fine-tuning
/// refuses a call to a function not among `tools`) and the tool messages answering them; an
/// assistant message left with neither text nor calls goes too. A call whose name the agent read
/// as an offered function's (case, `_` and `-` aside) takes that function's name. Returns the
/// messages and the names of the calls left out.
fn offered_calls(messages: &[Message], functions: &[FunctionSpec]) -> (Vec<Message>, Vec<String>) {
    let offered = |name: &str| {
        functions
            .iter()
            .find(|function| function_key(&function.name) == function_key(name))
    };
    let mut left_out_ids: HashSet<&str> = HashSet::new();
    let mut left_out_names = Vec::new();
    let mut kept = Vec::with_capacity(messages.len());
    for message in messages {
        match message {
            Message::Assistant {
                content,
                calls,
                reasoning,
                passback,
            } => {
                let mut kept_calls = Vec::with_capacity(calls.len());
                for call in calls {
                    match offered(&call.name) {
                        Some(function) => kept_calls.push(SentCall {
                            name: function.name.clone(),
                            ..call.clone()
                        }),
                        None => {
                            left_out_ids.insert(&call.id);
                            left_out_names.push(call.name.clone());
                        }
                    }
                }
                if content.is_empty() && kept_calls.is_empty() && !calls.is_empty() {
                    continue;
                }
                kept.push(Message::Assistant {
                    content: content.clone(),
                    calls: kept_calls,
                    reasoning: reasoning.clone(),
                    passback: passback.clone(),
                });
            }
            Message::Tool { call_id, .. } if left_out_ids.contains(call_id.as_str()) => {}
            other => kept.push(other.clone()),
        }
    }
    (kept, left_out_names)
}

/// The system message of an example: the prompt part without the newline that ends it (the
/// question starts the next message); none when it is empty.
fn system_message(system: &str) -> Option<Message> {
    system_text(system).map(|text| Message::System(text.to_owned()))
}

/// The text of [`system_message`].
fn system_text(system: &str) -> Option<&str> {
    let text = system.strip_suffix('\n').unwrap_or(system);
    (!text.trim().is_empty()).then_some(text)
}

/// A turn's text as written: with `<think>…</think>` before a model turn's text when its thinking
/// is kept (ShareGPT, Alpaca: what reasoning-model trainers read).
fn turn_text(turn: &Turn, reasoning: ExportReasoning) -> String {
    match (&turn.reasoning, reasoning) {
        (Some(thought), ExportReasoning::Keep) => format!("<think>\n{thought}\n</think>\n\n{}", turn.text),
        _ => turn.text.clone(),
    }
}

/// An openai-chat assistant message with a `reasoning` key beside its `content` when its
/// thinking is kept.
fn with_reasoning(mut message: Value, thought: Option<&str>, reasoning: ExportReasoning) -> Value {
    if let (Some(thought), ExportReasoning::Keep, Value::Object(fields)) = (thought, reasoning, &mut message)
    {
        fields.insert("reasoning".to_owned(), json!(thought));
    }
    message
}

/// The bytes a kept thought adds to an example.
fn kept_bytes(thought: Option<&str>, reasoning: ExportReasoning) -> usize {
    match (thought, reasoning) {
        (Some(thought), ExportReasoning::Keep) => thought.len(),
        _ => 0,
    }
}

fn message_bytes(message: &Message) -> usize {
    match message {
        Message::System(text) | Message::User(text) => text.len(),
        Message::Assistant { content, calls, .. } => {
            content.len()
                + calls
                    .iter()
                    .map(|call| call.name.len() + call.arguments.len())
                    .sum::<usize>()
        }
        Message::Tool { content, .. } => content.len(),
    }
}
