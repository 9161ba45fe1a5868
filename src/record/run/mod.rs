//! `Run`: one question's record — the `react-docstore.run.v1` file `ask --record`, `replay` and `eval` share.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::base::fsutil::{atomic_write, remove_stale_temporaries};
use crate::base::method::{Method, Reflect, ScStop};
use crate::base::metrics::AnswerScore;
use crate::base::profile::Profile;
use crate::base::task::Task;
use crate::docstore::DocstoreInfo;
use crate::llm::{ReplyMessage, TokenUsage, openai::Api};

pub mod settings;

use settings::EvalSettings;

/// The format of a ReAct run (every run before the other methods, and every `react` run since).
pub const RUN_FORMAT: &str = "react-docstore.run.v1";
/// The format of a run of another method: it may hold samples, a vote and a backoff, which a
/// build that reads only v1 would silently drop.
pub const RUN_FORMAT_V2: &str = "react-docstore.run.v2";

/// One question, as asked, answered and scored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    #[serde(default = "run_format")]
    pub format: String,
    /// The question's id in its file, when it came from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub question: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold: Option<String>,
    /// The task (`hotpotqa`, `fever`): how the answer is scored. Absent from older runs, whose
    /// task [`Run::task`] derives.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    /// The method that answered (`--method`). Absent means `react`: runs from before methods
    /// existed, and `ask`'s ReAct runs, whose file is unchanged; `eval` always names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<Method>,
    #[serde(default)]
    pub profile: Profile,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The API the model was asked through: `chat`, `completions` or `tools` (native function
    /// calls: each step's `replies` hold the assistant messages). Absent from older runs and
    /// runs of a model that is not a server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
    /// The few-shot examples the prompt used: `hotpotqa`, `fever` or a file path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fewshot: Option<String>,
    /// A backoff method's CoT-SC examples (`fewshot` names its ReAct examples).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cot_fewshot: Option<String>,
    /// Examples drawn from earlier runs (`--fewshot-from`): the results file they came from, how
    /// many, the seed, and the digest of the examples file `fewshot` names, so that `replay` and
    /// `export` rebuild the exact prompt (and notice when that file changed). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fewshot_from: Option<FewshotSource>,
    /// The date the prompt stated (`ask --today`, `chat`): `Today is {date}.`, so that replay and
    /// export rebuild the prompt the model saw. Absent when it stated none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub today: Option<String>,
    /// The step budget the run had; replay honours it.
    #[serde(
        default,
        deserialize_with = "crate::base::limits::steps",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_steps: Option<usize>,
    /// Extra tools that were registered (`Calculate`, `WebSearch`, ...), so replay parses their actions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The prompt lines of the extra tools the crate cannot make again from their name (a
    /// `--tool NAME=COMMAND` tool, a library user's tool), so that `export` rebuilds the prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_descriptions: Vec<ToolDescription>,
    /// The docstore that answered the searches: its kind and, for a frozen one, its snapshot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docstore: Option<DocstoreInfo>,
    /// The ReAct or Act steps (empty for CoT, Standard and CoT-SC). Required, even empty: a
    /// record without it (a question file's) is no run.
    pub steps: Vec<RunStep>,
    /// The sampled completions of a CoT, Standard or CoT-SC phase, in the order sampled.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<Sample>,
    /// CoT-SC's majority vote over `samples`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vote: Option<Vote>,
    /// CoT-SC's early stop (`--sc-stop`): the rule, the samples asked and why they stopped.
    /// Absent when all N were asked without a rule.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sc_stop: Option<ScStopRecord>,
    /// Why a backoff method left its first phase for its second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff: Option<Backoff>,
    /// Which phase of a backoff method gave the answer: `react` or `cot-sc`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<Method>,
    /// Reflexion's trial this run was (`eval --trials`), counted from 1.
    #[serde(
        default,
        deserialize_with = "crate::base::limits::attempt",
        skip_serializing_if = "Option::is_none"
    )]
    pub trial: Option<u32>,
    /// The independent attempt this run was (`eval --epochs`), counted from 1.
    #[serde(
        default,
        deserialize_with = "crate::base::limits::attempt",
        skip_serializing_if = "Option::is_none"
    )]
    pub epoch: Option<u32>,
    /// The strategy between trials (`--reflect`), when it was not `none`: the prompt was
    /// Reflexion's, with what the failed trials left.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflect: Option<Reflect>,
    /// The reflections this trial's prompt showed, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reflections: Vec<String>,
    /// The failed trial this trial's prompt showed (`last-trial` strategies), as shown: its
    /// scratchpad, long observations shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_trial: Option<String>,
    /// The model's reply to the reflection call made before this trial, as it came; the newest
    /// of `reflections` was read from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflection: Option<String>,
    /// The thinking the model sent before that reply, when it sent any (run format v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reflection_reasoning: Option<String>,
    /// The shard of the evaluation this run was (`eval --shard I/N`): its part of the selected
    /// questions and the question's place in the whole selection. Absent when unsharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardRecord>,
    /// The settings of the evaluation this run belongs to (`eval` writes them on every line):
    /// what [`settings::SettingRows`] compares to tell whether runs are one evaluation. Absent from
    /// `ask`'s runs and from results lines written before they were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<Box<EvalSettings>>,
    #[serde(default)]
    pub answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Stopped>,
    /// The infrastructure failure that ended the run (`stopped` is `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether that failure may fix itself (`eval` asks such a question again when resumed) or
    /// not (kept until `--retry-errors`). Absent from older runs: lasting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<RunErrorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub em: Option<u8>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub f1: Option<f64>,
    #[serde(default)]
    pub usage: Usage,
    /// What `--cache` did for the run: its calls, which of them the reply cache answered and the
    /// tokens those saved. Absent when the cache was off (the run is then v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache: Option<crate::llm::cache::CacheUse>,
    /// `eval --batch`: the batches that answered the run's requests, by id, in the order first
    /// met; absent when none did. A cost summary prices the tokens of their replies
    /// ([`Run::batched_usage`]) at the batch discount.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub batch: Vec<String>,
    /// Of `usage`, what the replies batches gave reported (`llm_calls`: those replies), recorded
    /// with `batch`: a request a batch failed and `--batch-fallback` asked synchronously is
    /// billed at the full price. Absent from runs of earlier versions, which priced all of a
    /// batched run's tokens at the discount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_usage: Option<Usage>,
}

