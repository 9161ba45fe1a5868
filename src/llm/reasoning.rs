//! Reasoning replies: the thinking a model writes before its answer, in whichever of the three
//! shapes its server hands it back — a `reasoning` field (vLLM ≥ 0.11, OpenRouter), a
//! `reasoning_content` field (llama.cpp's server, DeepSeek's API, older vLLM), or inline as a
//! leading `<think>…</think>` in the text when no reasoning parser runs (also an unclosed
//! `<think>` the token cap cut off, and a lone `</think>` when the chat template opened the block
//! in the prompt; a lone `</think>` that ends the text closes no block: [`split_think`]).
//!
//! The reasoning is read apart from the text here, once, so that the agent reads the thought and
//! the action from what follows it and no later text prompt carries it (with `--api tools` an
//! assistant turn goes back with the reasoning field it came with, unless `--no-reasoning-echo`). A
//! reply that is only reasoning ([`is_cut`]) ends the run, with the error that says what ended it
//! ([`check_cut`]): the token cap ([`Ending::Cut`]: the run stops with `max_tokens`, and
//! [`LlmError::CutInThinking`](super::LlmError::CutInThinking) says how to give the model room or
//! turn its thinking off), or the server, before any answer
//! ([`LlmError::ThinkingOnly`](super::LlmError::ThinkingOnly)).

use serde::{Deserialize, Serialize};

/// The most reasoning one reply keeps (run files carry it): longer is cut, with a warning.
pub const MAX_REASONING_BYTES: usize = 256 * 1024;

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// The reasoning fields of a chat reply, as the server sent them: an assistant turn goes back to
/// the server with the same field (`--api tools`), so interleaved-thinking models keep their chain.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReasoningFields {
    /// vLLM ≥ 0.11, OpenRouter.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "text_or_none"
    )]
    pub reasoning: Option<String>,
    /// llama.cpp's server, DeepSeek's API, older vLLM.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "text_or_none"
    )]
    pub reasoning_content: Option<String>,
}

/// A reasoning field read leniently: a string is the reasoning, anything else (`null`, another
/// server's object) none, so that an odd field never fails the reply.
fn text_or_none<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    Ok(match serde_json::Value::deserialize(deserializer)? {
        serde_json::Value::String(text) => Some(text),
        _ => None,
    })
}

impl ReasoningFields {
    /// The reasoning the fields hold: `reasoning`, else `reasoning_content`; none when both are
    /// empty or absent.
    pub fn text(&self) -> Option<&str> {
        [&self.reasoning, &self.reasoning_content]
            .into_iter()
            .filter_map(|field| field.as_deref())
            .find(|text| !text.trim().is_empty())
    }

    pub fn is_empty(&self) -> bool {
        self.reasoning.is_none() && self.reasoning_content.is_none()
    }

    /// Both fields cut to [`MAX_REASONING_BYTES`].
    pub fn cap(&mut self) {
        for text in [&mut self.reasoning, &mut self.reasoning_content]
            .into_iter()
            .flatten()
        {
            cap_reasoning(text);
        }
    }
}

/// A text read apart into its leading reasoning and what follows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split<'a> {
    /// The thinking, trimmed; none when the text has no think block or an empty one (Qwen3 with
    /// thinking off writes `<think>\n\n</think>`).
    pub reasoning: Option<&'a str>,
    /// The text after the block (leading whitespace dropped), or the whole text when it has none;
    /// empty when the block was never closed.
    pub rest: &'a str,
}

/// Reads a leading `<think>…</think>` out of a completion or a reply's content. An unclosed
/// `<think>` (the token cap cut it) is all reasoning. A `</think>` with no `<think>` before it and
/// text after it closes a block the chat template opened in the prompt (DeepSeek-R1's, Qwen3's):
/// what precedes it is reasoning. A `</think>` with no `<think>` before it and nothing after it
/// closes no block: the model wrote its reply and then the tag, so what precedes it is the reply
/// (the tag dropped) — a reply is never taken for reasoning because a stray tag ends it. A stray
/// `</think>` that ends the text after a block is dropped likewise.
pub fn split_think(text: &str) -> Split<'_> {
    let trimmed = text.trim_start();
    let (reasoning, rest) = if let Some(inside) = trimmed.strip_prefix(OPEN) {
        match inside.find(CLOSE) {
            Some(end) => (&inside[..end], &inside[end + CLOSE.len()..]),
            None => (inside, ""),
        }
    } else {
        match text.find(CLOSE) {
            Some(end) if !text[..end].contains(OPEN) && !text[end + CLOSE.len()..].trim().is_empty() => {
                (&text[..end], &text[end + CLOSE.len()..])
            }
            _ => {
                return Split {
                    reasoning: None,
                    rest: without_stray_close(text),
                };
            }
        }
    };
    let reasoning = reasoning.trim();
    Split {
        reasoning: (!reasoning.is_empty()).then_some(reasoning),
        rest: without_stray_close(rest.trim_start()),
    }
}

