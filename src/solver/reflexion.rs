//! Reflexion's trials (Shinn et al., 2023): what a failed trial leaves for the next one — the
//! failed trial itself, a reflection the model writes on it, or both — and the prompt that shows
//! it, byte for byte as Reflexion's HotpotQA agent builds it.
//!
//! Reflexion has two such agents for HotpotQA, and so do we: its ReAct agent ([`Frame::React`])
//! and its CoT agent without context ([`Frame::Cot`]). The texts are Reflexion's
//! (`fewshot/reflexion/`, MIT, see its SOURCE.md); the code is ours. Reflexion's agents ask for
//! the thought and the action in two calls; ours ask for both in one, so each of our prompts is
//! the one Reflexion sends for the thought.

use crate::agent::fewshot::{Fewshot, Format};
use crate::agent::prompt::Prompt;
use crate::base::method::Reflect;
use crate::base::profile::Profile;
use crate::llm::{CallPurpose, Completion, Llm, LlmError, LlmRequest};
use crate::record::run::{Run, Stopped};

/// `REACT_REFLECT_INSTRUCTION`: the ReAct prompt of a trial under any strategy but `none`.
const REACT_REFLECT_INSTRUCTION: &str = include_str!("../../fewshot/reflexion/react_reflect_instruction.txt");
/// `REFLECT_INSTRUCTION`: the prompt that asks for a reflection on a failed trial.
const REFLECT_INSTRUCTION: &str = include_str!("../../fewshot/reflexion/reflect_instruction.txt");
/// `COT_SIMPLE_AGENT_REFLECT_INSTRUCTION`: the CoT prompt (no context) of a trial.
const COT_REFLECT_AGENT_INSTRUCTION: &str =
    include_str!("../../fewshot/reflexion/cot_simple_agent_reflect_instruction.txt");
/// `COT_SIMPLE_REFLECT_INSTRUCTION`: the CoT agent's reflection prompt.
const COT_REFLECT_INSTRUCTION: &str =
    include_str!("../../fewshot/reflexion/cot_simple_reflect_instruction.txt");
/// `COTQA_SIMPLE6`: the CoT agent's six examples (`Thought:`, then `Action: Finish[…]`).
pub const COTQA_SIMPLE6: &str = include_str!("../../fewshot/reflexion/cotqa_simple6.txt");
/// `COT_SIMPLE_REFLECTION`: the CoT agent's few-shot reflection.
pub const COT_SIMPLE_REFLECTION: &str = include_str!("../../fewshot/reflexion/cot_simple_reflection.txt");
/// `WEBTHINK_SIMPLE6`: ReAct's HotpotQA examples as Reflexion lays them out.
pub const WEBTHINK_SIMPLE6: &str = include_str!("../../fewshot/reflexion/webthink_simple6.txt");
/// `REFLECTIONS`: the two few-shot reflections of the reflection prompt.
pub const REFLECTIONS: &str = include_str!("../../fewshot/reflexion/reflections.txt");
/// `REFLECTION_HEADER`.
pub const REFLECTION_HEADER: &str = "You have attempted to answer following question before and failed. The following reflection(s) give a plan to avoid failing to answer the question in the same way you did previously. Use them to improve your strategy of correctly answering the given question.\n";
/// `REFLECTION_AFTER_LAST_TRIAL_HEADER`.
pub const REFLECTION_AFTER_LAST_TRIAL_HEADER: &str = "The following reflection(s) give a plan to avoid failing to answer the question in the same way you did previously. Use them to improve your strategy of correctly answering the given question.\n";
/// `LAST_TRIAL_HEADER`.
pub const LAST_TRIAL_HEADER: &str = "You have attempted to answer the following question before and failed. Below is the last trial you attempted to answer the question.\n";

/// Reflexion shortens a failed trial to this many tokens before showing it (`truncate_scratchpad`).
pub const SCRATCHPAD_TOKENS: usize = 1600;
/// What a shortened observation reads after its label.
const TRUNCATED: &str = "[truncated wikipedia excerpt]";

/// Which of Reflexion's agents a trial follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// Its ReAct agent: Thought / Action / Observation steps.
    React,
    /// Its CoT agent without context: one thought, then `Action: Finish[…]`.
    Cot,
}