fn run_format() -> String {
    RUN_FORMAT.to_owned()
}

/// Where a run's few-shot examples were drawn from (`--fewshot-from`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FewshotSource {
    /// The results file the examples are right runs of.
    pub results: String,
    /// How many examples (`--shots`).
    pub shots: usize,
    /// The seed that chose them (`--seed`).
    pub seed: u64,
    /// `sha256:` and the hex SHA-256 of the examples file's bytes.
    pub digest: String,
}

/// An extra tool as the prompt showed it: its name, its line in the action list, and the
/// few-shot examples it added (none for a `--tool NAME=COMMAND` tool).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDescription {
    pub name: String,
    pub description: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub examples: Option<String>,
}

/// One Thought / Action / Observation step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunStep {
    /// 1-based; may be left out of a hand-written file, then steps are numbered by position.
    #[serde(default)]
    pub n: usize,
    /// The raw model outputs of the step, in order: two when the fallback call was made. In a
    /// `tools` run, the text of each reply of the step (`""` when it had none).
    #[serde(default)]
    pub completions: Vec<String>,
    /// A `tools` run's assistant messages of the step as the server sent them (text and tool
    /// calls): one, two after a reminder, none on a step that ran a later call of an earlier
    /// reply. What `replay` serves back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replies: Vec<ReplyMessage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Absent on the step that finished the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation: Option<String>,
    /// The thinking the model sent before its text in this step's calls (a `reasoning` or
    /// `reasoning_content` field, or a leading `<think>` block), blank-line separated when two
    /// calls had some; never part of a prompt. Absent when there was none (run format v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
    /// What the model wrote past the step's stop sequence (the `Observation n:` marker), which
    /// the client cut off because the server did not stop there: the Responses API has no
    /// `stop`, and a model that refused it writes on. `chars` counts the characters cut;
    /// `tokens_estimated` the output tokens they cost, an **estimate** (the reply's output
    /// tokens, less its reasoning tokens, in proportion to the characters cut). Summed over the
    /// step's calls; absent when nothing was cut (run format v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub past_stop: Option<crate::llm::PastStop>,
}