/// `text` without a `</think>` that ends it (trailing whitespace aside) and that no `<think>` in
/// it opens: a tag closing no block.
fn without_stray_close(text: &str) -> &str {
    match text.trim_end().strip_suffix(CLOSE) {
        Some(before) if !before.contains(OPEN) && !before.contains(CLOSE) => before,
        _ => text,
    }
}

/// One reply's reasoning: its field's, then its inline block's, joined when both came.
pub fn combine(field: Option<&str>, inline: Option<&str>) -> Option<String> {
    join([field, inline].into_iter().flatten())
}

/// The reasonings of a step's calls (or any run of them) as one text, blank-line separated;
/// none when none had any.
pub fn join<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let parts: Vec<&str> = parts
        .into_iter()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// Whether a reply whose text (after its reasoning) is `text` is only reasoning: it had reasoning
/// and nothing after it.
pub fn is_cut(text: &str, reasoning: Option<&str>) -> bool {
    reasoning.is_some_and(|reasoning| !reasoning.trim().is_empty()) && text.trim().is_empty()
}

/// How the server says a reply ended: its `finish_reason`, as far as a reply of only reasoning is
/// concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ending {
    /// `length` (or `max_tokens`, `max_output_tokens`): the token cap cut it.
    Cut,
    /// Any other reason (`stop`, `tool_calls`, `eos`…): the model or the server ended it.
    Ended,
    /// No reason given (a server that sends none, a model that is no server's): read as
    /// [`Ending::Cut`], the likelier cause of a reply with no answer.
    #[default]
    Unknown,
}

impl Ending {
    /// The ending a `finish_reason` names; `None` (or JSON `null`) is [`Ending::Unknown`].
    pub fn of_finish_reason(reason: Option<&str>) -> Ending {
        match reason.map(str::trim) {
            None | Some("") => Ending::Unknown,
            Some("length" | "max_tokens" | "max_output_tokens") => Ending::Cut,
            Some(_) => Ending::Ended,
        }
    }
}

/// The token cap a request had, as the error for a reply cut inside its thinking names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenCap {
    /// `--max-tokens N`, sent as `max_tokens` (or `max_completion_tokens`).
    Sent(u32),
    /// `--max-tokens 0`: no cap sent, so the server's own default applies.
    ServerDefault,
    /// Not known: a replay of a run that records no generation settings (`ask`'s).
    Unrecorded,
}

impl TokenCap {
    /// The cap `llm` sends, as its generation settings say.
    pub fn of(llm: &dyn super::Llm) -> TokenCap {
        match llm.generation() {
            Some(generation) => generation
                .max_tokens
                .map_or(TokenCap::ServerDefault, TokenCap::Sent),
            None => TokenCap::Unrecorded,
        }
    }

    /// What cut the reply and what to do about it, for
    /// [`LlmError::CutInThinking`](super::LlmError::CutInThinking): raising the cap is suggested
    /// only when one was sent; with `--max-tokens 0` the server's default cut it, and a cap above
    /// that default is what gives the model room.
    pub fn advice(self) -> String {
        const THINKING: &str = "or turn thinking off (`--llm-option chat_template_kwargs='{\"enable_thinking\":false}'`) or down (`--llm-option reasoning_effort=low`)";
        match self {
            TokenCap::Sent(max_tokens) => format!(
                "the token cap (`--max-tokens {max_tokens}`) cut it inside its thinking; raise `--max-tokens` above {max_tokens}, {THINKING}"
            ),
            TokenCap::ServerDefault => format!(
                "the server's own token cap cut it inside its thinking (`--max-tokens 0` sends none, so the server's default applies); give the model room with a `--max-tokens` above that default, {THINKING}"
            ),
            TokenCap::Unrecorded => format!(
                "the token cap cut it inside its thinking (the recording does not say which `--max-tokens` it had); raise `--max-tokens`, {THINKING}"
            ),
        }
    }
}

/// The error for a reply that is only reasoning ([`is_cut`]) when it is one, saying what ended it:
/// the token cap ([`Ending::Cut`], or no reason given) is
/// [`LlmError::CutInThinking`](super::LlmError::CutInThinking), naming `llm`'s cap; the server
/// ([`Ending::Ended`]) is [`LlmError::ThinkingOnly`](super::LlmError::ThinkingOnly).
pub fn check_cut(
    llm: &dyn super::Llm,
    text: &str,
    reasoning: Option<&str>,
    ending: Ending,
) -> Result<(), super::LlmError> {
    if !is_cut(text, reasoning) {
        return Ok(());
    }
    Err(only_reasoning(llm, ending))
}

/// The error for a reply of only reasoning that ended as `ending` (see [`check_cut`]).
pub fn only_reasoning(llm: &dyn super::Llm, ending: Ending) -> super::LlmError {
    match ending {
        Ending::Cut | Ending::Unknown => super::LlmError::CutInThinking {
            cap: TokenCap::of(llm),
        },
        Ending::Ended => super::LlmError::ThinkingOnly,
    }
}

