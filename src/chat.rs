//! `chat`: a conversation — each follow-up is first rewritten by the model into a standalone
//! question from the `Q:`/`A:` history (the pattern of LangChain's conversational agents and of
//! langchain-mini), then answered by the agent.

use crate::agent::error_chain;
use std::io::{BufRead, Write};

use crate::ask::{AgentConfig, Outcome, run_question};
use crate::docstore::DocstoreSource;
use crate::llm::{CallPurpose, Llm, LlmError, LlmRequest};
use crate::tool::Toolbox;
use crate::trace::TracePrinter;

/// What the rewriting call continues: the history and the follow-up come before it.
const STANDALONE_LABEL: &str = "Standalone question:";

const REWRITE_INSTRUCTION: &str = "Rewrite the follow-up question as a standalone question that can be \
understood without the conversation: replace words such as \"he\", \"she\", \"it\", \"that\" or \"the \
president\" with the names and facts from the conversation they stand for. If the follow-up already \
stands alone, repeat it unchanged.";

/// One answered question of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Turn {
    /// The standalone question the agent answered.
    pub question: String,
    pub answer: String,
}

/// The session's history, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversation {
    pub turns: Vec<Turn>,
}

impl Conversation {
    pub fn push(&mut self, question: &str, answer: &str) {
        self.turns.push(Turn {
            question: question.to_owned(),
            answer: answer.to_owned(),
        });
    }

    /// The prompt that asks the model to rewrite `follow_up`; it ends with `Standalone question:`.
    pub fn rewrite_prompt(&self, follow_up: &str, today: Option<&str>) -> String {
        let mut prompt = String::new();
        if let Some(today) = today {
            prompt.push_str(&format!("Today is {today}.\n"));
        }
        prompt.push_str(REWRITE_INSTRUCTION);
        prompt.push_str("\n\nConversation:\n");
        for turn in &self.turns {
            prompt.push_str(&format!("Q: {}\nA: {}\n", turn.question, turn.answer));
        }
        prompt.push_str(&format!("\nFollow-up question: {follow_up}\n{STANDALONE_LABEL}"));
        prompt
    }
}

/// The standalone question in the model's completion: its first non-empty line, without a repeated
/// label or quotes. An empty completion leaves the follow-up as it was.
pub fn standalone_question(completion: &str, follow_up: &str) -> String {
    let line = completion
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    let line = match line.get(..STANDALONE_LABEL.len()) {
        Some(label) if label.eq_ignore_ascii_case(STANDALONE_LABEL) => &line[STANDALONE_LABEL.len()..],
        _ => line,
    };
    let question = line.trim().trim_matches(|c| matches!(c, '"' | '\'' | '`')).trim();
    if question.is_empty() {
        follow_up.to_owned()
    } else {
        question.to_owned()
    }
}

/// Whether a person types the follow-ups (then a `> ` prompt is shown on stderr).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interaction {
    Terminal,
    Piped,
}

