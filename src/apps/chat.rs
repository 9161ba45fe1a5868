//! `chat`: a conversation — each follow-up is first rewritten by the model into a standalone
//! question from the `Q:`/`A:` history (the pattern of LangChain's conversational agents and of
//! langchain-mini), then answered by the agent.

use std::io::{BufRead, Write};

use crate::agent::error_chain;
use crate::agent::trace::TracePrinter;
use crate::apps::ask::{AgentConfig, AskOutcome, run_question};
use crate::base::input::{InputLine, InputLines, Interaction, LEAVE_HINT};
use crate::docstore::DocstoreSource;
use crate::llm::{CallPurpose, Llm, LlmError, LlmRequest};
use crate::record::run::{Run, Stopped, Usage};
use crate::tools::Toolbox;

/// What the rewriting call continues: the history and the follow-up come before it.
const STANDALONE_LABEL: &str = "Standalone question:";

const REWRITE_INSTRUCTION: &str = "Rewrite the follow-up question as a standalone question that can be \
understood without the conversation: replace words such as \"he\", \"she\", \"it\", \"that\" or \"the \
president\" with the names and facts from the conversation they stand for. If the follow-up already \
stands alone, repeat it unchanged.";

/// One answered question of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatTurn {
    /// The standalone question the agent answered.
    pub question: String,
    pub answer: String,
}

/// The session's history, oldest first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conversation {
    pub turns: Vec<ChatTurn>,
}