/// Cuts reasoning to [`MAX_REASONING_BYTES`], at a character boundary, with a warning.
pub fn cap_reasoning(text: &mut String) {
    if text.len() > MAX_REASONING_BYTES {
        tracing::warn!(
            "the model reasoned {} bytes in one reply; keeping the first {MAX_REASONING_BYTES}",
            text.len()
        );
        text.truncate(text.floor_char_boundary(MAX_REASONING_BYTES));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn think_blocks_are_read_apart() {
        #[track_caller]
        fn check(text: &str, reasoning: Option<&str>, rest: &str) {
            assert_eq!(split_think(text), Split { reasoning, rest }, "{text:?}");
        }
        check(
            " I need to search X.\nAction 1: Search[X]",
            None,
            " I need to search X.\nAction 1: Search[X]",
        );
        check(
            "<think>\nThe user wants X.\n</think>\n\n I need to search X.",
            Some("The user wants X."),
            "I need to search X.",
        );
        check("  <think>a</think>b", Some("a"), "b");
        // Cut by the token cap before it closed.
        check(
            "<think>\nLet me think about Observation 1: no",
            Some("Let me think about Observation 1: no"),
            "",
        );
        // Thinking off: an empty block.
        check("<think>\n\n</think>\n\nThought", None, "Thought");
        // The template opened the block in the prompt.
        check(
            "hmm, X first.\n</think>\n\nSearch X.",
            Some("hmm, X first."),
            "Search X.",
        );
        // A `<think>` that does not lead is text, and so is what follows it.
        check("Thought <think>a</think> b", None, "Thought <think>a</think> b");
        check("", None, "");
        // A `</think>` that ends the text closes no block: the reply is what precedes it.
        check(
            " I know it.\nAction 1: Finish[Paris]</think>",
            None,
            " I know it.\nAction 1: Finish[Paris]",
        );
        check(" I know it.</think>\n\n", None, " I know it.");
        check("</think>", None, "");
        // ... and after a block, it is dropped from the reply.
        check("<think>a</think>b</think>", Some("a"), "b");
        check("a</think>b</think>\n", Some("a"), "b");
        // A `</think>` inside the text with text after it still closes the template's block.
        check("a</think>b", Some("a"), "b");
    }

    #[test]
    fn a_reply_of_only_reasoning_is_cut() {
        assert!(is_cut("", Some("thinking")));
        assert!(is_cut(" \n", Some("thinking")));
        assert!(!is_cut("Search[X]", Some("thinking")));
        assert!(!is_cut("", None));
        assert!(!is_cut("", Some("  ")));
    }

    #[test]
    fn finish_reasons_say_whether_the_cap_cut_the_reply() {
        assert_eq!(Ending::of_finish_reason(Some("length")), Ending::Cut);
        assert_eq!(Ending::of_finish_reason(Some("max_tokens")), Ending::Cut);
        assert_eq!(Ending::of_finish_reason(Some("stop")), Ending::Ended);
        assert_eq!(Ending::of_finish_reason(Some("tool_calls")), Ending::Ended);
        assert_eq!(Ending::of_finish_reason(None), Ending::Unknown);
        assert_eq!(Ending::of_finish_reason(Some("")), Ending::Unknown);
    }

    #[test]
    fn the_cut_advice_raises_only_a_cap_that_was_sent() {
        let sent = TokenCap::Sent(512).advice();
        assert!(
            sent.contains("`--max-tokens 512`") && sent.contains("above 512"),
            "{sent}"
        );
        let server = TokenCap::ServerDefault.advice();
        assert!(server.contains("`--max-tokens 0` sends none"), "{server}");
        assert!(!server.contains("raise"), "{server}");
        let unrecorded = TokenCap::Unrecorded.advice();
        assert!(unrecorded.contains("does not say"), "{unrecorded}");
    }

    #[test]
    fn fields_prefer_reasoning_then_reasoning_content() {
        let fields = ReasoningFields {
            reasoning: Some("a".into()),
            reasoning_content: Some("b".into()),
        };
        assert_eq!(fields.text(), Some("a"));
        let fields = ReasoningFields {
            reasoning: Some(String::new()),
            reasoning_content: Some("b".into()),
        };
        assert_eq!(fields.text(), Some("b"));
        assert_eq!(ReasoningFields::default().text(), None);
    }

    #[test]
    fn reasonings_join_with_a_blank_line() {
        assert_eq!(join(["a", " ", "b\n"]), Some("a\n\nb".to_owned()));
        assert_eq!(join([""]), None);
        assert_eq!(combine(Some("f"), Some("i")), Some("f\n\ni".to_owned()));
        assert_eq!(combine(None, Some("i")), Some("i".to_owned()));
    }

    #[test]
    fn reasoning_is_capped_at_a_char_boundary() {
        let mut text = "é".repeat(MAX_REASONING_BYTES);
        cap_reasoning(&mut text);
        assert!(text.len() <= MAX_REASONING_BYTES);
        assert!(text.chars().all(|c| c == 'é'));
    }
}