impl Frame {
    /// The frame of a prompt in `format`; none for Act and Standard, which Reflexion never ran.
    pub fn of(format: Format) -> Option<Frame> {
        match format {
            Format::React => Some(Frame::React),
            Format::Cot => Some(Frame::Cot),
            Format::Act | Format::Standard => None,
        }
    }

    /// The trial prompt's template.
    fn agent_template(self) -> &'static str {
        match self {
            Frame::React => REACT_REFLECT_INSTRUCTION,
            Frame::Cot => COT_REFLECT_AGENT_INSTRUCTION,
        }
    }
}

/// The examples the Reflexion prompt shows: Reflexion's own for the bundled HotpotQA ones
/// (`WEBTHINK_SIMPLE6`, `COTQA_SIMPLE6`), else the user's file without the blank lines around it.
pub fn examples_text(fewshot: &Fewshot, frame: Frame) -> &str {
    match (fewshot.name.as_str(), frame) {
        ("hotpotqa", Frame::React) => WEBTHINK_SIMPLE6,
        // Reflexion's CoT examples start with a blank line, as its template expects.
        ("hotpotqa", Frame::Cot) => COTQA_SIMPLE6,
        _ => fewshot.examples.trim_matches('\n'),
    }
}

/// What a question's trial shows of its failed trials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Memory {
    /// The reflections, oldest first.
    pub reflections: Vec<String>,
    /// The failed trial, as shown (`last-trial` strategies).
    pub last_trial: Option<String>,
}

impl Memory {
    /// What `run`'s prompt showed.
    pub fn of_run(run: &Run) -> Memory {
        Memory {
            reflections: run.reflections.clone(),
            last_trial: run.last_trial.clone(),
        }
    }

    /// The `{reflections}` block of the prompt under `strategy` (`format_reflections`,
    /// `format_last_attempt`); empty in the first trial. Reflexion's CoT agent puts a line break
    /// between the last trial and its reflection.
    pub fn block(&self, question: &str, strategy: Reflect, frame: Frame) -> String {
        let mut block = String::new();
        if let Some(last_trial) = &self.last_trial {
            block.push_str(LAST_TRIAL_HEADER);
            block.push_str("Question: ");
            block.push_str(question);
            block.push('\n');
            block.push_str(last_trial);
            block.push_str("\n(END PREVIOUS TRIAL)\n");
        }
        if !self.reflections.is_empty() {
            if self.last_trial.is_some() && frame == Frame::Cot {
                block.push('\n');
            }
            block.push_str(match strategy {
                Reflect::LastTrialAndReflexion => REFLECTION_AFTER_LAST_TRIAL_HEADER,
                _ => REFLECTION_HEADER,
            });
            block.push_str("Reflections:\n- ");
            let trimmed: Vec<&str> = self
                .reflections
                .iter()
                .map(|reflection| reflection.trim())
                .collect();
            block.push_str(&trimmed.join("\n- "));
        }
        block
    }
}

/// Where every trial prompt ends: the question, then the scratchpad (`Thought 1:` or `Thought:`).
const QUESTION_SLOT: &str = "Question: {question}{scratchpad}";

/// The prompt of one trial: the frame's template with the examples and the block (no context),
/// up to the question (the scratchpad then adds `Question: …` and what the model writes).
pub fn trial_prompt(fewshot: &Fewshot, frame: Frame, block: &str) -> Prompt {
    let filled = fill(
        frame.agent_template(),
        &[
            ("examples", examples_text(fewshot, frame)),
            ("context", ""),
            ("reflections", block),
        ],
    );
    let text = filled
        .strip_suffix(QUESTION_SLOT)
        .map_or_else(|| filled.clone(), str::to_owned);
    Prompt::with_text(text, fewshot)
}

/// `template` with each `{slot}` of `values` replaced, in one pass as Python's `format` does: a
/// value that reads `{scratchpad}` stays what it reads. Other braces stay as they are.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut filled =
        String::with_capacity(template.len() + values.iter().map(|(_, value)| value.len()).sum::<usize>());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let slot = rest[open + 1..].find('}').and_then(|close| {
            let name = &rest[open + 1..open + 1 + close];
            values
                .iter()
                .find(|(slot, _)| *slot == name)
                .map(|(_, value)| (open + 1 + close, *value))
        });
        match slot {
            Some((close, value)) => {
                filled.push_str(&rest[..open]);
                filled.push_str(value);
                rest = &rest[close + 1..];
            }
            None => {
                filled.push_str(&rest[..=open]);
                rest = &rest[open + 1..];
            }
        }
    }
    filled.push_str(rest);
    filled
}