/// One sampled completion and the answer read from it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sample {
    /// The model's text as it came (after `Thought:` or `Answer:`), cut at the stop sequences.
    pub completion: String,
    /// The answer read from it (FEVER: the label); absent when it holds none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// The sampling request it came from, 1-based: the 21 samples of one `n: 21` request share
    /// request 1; a server that ignores `n` gives each its own.
    #[serde(default = "first_request")]
    pub request: usize,
    /// The thinking the model sent before `completion`, when it sent any (run format v2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<String>,
}

fn first_request() -> usize {
    1
}

/// CoT-SC's majority over the normalised answers of its samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Vote {
    /// The winning answer as first sampled; absent when no sample held an answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Samples whose normalised answer is the winner's.
    #[serde(deserialize_with = "crate::base::limits::samples")]
    pub votes: usize,
    /// Samples asked for: N, or with `--sc-stop` those asked before the rule stopped; samples
    /// without an answer count here but do not vote.
    #[serde(deserialize_with = "crate::base::limits::samples")]
    pub samples: usize,
    /// Samples that held an answer.
    #[serde(deserialize_with = "crate::base::limits::samples")]
    pub answered: usize,
    /// The sampling temperature.
    pub temperature: f64,
}

impl Vote {
    /// The winner's share of the N samples.
    pub fn share(&self) -> f64 {
        if self.samples == 0 {
            0.0
        } else {
            self.votes as f64 / self.samples as f64
        }
    }
}

/// How a CoT-SC phase with a stopping rule sampled: the rule, N, the samples asked, and why
/// it stopped asking.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ScStopRecord {
    #[serde(flatten)]
    pub stop: ScStop,
    /// N (`--samples`): the most it would have asked.
    #[serde(deserialize_with = "crate::base::limits::samples")]
    pub samples: usize,
    /// The samples it asked (those that came back).
    #[serde(deserialize_with = "crate::base::limits::samples")]
    pub asked: usize,
    /// Why it stopped asking; absent when the sampling failed first (`error` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<ScStopReason>,
}

/// Why a CoT-SC phase stopped asking for samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScStopReason {
    /// `exact`: the leading answer could no longer be overtaken.
    Decided,
    /// `beta`: the leader was ahead with the confidence asked.
    Confident,
    /// All N were asked before the rule stopped them, or the server sent no more.
    AllAsked,
}

impl ScStopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ScStopReason::Decided => "decided",
            ScStopReason::Confident => "confident",
            ScStopReason::AllAsked => "all_asked",
        }
    }
}

/// A backoff: which phase gave up, why, and which answered instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backoff {
    pub from: Method,
    pub to: Method,
    pub reason: BackoffReason,
}

/// Why a backoff method left its first phase.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BackoffReason {
    /// ReAct used its whole step budget without `Finish`.
    MaxSteps,
    /// ReAct repeated itself until stopped.
    RepeatedAction,
    /// ReAct finished with an empty answer (`Finish[]`).
    NoAnswer,
    /// CoT-SC's majority held fewer than half of the samples (no answer at all included).
    WeakMajority,
}

impl BackoffReason {
    pub fn as_str(self) -> &'static str {
        match self {
            BackoffReason::MaxSteps => "max_steps",
            BackoffReason::RepeatedAction => "repeated_action",
            BackoffReason::NoAnswer => "no_answer",
            BackoffReason::WeakMajority => "weak_majority",
        }
    }

    /// The reason in words, for traces.
    pub fn describe(self) -> &'static str {
        match self {
            BackoffReason::MaxSteps => "it used its step budget without Finish",
            BackoffReason::RepeatedAction => "it repeated an action until stopped",
            BackoffReason::NoAnswer => "it finished without an answer",
            BackoffReason::WeakMajority => "the majority holds fewer than half of the samples",
        }
    }
}

/// The answer a `Finish[...]` gives: none when it is empty or only whitespace, for every method
/// (an empty answer is no answer: it backs off, and it does not vote).
pub fn finish_answer(answer: &str) -> Option<String> {
    (!answer.trim().is_empty()).then(|| answer.to_owned())
}