impl Conversation {
    pub fn push(&mut self, question: &str, answer: &str) {
        self.turns.push(ChatTurn {
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

/// What `chat` prints on stdout: exactly one line per question, in input order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatOutput {
    /// The answer, or an empty line when there is none (the reason goes to stderr).
    Answer,
    /// The run (`react-docstore.run.v1`) as one JSON line; a question that could not be asked is a
    /// run with `stopped: error` and the reason in `error`.
    Run,
}

#[derive(Debug, Clone)]
pub struct ChatConfig {
    /// `prompt_options.today` also goes into the rewriting prompt.
    pub agent: AgentConfig,
    pub interaction: Interaction,
    pub output: ChatOutput,
}

#[derive(Debug, thiserror::Error)]
pub enum ChatError {
    #[error(transparent)]
    Setup(#[from] crate::solver::setup::SetupError),
    #[error(transparent)]
    Method(crate::solver::SolverError),
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
    /// Questions that could not be asked or ended with an infrastructure failure (the session
    /// carried on).
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

/// A follow-up rewritten into a standalone question, and what the rewriting call cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    pub question: String,
    /// One model call, its tokens and the requests it sent, added to the usage of the run that
    /// answers `question`.
    pub usage: Usage,
}

/// Asks the model to rewrite `follow_up` into a standalone question.
pub async fn rewrite_follow_up(
    llm: &dyn Llm,
    conversation: &Conversation,
    follow_up: &str,
    today: Option<&str>,
) -> Result<Rewritten, LlmError> {
    let prompt = conversation.rewrite_prompt(follow_up, today);
    let stop = ["\n".to_owned()];
    let request = LlmRequest {
        prompt: &prompt,
        shared_prefix: 0,
        stop: &stop,
        step: 0,
        purpose: CallPurpose::RewriteQuestion,
    };
    let (completion, requests) = crate::llm::requests::counted(llm.complete(request)).await;
    let completion = completion?;
    let mut usage = Usage::default();
    usage.count(&completion);
    usage.requests = requests;
    Ok(Rewritten {
        question: standalone_question(&completion.text, follow_up),
        usage,
    })
}

/// `react-docstore chat`: reads follow-ups line by line until the input ends (or `exit` / `quit`,
/// [`InputLines`]); prints one stdout line per question, the rewritten questions, traces and the
/// reasons for missing answers to `trace`. A question that fails does not end the session; a blank
/// line or one that is not UTF-8 is skipped with a note naming its line number (the latter still
/// gets its empty answer line, so answers stay aligned with the questions).
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
    config
        .agent
        .setup
        .check(llm.api(), crate::solver::setup::ExtraTools::of(toolbox))?;
    let solver = config.agent.solver(toolbox).map_err(ChatError::Method)?;
    let mut summary = ChatSummary::default();
    if config.interaction == Interaction::Terminal {
        trace.note(LEAVE_HINT);
    }
    let mut lines = InputLines::new(input);
    loop {
        if config.interaction == Interaction::Terminal {
            trace.prompt("> ");
        }
        let Some((line_number, line)) = lines.next_line().map_err(ChatError::Stdin)? else {
            break;
        };
        let follow_up = match line {
            InputLine::Text(question) => question,
            InputLine::Blank => {
                trace.note(&format!("line {line_number} is blank: skipped"));
                continue;
            }
            InputLine::NotUtf8(question) => {
                let reason = format!("line {line_number} is not valid UTF-8: skipped");
                summary.n_questions += 1;
                summary.n_failed += 1;
                let run = unasked_run(&question, config, reason);
                report(&run, config.output, stdout, trace)?;
                continue;
            }
        };
        summary.n_questions += 1;
        let (question, rewrite_usage) = if summary.conversation.turns.is_empty() {
            trace.header("Question:", &follow_up);
            (follow_up, Usage::default())
        } else {
            match rewrite_follow_up(llm, &summary.conversation, &follow_up, today).await {
                Ok(rewritten) => {
                    trace.header("Standalone question:", &rewritten.question);
                    (rewritten.question, rewritten.usage)
                }
                Err(error) => {
                    summary.n_failed += 1;
                    let reason = format!("cannot rewrite the question: {}", error_chain(&error));
                    let run = unasked_run(&follow_up, config, reason);
                    report(&run, config.output, stdout, trace)?;
                    continue;
                }
            }
        };
        let mut run = run_question(&question, &solver, llm, docstore, toolbox, trace).await;
        run.usage.add(&rewrite_usage);
        match AskOutcome::of(&run) {
            AskOutcome::Answered => {
                let answer = run.answer.as_deref().unwrap_or("");
                trace.header("Answer:", answer);
                summary.conversation.push(&question, answer);
            }
            AskOutcome::Unanswered => trace.note(&format!(
                "no answer: the run stopped at {}",
                run.stopped.map_or("its start", Stopped::as_str)
            )),
            AskOutcome::Failed => summary.n_failed += 1,
        }
        report(&run, config.output, stdout, trace)?;
        trace.blank();
    }
    Ok(summary)
}

/// The run of a question the agent never started: `stopped: error`, with `reason`.
fn unasked_run(question: &str, config: &ChatConfig, reason: String) -> Run {
    let mut run = Run::new(question, config.agent.setup.profile);
    run.stopped = Some(Stopped::Error);
    run.error = Some(reason);
    run
}

/// Prints `run`'s line on stdout (flushed, so a reader of the pipe gets it at once); a failure's
/// reason goes to `trace`.
fn report(
    run: &Run,
    output: ChatOutput,
    stdout: &mut dyn Write,
    trace: &mut TracePrinter,
) -> Result<(), ChatError> {
    if let Some(error) = &run.error {
        trace.note(error);
    }
    match output {
        ChatOutput::Answer => {
            let answer = match AskOutcome::of(run) {
                AskOutcome::Answered => run.answer.as_deref().unwrap_or(""),
                AskOutcome::Unanswered | AskOutcome::Failed => "",
            };
            // One line per question, whatever the model put inside `Finish[...]`.
            let answer = answer.lines().map(str::trim).collect::<Vec<_>>().join(" ");
            writeln!(stdout, "{answer}")
        }
        ChatOutput::Run => serde_json::to_writer(&mut *stdout, run)
            .map_err(std::io::Error::from)
            .and_then(|()| writeln!(stdout)),
    }
    .and_then(|()| stdout.flush())
    .map_err(ChatError::Stdout)
}

/// Today's date (UTC) as `YYYY-MM-DD`, the default of `chat --today`.
pub fn today_utc() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs());
    let (year, month, day) = civil_from_days((seconds / 86_400) as i64);
    format!("{year:04}-{month:02}-{day:02}")
}

/// Why a `--today` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not a date: expected YYYY-MM-DD, e.g. `2026-11-22`")]
pub struct DateError {
    text: String,
}

/// `text` when it is a calendar date written `YYYY-MM-DD` (`2024-02-29`, not `2023-02-29`), the
/// form the prompt's `Today is {date}.` line takes.
pub fn check_date(text: &str) -> Result<String, DateError> {
    let invalid = || DateError {
        text: text.to_owned(),
    };
    let parts: Vec<&str> = text.split('-').collect();
    let [year, month, day] = parts.as_slice() else {
        return Err(invalid());
    };
    let digits = |part: &str, n_digits: usize| {
        (part.len() == n_digits && part.bytes().all(|byte| byte.is_ascii_digit()))
            .then(|| part.parse::<u32>().ok())
            .flatten()
    };
    let (Some(year), Some(month), Some(day)) = (digits(year, 4), digits(month, 2), digits(day, 2)) else {
        return Err(invalid());
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days_in_month = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(invalid()),
    };
    if !(1..=days_in_month).contains(&day) {
        return Err(invalid());
    }
    Ok(text.to_owned())
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
    fn dates_are_calendar_days_written_yyyy_mm_dd() {
        #[track_caller]
        fn check(text: &str, accepted: bool) {
            assert_eq!(check_date(text).is_ok(), accepted, "{text}");
        }
        check("2026-11-22", true);
        check("2024-02-29", true);
        check("2000-02-29", true);
        check("1999-12-31", true);
        check("2023-02-29", false);
        check("1900-02-29", false);
        check("2026-04-31", false);
        check("2026-13-01", false);
        check("2026-00-10", false);
        check("2026-11-00", false);
        check("2026-11-2", false);
        check("26-11-22", false);
        check("2026/11/22", false);
        check("tomorrow", false);
        check("", false);
        check("+026-11-22", false);
        check("2026-11-22-01", false);
        assert_eq!(
            check_date("22.11.2026").unwrap_err().to_string(),
            "`22.11.2026` is not a date: expected YYYY-MM-DD, e.g. `2026-11-22`"
        );
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