/// A finished trial as Reflexion's scratchpad holds it: `\nThought n: …\nAction n: …\nObservation
/// n: …` for each step, the `Finish` step observed as `Answer is CORRECT` or `Answer is
/// INCORRECT` (the gold decides: this is where Reflexion shows the model the grade). Act steps
/// have no thought line. A CoT trial is `\nThought:` and its completion, then `\nObservation: `
/// and the grade when it answered.
pub fn scratchpad(run: &Run) -> String {
    let mut text = String::new();
    let right = run.em == Some(1);
    if let Some(sample) = run.samples.first() {
        text.push_str("\nThought:");
        text.push_str(sample.completion.trim_end());
        text.push_str("\nObservation: ");
        if run.how_stopped() == Stopped::Finish {
            text.push_str(if right {
                "Answer is CORRECT"
            } else {
                "Answer is INCORRECT"
            });
        }
        return text;
    }
    for step in &run.steps {
        let n = step.n;
        if let Some(thought) = &step.thought {
            text.push_str(&format!("\nThought {n}: {thought}"));
        }
        text.push_str(&format!("\nAction {n}: {}", step.action.as_deref().unwrap_or("")));
        let observation = match (&step.observation, run.how_stopped()) {
            (Some(observation), _) => observation.as_str(),
            (None, Stopped::Finish) if right => "Answer is CORRECT",
            (None, Stopped::Finish) => "Answer is INCORRECT",
            (None, _) => continue,
        };
        text.push_str(&format!("\nObservation {n}: {observation}"));
    }
    text
}

/// Reflexion's token count, estimated: a token for every four bytes of UTF-8, rounded up (its
/// `text-davinci-003` tokenizer averages about four characters a token on English prose).
pub fn estimate_tokens(text: &str) -> usize {
    text.len().div_ceil(4)
}

/// `truncate_scratchpad`: while the scratchpad is over `budget` tokens, its longest observation
/// (the later of equals) is replaced by `Observation n: [truncated wikipedia excerpt]` — in the
/// first line that reads the same, as Reflexion's `lines.index` finds it.
pub fn truncate_scratchpad(scratchpad: &str, budget: usize) -> String {
    let mut lines: Vec<String> = scratchpad.split('\n').map(str::to_owned).collect();
    let mut observations: Vec<String> = lines
        .iter()
        .filter(|line| line.starts_with("Observation"))
        .cloned()
        .collect();
    // A stable sort, as Python's `sorted`: equals keep their order, the later pops first.
    observations.sort_by_key(|line| estimate_tokens(line));
    while estimate_tokens(&lines.join("\n")) > budget {
        let Some(largest) = observations.pop() else { break };
        if let Some(line) = lines.iter_mut().find(|line| **line == largest) {
            let label = largest.split(':').next().unwrap_or_default();
            *line = format!("{label}: {TRUNCATED}");
        }
    }
    lines.join("\n")
}

/// The failed trial as the next prompt shows it (`format_last_attempt`'s middle): shortened, then
/// without the blank lines and spaces around it.
pub fn last_trial(run: &Run) -> String {
    truncate_scratchpad(&scratchpad(run), SCRATCHPAD_TOKENS)
        .trim_matches('\n')
        .trim()
        .to_owned()
}

/// The prompt that asks for a reflection on the failed `run`: the ReAct agent's
/// `REFLECT_INSTRUCTION` with `REFLECTIONS`, the question and the shortened scratchpad; the CoT
/// agent's `COT_SIMPLE_REFLECT_INSTRUCTION` with `COT_SIMPLE_REFLECTION`, no context, the question
/// and the whole scratchpad (Reflexion shortens only the ReAct agent's).
pub fn reflection_prompt(run: &Run, frame: Frame) -> String {
    let (template, examples, scratchpad) = match frame {
        Frame::React => (
            REFLECT_INSTRUCTION,
            REFLECTIONS,
            truncate_scratchpad(&scratchpad(run), SCRATCHPAD_TOKENS),
        ),
        Frame::Cot => (COT_REFLECT_INSTRUCTION, COT_SIMPLE_REFLECTION, scratchpad(run)),
    };
    fill(
        template,
        &[
            ("examples", examples),
            ("context", ""),
            ("question", &run.question),
            ("scratchpad", &scratchpad),
        ],
    )
}