/// Where a run of a sharded evaluation (`eval --shard I/N`) belongs: shard `index` of `count`,
/// and its question's `position` among the `selected` questions before they were split.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ShardRecord {
    /// The shard, from 0.
    pub index: u32,
    /// How many shards the selection was split into.
    pub count: u32,
    /// The question's place in the whole selection (after `--subset`, `--ids`, `--limit`), from 0:
    /// merged shards are put back in this order.
    pub position: usize,
    /// How many questions the whole selection held: merging says which are missing.
    pub selected: usize,
}

/// Which attempt at its question a run was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Attempt {
    /// The question was asked once (no `--trials`, no `--epochs`).
    Only,
    /// Reflexion's trial k (`eval --trials`), from 1: trial k+1 runs only what was not yet right.
    Trial(u32),
    /// Independent attempt k (`eval --epochs`), from 1.
    Epoch(u32),
}

/// `trial 2`, `epoch 3`; `run` for a question asked once.
impl std::fmt::Display for Attempt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Attempt::Only => f.write_str("run"),
            Attempt::Trial(trial) => write!(f, "trial {trial}"),
            Attempt::Epoch(epoch) => write!(f, "epoch {epoch}"),
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stopped {
    /// The model wrote `Finish[...]` (ReAct, Act), an answer line (CoT, Standard), or the
    /// samples had a majority (CoT-SC).
    Finish,
    /// The completion (or every sample) of CoT, Standard or CoT-SC held no answer.
    NoAnswer,
    /// The step budget ran out.
    MaxSteps,
    /// The model kept repeating the identical action with the identical observation.
    RepeatedAction,
    /// The model or a fetch failed after retries.
    Error,
    /// A reply was only reasoning: the token cap (`--max-tokens`) cut it inside its thinking. (A
    /// reply of only reasoning the server ended is an `error`.)
    MaxTokens,
}

impl Stopped {
    /// How a run that failed with `error` stopped: `max_tokens` when the token cap cut a reply
    /// inside its thinking, else `error`.
    pub fn on_error(error: &(dyn std::error::Error + 'static)) -> Stopped {
        match error.downcast_ref::<crate::llm::LlmError>() {
            Some(crate::llm::LlmError::CutInThinking { .. }) => Stopped::MaxTokens,
            _ => Stopped::Error,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Stopped::Finish => "finish",
            Stopped::NoAnswer => "no_answer",
            Stopped::MaxSteps => "max_steps",
            Stopped::RepeatedAction => "repeated_action",
            Stopped::Error => "error",
            Stopped::MaxTokens => "max_tokens",
        }
    }
}

/// Whether the failure that ended a run may fix itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunErrorKind {
    /// A timeout, a refused or reset connection, 408, 429, 5xx, a Wikipedia outage: asked again
    /// when the evaluation is resumed.
    Transient,
    /// 401, 403, 404, a prompt the server refuses (a context-length 400), a page not cached
    /// offline: asking again gives the same answer, so it is kept until `--retry-errors`.
    Lasting,
}

/// What a run cost.
#[derive(Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub llm_calls: u64,
    #[serde(default)]
    pub fallback_calls: u64,
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub invalid_actions: u64,
    /// Of `completion_tokens`, those the model spent thinking, when the server says.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
    /// Of `prompt_tokens`, those the server read from its prompt cache
    /// (`prompt_tokens_details.cached_tokens`, `input_tokens_details.cached_tokens`,
    /// `cache_read_input_tokens`). Absent when none were (and from older runs): 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cached_tokens: u64,
    /// Of `prompt_tokens`, those written to the prompt cache (`cache_creation_input_tokens`).
    /// Absent when none were (and from older runs): 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cache_write_tokens: u64,
    /// HTTP requests sent to the model server: every one, retries, re-sends without a refused
    /// parameter and failed ones included, where `llm_calls` counts the calls answered (a reply
    /// the cache gave is a call and no request). Absent from runs of earlier versions; a replay
    /// keeps the recording's, as it keeps its tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
}

fn is_zero(count: &u64) -> bool {
    *count == 0
}