#[derive(Debug, Clone)]
pub struct ChatConfig {
    /// `prompt_options.today` also goes into the rewriting prompt.
    pub agent: AgentConfig,
    pub interaction: Interaction,
}

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error("cannot read the next question from stdin")]
    Stdin(#[source] std::io::Error),
    #[error("cannot write the answer to stdout")]
    Stdout(#[source] std::io::Error),
}

/// What a session added up to.
#[derive(Debug, Clone, Default)]
pub struct ChatSummary {
    pub conversation: Conversation,
    pub n_questions: usize,
    /// Turns that ended with an infrastructure failure (the session carried on).
    pub n_failed: usize,
}

impl ChatSummary {
    /// 0 when something was answered, 1 when nothing was, 2 when every question failed.
    pub fn exit_code(&self) -> u8 {
        match (self.conversation.turns.len(), self.n_failed) {
            (0, n_failed) if n_failed > 0 => 2,
            (0, _) => 1,
            _ => 0,
        }
    }
}

/// Asks the model to rewrite `follow_up` into a standalone question.
pub async fn rewrite_follow_up(
    llm: &dyn Llm,
    conversation: &Conversation,
    follow_up: &str,
    today: Option<&str>,
) -> Result<String, LlmError> {
    let prompt = conversation.rewrite_prompt(follow_up, today);
    let stop = ["\n".to_owned()];
    let request = LlmRequest {
        prompt: &prompt,
        stop: &stop,
        step: 0,
        purpose: CallPurpose::RewriteQuestion,
    };
    let completion = llm.complete(request).await?;
    Ok(standalone_question(&completion.text, follow_up))
}

/// `react-docstore chat`: reads follow-ups line by line until the input ends; answers go to
/// stdout, the rewritten questions and the traces to `trace`.
pub async fn chat(
    config: &ChatConfig,
    llm: &dyn Llm,
    docstore: &dyn DocstoreSource,
    toolbox: &Toolbox,
    input: &mut dyn BufRead,
    stdout: &mut dyn Write,
    trace: &mut TracePrinter,
) -> Result<ChatSummary, ChatError> {
    let today = config.agent.prompt_options.today.as_deref();
    let mut summary = ChatSummary::default();
    let mut line = String::new();
    loop {
        if config.interaction == Interaction::Terminal {
            eprint!("> ");
        }
        line.clear();
        if input.read_line(&mut line).map_err(ChatError::Stdin)? == 0 {
            break;
        }
        let follow_up = line.trim();
        if follow_up.is_empty() {
            continue;
        }
        summary.n_questions += 1;
        let question = if summary.conversation.turns.is_empty() {
            trace.header("Question:", follow_up);
            follow_up.to_owned()
        } else {
            match rewrite_follow_up(llm, &summary.conversation, follow_up, today).await {
                Ok(question) => {
                    trace.header("Standalone question:", &question);
                    question
                }
                Err(error) => {
                    trace.note(&format!("cannot rewrite the question: {}", error_chain(&error)));
                    summary.n_failed += 1;
                    continue;
                }
            }
        };
        let run = run_question(&question, &config.agent, llm, docstore, toolbox, trace).await;
        let answer = run.answer.as_deref().unwrap_or("");
        match Outcome::of(&run) {
            Outcome::Answered => {
                trace.header("Answer:", answer);
                writeln!(stdout, "{answer}").map_err(ChatError::Stdout)?;
                stdout.flush().map_err(ChatError::Stdout)?;
                summary.conversation.push(&question, answer);
            }
            Outcome::Unanswered => trace.note("no answer"),
            Outcome::Failed => {
                summary.n_failed += 1;
                trace.note(run.error.as_deref().unwrap_or("the run failed"));
            }
        }
        trace.blank();
    }
    Ok(summary)
}

/// Today's date (UTC) as `YYYY-MM-DD`, the default of `chat --today`.
pub fn today_utc() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let (year, month, day) = civil_from_days((seconds / 86_400) as i64);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Days since 1970-01-01 → (year, month, day), Howard Hinnant's `civil_from_days`.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        #[track_caller]
        fn check(days: i64, expected: (i64, u32, u32)) {
            assert_eq!(civil_from_days(days), expected, "{days}");
        }
        check(0, (1970, 1, 1));
        check(59, (1970, 3, 1));
        check(11_016, (2000, 2, 29));
        check(20_414, (2025, 11, 22));
        check(-1, (1969, 12, 31));
    }

    #[test]
    fn standalone_question_is_the_first_line_without_label_or_quotes() {
        #[track_caller]
        fn check(completion: &str, expected: &str) {
            assert_eq!(standalone_question(completion, "follow-up?"), expected);
        }
        check(
            " Who is the wife of Andrzej Duda?",
            "Who is the wife of Andrzej Duda?",
        );
        check(
            "\n\"Who is the wife of Andrzej Duda?\"\nmore",
            "Who is the wife of Andrzej Duda?",
        );
        check("Standalone question: Who is X?", "Who is X?");
        check("  ", "follow-up?");
    }

    #[test]
    fn rewrite_prompt_lists_the_history_as_q_and_a() {
        let mut conversation = Conversation::default();
        conversation.push("Name of the current president of Poland", "Andrzej Duda");
        let prompt = conversation.rewrite_prompt("What is the name of his wife?", Some("2023-11-22"));
        assert!(prompt.starts_with("Today is 2023-11-22.\nRewrite the follow-up question"));
        assert!(prompt.ends_with(
            "Conversation:\nQ: Name of the current president of Poland\nA: Andrzej Duda\n\n\
             Follow-up question: What is the name of his wife?\nStandalone question:"
        ));
    }
}