/// The reflection read from the model's reply: the `paper` profile as Reflexion's `format_step`
/// does (ends trimmed, line breaks removed); the `default` profile joins the reply's lines with a
/// space, so two sentences on two lines do not run together.
pub fn read_reflection(reply: &str, profile: Profile) -> String {
    match profile {
        Profile::Paper => reply.trim_matches('\n').trim().replace('\n', ""),
        Profile::Default => reply
            .lines()
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// The model's reflection on the failed `run`: the reply as it came (its text and its
/// reasoning), and its cost; a reply cut inside its thinking is [`LlmError::CutInThinking`].
pub async fn ask_reflection(llm: &dyn Llm, run: &Run, frame: Frame) -> Result<Completion, LlmError> {
    let prompt = reflection_prompt(run, frame);
    let completion = llm
        .complete(LlmRequest {
            prompt: &prompt,
            shared_prefix: 0,
            stop: &[],
            step: 0,
            purpose: CallPurpose::Reflect,
        })
        .await?;
    crate::llm::reasoning::check_cut(
        llm,
        &completion.text,
        completion.reasoning.as_deref(),
        completion.ending,
    )?;
    Ok(completion)
}

/// What the next trial of a question shows, from its previous trial: nothing new after an
/// error (the trial said nothing about the question), else the strategy's, with `reflection`
/// (the newest, read from the reply) where the strategy asks for one.
pub fn next_memory(previous: &Run, strategy: Reflect, reflection: Option<String>) -> Memory {
    if previous.how_stopped() == Stopped::Error {
        return Memory::of_run(previous);
    }
    let last_trial = strategy.shows_last_trial().then(|| last_trial(previous));
    let reflections = match (strategy, reflection) {
        (Reflect::Reflexion, Some(reflection)) => {
            let mut reflections = previous.reflections.clone();
            reflections.push(reflection);
            reflections
        }
        (Reflect::LastTrialAndReflexion, Some(reflection)) => vec![reflection],
        _ => Vec::new(),
    };
    Memory {
        reflections,
        last_trial,
    }
}

/// What a question's trial showed, from its previous trial (`None` in trial 1) and the reply to
/// the reflection call made before it (`None` when none was made, or it failed): the one rule
/// `eval` builds a trial's prompt by and `replay` checks a recorded trial against. A failed
/// reflection call carries the memory forward unchanged.
pub fn memory_after(
    previous: Option<&Run>,
    strategy: Reflect,
    reply: Option<&str>,
    profile: Profile,
) -> Memory {
    let Some(previous) = previous else {
        return Memory::default();
    };
    if reply.is_none() && strategy.asks_reflection() && previous.how_stopped() != Stopped::Error {
        return Memory::of_run(previous);
    }
    next_memory(
        previous,
        strategy,
        reply.map(|reply| read_reflection(reply, profile)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::run::RunStep;

    fn failed_run() -> Run {
        let mut run = Run::new("Which magazine was started first?", Profile::Paper);
        run.steps = vec![
            RunStep {
                n: 1,
                completions: Vec::new(),
                replies: Vec::new(),
                thought: Some("I need to search.".into()),
                action: Some("Search[Arthur's Magazine]".into()),
                observation: Some(
                    "Arthur's Magazine (1844–1846) was an American literary periodical.".into(),
                ),
                reasoning: None,
                past_stop: None,
            },
            RunStep {
                n: 2,
                completions: Vec::new(),
                replies: Vec::new(),
                thought: Some("So it was First for Women.".into()),
                action: Some("Finish[First for Women]".into()),
                observation: None,
                reasoning: None,
                past_stop: None,
            },
        ];
        run.answer = Some("First for Women".into());
        run.gold = Some("Arthur's Magazine".into());
        run.stopped = Some(Stopped::Finish);
        run.score();
        run
    }

    #[test]
    fn the_scratchpad_grades_the_finish_as_reflexion_does() {
        assert_eq!(
            scratchpad(&failed_run()),
            "\nThought 1: I need to search.\nAction 1: Search[Arthur's Magazine]\nObservation 1: Arthur's Magazine (1844–1846) was an American literary periodical.\nThought 2: So it was First for Women.\nAction 2: Finish[First for Women]\nObservation 2: Answer is INCORRECT"
        );
    }

    #[test]
    fn truncation_shortens_the_longest_observations_first() {
        let long = "x".repeat(400);
        let text =
            format!("\nThought 1: a\nObservation 1: {long}\nObservation 2: {long}y\nObservation 3: short");
        let cut = truncate_scratchpad(&text, 120);
        assert_eq!(
            cut,
            format!(
                "\nThought 1: a\nObservation 1: [truncated wikipedia excerpt]\nObservation 2: [truncated wikipedia excerpt]\nObservation 3: short"
            )
        );
        // Under the budget, nothing changes; with nothing left to cut, it stops.
        assert_eq!(truncate_scratchpad(&text, 10_000), text);
        assert_eq!(truncate_scratchpad("Thought 1: long", 1), "Thought 1: long");
    }

    #[test]
    fn the_blocks_are_reflexions() {
        let memory = Memory {
            reflections: vec![" first plan ".into(), "second plan".into()],
            last_trial: None,
        };
        assert_eq!(
            memory.block("Q?", Reflect::Reflexion, Frame::React),
            format!("{REFLECTION_HEADER}Reflections:\n- first plan\n- second plan")
        );
        let both = Memory {
            reflections: vec!["plan".into()],
            last_trial: Some("Thought 1: t".into()),
        };
        assert_eq!(
            both.block("Q?", Reflect::LastTrialAndReflexion, Frame::React),
            format!(
                "{LAST_TRIAL_HEADER}Question: Q?\nThought 1: t\n(END PREVIOUS TRIAL)\n{REFLECTION_AFTER_LAST_TRIAL_HEADER}Reflections:\n- plan"
            )
        );
        assert!(
            both.block("Q?", Reflect::LastTrialAndReflexion, Frame::Cot)
                .contains("(END PREVIOUS TRIAL)\n\nThe following reflection(s)")
        );
        assert_eq!(
            Memory::default().block("Q?", Reflect::Reflexion, Frame::React),
            ""
        );
    }

    #[test]
    fn the_templates_fill_every_slot() {
        let prompt = reflection_prompt(&failed_run(), Frame::React);
        assert!(!prompt.contains("{scratchpad}") && !prompt.contains("{examples}"));
        let mut odd = failed_run();
        odd.question = "What is {scratchpad}?".into();
        assert!(
            reflection_prompt(&odd, Frame::React).contains("Question: What is {scratchpad}?\nThought 1:")
        );
        assert!(prompt.starts_with("You are an advanced reasoning agent"));
        assert!(prompt.ends_with("Observation 2: Answer is INCORRECT\n\nReflection:"));
        let trial = trial_prompt(&Fewshot::hotpotqa(), Frame::React, "");
        assert!(trial.text().ends_with("Finish[yes]\n(END OF EXAMPLES)\n\n\n\n"));
        assert!(trial.text().starts_with("Solve a question answering task"));
        let cot = Fewshot::bundled(crate::base::task::Task::HotpotQa, Format::Cot, Profile::Paper);
        let trial = trial_prompt(&cot, Frame::Cot, "");
        assert!(trial.text().ends_with("Finish[Yes]\n(END OF EXAMPLES)\n\n\n\n"));
        assert_eq!(fill("{a} {b} {c}", &[("a", "{b}"), ("b", "2")]), "{b} 2 {c}");
    }

    #[test]
    fn reflections_are_read_per_profile() {
        let reply = "\n I failed.\nNext time I will search B. \n";
        assert_eq!(
            read_reflection(reply, Profile::Paper),
            "I failed.Next time I will search B."
        );
        assert_eq!(
            read_reflection(reply, Profile::Default),
            "I failed. Next time I will search B."
        );
    }
}