/// As the run file writes it: `reasoning_tokens` only when some were counted, `requests` when
/// recorded.
impl std::fmt::Debug for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut usage = f.debug_struct("Usage");
        usage
            .field("llm_calls", &self.llm_calls)
            .field("fallback_calls", &self.fallback_calls)
            .field("prompt_tokens", &self.prompt_tokens)
            .field("completion_tokens", &self.completion_tokens)
            .field("invalid_actions", &self.invalid_actions);
        if self.reasoning_tokens > 0 {
            usage.field("reasoning_tokens", &self.reasoning_tokens);
        }
        if self.cached_tokens > 0 {
            usage.field("cached_tokens", &self.cached_tokens);
        }
        if self.cache_write_tokens > 0 {
            usage.field("cache_write_tokens", &self.cache_write_tokens);
        }
        if let Some(requests) = self.requests {
            usage.field("requests", &requests);
        }
        usage.finish()
    }
}

impl Usage {
    /// One model call: counted, with the tokens its response reports.
    pub fn count(&mut self, completion: &crate::llm::Completion) {
        self.count_call(completion.usage);
    }

    /// One model call of any API, with the tokens its response reports when it does.
    /// Counts saturate: a server's or a file's token counts are any `u64`, and a sum of them
    /// neither wraps nor panics.
    pub fn count_call(&mut self, tokens: Option<TokenUsage>) {
        self.llm_calls = self.llm_calls.saturating_add(1);
        if let Some(tokens) = tokens {
            self.prompt_tokens = self.prompt_tokens.saturating_add(tokens.prompt_tokens);
            self.completion_tokens = self.completion_tokens.saturating_add(tokens.completion_tokens);
            self.reasoning_tokens = self.reasoning_tokens.saturating_add(tokens.reasoning_tokens);
            self.cached_tokens = self.cached_tokens.saturating_add(tokens.cached_tokens);
            self.cache_write_tokens = self.cache_write_tokens.saturating_add(tokens.cache_write_tokens);
        }
    }

    /// Adds `other`'s counts, saturating as [`Usage::count_call`] does.
    pub fn add(&mut self, other: &Usage) {
        self.llm_calls = self.llm_calls.saturating_add(other.llm_calls);
        self.fallback_calls = self.fallback_calls.saturating_add(other.fallback_calls);
        self.prompt_tokens = self.prompt_tokens.saturating_add(other.prompt_tokens);
        self.completion_tokens = self.completion_tokens.saturating_add(other.completion_tokens);
        self.invalid_actions = self.invalid_actions.saturating_add(other.invalid_actions);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(other.cached_tokens);
        self.cache_write_tokens = self.cache_write_tokens.saturating_add(other.cache_write_tokens);
        self.requests = match (self.requests, other.requests) {
            (None, None) => None,
            (mine, theirs) => Some(mine.unwrap_or(0).saturating_add(theirs.unwrap_or(0))),
        };
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RunFileError {
    #[error("cannot read run file `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("run file `{}` is not a valid run (line {line}, column {column})", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("run file `{}`: field `format` is `{found}`, expected `{RUN_FORMAT}` or `{RUN_FORMAT_V2}`", path.display())]
    Format { path: PathBuf, found: String },
    #[error("run file `{}`: step {position} has `n` = {found}, expected {position}", path.display())]
    StepNumber {
        path: PathBuf,
        position: usize,
        found: usize,
    },
    #[error("cannot write run file `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl Run {
    /// A run about to start.
    pub fn new(question: &str, profile: Profile) -> Run {
        Run {
            format: RUN_FORMAT.to_owned(),
            id: None,
            question: question.to_owned(),
            gold: None,
            task: None,
            method: None,
            profile,
            model: None,
            api: None,
            fewshot: None,
            cot_fewshot: None,
            fewshot_from: None,
            today: None,
            max_steps: None,
            tools: Vec::new(),
            tool_descriptions: Vec::new(),
            docstore: None,
            steps: Vec::new(),
            samples: Vec::new(),
            vote: None,
            sc_stop: None,
            backoff: None,
            answered_by: None,
            trial: None,
            epoch: None,
            reflect: None,
            reflections: Vec::new(),
            last_trial: None,
            reflection: None,
            reflection_reasoning: None,
            shard: None,
            evaluation: None,
            answer: None,
            stopped: None,
            error: None,
            error_kind: None,
            em: None,
            f1: None,
            usage: Usage::default(),
            cache: None,
            batch: Vec::new(),
            batch_usage: None,
        }
    }

    /// Records the batches that answered the run (`eval --batch`) and what their replies
    /// reported spending, one entry a reply (no batch: nothing is recorded); a run that records
    /// them is v2.
    pub fn record_batches(&mut self, batches: Vec<String>, replies: &[Option<TokenUsage>]) {
        if !batches.is_empty() {
            self.batch = batches;
            let mut usage = Usage::default();
            for tokens in replies {
                usage.count_call(*tokens);
            }
            self.batch_usage = Some(usage);
            self.format = RUN_FORMAT_V2.to_owned();
        }
    }

    /// What the run spent on replies batches gave, billed at the batch discount: none when no
    /// batch answered it; all of its usage for a run of an earlier version, which recorded no
    /// `batch_usage`.
    pub fn batched_usage(&self) -> Usage {
        match (&self.batch[..], self.batch_usage) {
            ([], _) => Usage::default(),
            (_, Some(usage)) => usage,
            (_, None) => self.usage,
        }
    }

    /// Records what `--cache` did for the run (`None`: the cache was off, nothing is recorded); a
    /// run that records it is v2, which names its method (`react` too).
    pub fn record_cache_use(&mut self, cache_use: Option<crate::llm::cache::CacheUse>) {
        if let Some(cache_use) = cache_use {
            self.cache = Some(cache_use);
            self.format = RUN_FORMAT_V2.to_owned();
            self.method = Some(self.method());
        }
    }

    /// The run's task: recorded, else (older runs) FEVER when its examples were the bundled
    /// FEVER ones or its gold answer is a FEVER label, else HotpotQA.
    pub fn task(&self) -> Task {
        if let Some(task) = self.task {
            return task;
        }
        let fever_examples = [self.fewshot.as_deref(), self.cot_fewshot.as_deref()].contains(&Some("fever"));
        let labelled = self
            .gold
            .as_deref()
            .is_some_and(|gold| matches!(gold, "SUPPORTS" | "REFUTES" | "NOT ENOUGH INFO"));
        if fever_examples || labelled {
            Task::Fever
        } else {
            Task::HotpotQa
        }
    }

    /// Fills `em` and `f1` from the gold answer, when there is one.
    pub fn score(&mut self) -> Option<AnswerScore> {
        let gold = self.gold.as_deref()?;
        let score = AnswerScore::new(self.answer.as_deref().unwrap_or(""), gold);
        self.em = Some(u8::from(score.em));
        self.f1 = Some(score.f1);
        Some(score)
    }

    /// The recorded completions, step by step, for a [`crate::llm::ReplayLlm`].
    pub fn completions(&self) -> Vec<Vec<String>> {
        self.steps.iter().map(|step| step.completions.clone()).collect()
    }

    /// A `tools` run's recorded assistant messages, step by step, for a
    /// [`crate::llm::ReplayLlm::with_replies`].
    pub fn replies(&self) -> Vec<Vec<ReplyMessage>> {
        self.steps.iter().map(|step| step.replies.clone()).collect()
    }

    /// What each step's calls wrote past the stop sequence, for a
    /// [`crate::llm::ReplayLlm::with_past_stop`].
    pub fn step_past_stop(&self) -> Vec<Option<crate::llm::PastStop>> {
        self.steps.iter().map(|step| step.past_stop).collect()
    }

    /// What the run's steps wrote past their stop sequences, summed; none when nothing was cut.
    pub fn past_stop(&self) -> Option<crate::llm::PastStop> {
        self.steps
            .iter()
            .fold(None, |sum, step| crate::llm::PastStop::sum(sum, step.past_stop))
    }

    /// The recorded reasoning of each step, for a [`crate::llm::ReplayLlm::with_reasoning`].
    pub fn step_reasoning(&self) -> Vec<Option<String>> {
        self.steps.iter().map(|step| step.reasoning.clone()).collect()
    }

    /// Whether any step, sample or reflection recorded reasoning (or a step what was cut past its
    /// stop sequence): such a run is written as [`RUN_FORMAT_V2`], which a build that reads only
    /// v1 would not silently drop it from.
    pub fn has_reasoning(&self) -> bool {
        self.steps.iter().any(|step| step.reasoning.is_some())
            || self.samples.iter().any(|sample| sample.reasoning.is_some())
            || self.reflection_reasoning.is_some()
            || self.stopped == Some(Stopped::MaxTokens)
            || self.past_stop().is_some()
    }

    /// The recorded completions of each sampling request, in order, for a
    /// [`crate::llm::ReplayLlm::with_samples`].
    pub fn sample_requests(&self) -> Vec<Vec<String>> {
        let mut requests: Vec<Vec<String>> = Vec::new();
        let mut last = None;
        for sample in &self.samples {
            if last != Some(sample.request) || requests.is_empty() {
                requests.push(Vec::new());
                last = Some(sample.request);
            }
            if let Some(request) = requests.last_mut() {
                request.push(sample.completion.clone());
            }
        }
        requests
    }

    /// How the run stopped: as it recorded, else as its fields tell (a hand-written run file need
    /// not say): an error recorded is `error`, an answer is `finish`, neither is `max_steps`. Every
    /// reader of runs reads a run without `stopped` this one way.
    pub fn how_stopped(&self) -> Stopped {
        match (self.stopped, &self.error, &self.answer) {
            (Some(stopped), _, _) => stopped,
            (None, Some(_), _) => Stopped::Error,
            (None, None, Some(_)) => Stopped::Finish,
            (None, None, None) => Stopped::MaxSteps,
        }
    }

    /// How the run's replies ended, for a [`crate::llm::ReplayLlm::with_ending`]: only the last
    /// reply of a run can have been only reasoning, and the run's `stopped` says what ended it —
    /// the token cap when it stopped with `max_tokens`, the server otherwise.
    pub fn reply_ending(&self) -> crate::llm::reasoning::Ending {
        match self.how_stopped() {
            Stopped::MaxTokens => crate::llm::reasoning::Ending::Cut,
            _ => crate::llm::reasoning::Ending::Ended,
        }
    }

    /// The recorded reasoning of each sampling request's completions, in the order of
    /// [`Run::sample_requests`], for a [`crate::llm::ReplayLlm::with_sample_reasoning`].
    pub fn sample_reasoning(&self) -> Vec<Vec<Option<String>>> {
        self.samples
            .chunk_by(|a, b| a.request == b.request)
            .map(|group| group.iter().map(|sample| sample.reasoning.clone()).collect())
            .collect()
    }

    /// The method that answered: `react` when the run does not say.
    pub fn method(&self) -> Method {
        self.method.unwrap_or_default()
    }

    /// Which attempt at its question the run was: a trial, an epoch, or the only one.
    pub fn attempt(&self) -> Attempt {
        match (self.trial, self.epoch) {
            (Some(trial), _) => Attempt::Trial(trial),
            (None, Some(epoch)) => Attempt::Epoch(epoch),
            (None, None) => Attempt::Only,
        }
    }

    /// The recorded observations, step by step.
    pub fn observations(&self) -> Vec<Option<String>> {
        self.steps.iter().map(|step| step.observation.clone()).collect()
    }

    /// Reads a run file and checks its format and step numbering.
    pub fn read(path: &Path) -> Result<Run, RunFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| RunFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        Run::from_json(&text, path)
    }

    pub fn from_json(text: &str, path: &Path) -> Result<Run, RunFileError> {
        let mut run: Run = serde_json::from_str(text).map_err(|source| RunFileError::Parse {
            path: path.to_owned(),
            line: source.line(),
            column: source.column(),
            source,
        })?;
        if run.format != RUN_FORMAT && run.format != RUN_FORMAT_V2 {
            return Err(RunFileError::Format {
                path: path.to_owned(),
                found: run.format,
            });
        }
        for (idx, step) in run.steps.iter_mut().enumerate() {
            if step.n == 0 {
                step.n = idx + 1;
            }
            if step.n != idx + 1 {
                return Err(RunFileError::StepNumber {
                    path: path.to_owned(),
                    position: idx + 1,
                    found: step.n,
                });
            }
        }
        Ok(run)
    }

    /// Writes the run as pretty JSON, durably ([`atomic_write`]): a crash leaves the old file or
    /// the new one, whole.
    pub fn write(&self, path: &Path) -> Result<(), RunFileError> {
        // invariant: a `Run` (strings, numbers, string-keyed structs) always serializes
        let mut text = serde_json::to_string_pretty(self).expect("a run always serializes");
        text.push('\n');
        atomic_write(path, text.as_bytes()).map_err(|source| RunFileError::Write {
            path: path.to_owned(),
            source,
        })?;
        // What an earlier write killed mid-way left beside the file.
        remove_stale_temporaries(path);
        Ok(())
    }
}
