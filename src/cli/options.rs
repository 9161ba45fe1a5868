//! The option groups several commands share (agent, model, docstore, tools) and what they open.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use crate::agent::fewshot::Fewshot;
use crate::agent::prompt::PromptOptions;
use crate::agent::trace::ShowReasoning;
use crate::analysis::compare::{DEFAULT_SEED, Golds};
use crate::analysis::prices::{PriceList, PricesError};
use crate::apps::ask::AgentConfig;
use crate::apps::chat;
use crate::base::input::Interaction;
use crate::base::method::Method;
use crate::base::method::{DEFAULT_SC_BATCH, DEFAULT_SC_CONFIDENCE, ScStop, StopRule};
use crate::base::output;
use crate::base::profile::Profile;
use crate::base::secret::ApiKey;
use crate::base::task::Task;
use crate::docstore::DEFAULT_WIKI_URL;
use crate::docstore::{
    DEFAULT_USER_AGENT, DocstoreConfig, DocstoreKind, DocstoreSource, Opener, default_cache_dir,
};
use crate::llm::Llm;
use crate::llm::cache::{self, Hosts, ReplyCache};
use crate::llm::openai::Api;
use crate::llm::openai::ModelSettings;
use crate::llm::openai::OpenAiClient;
use crate::llm::openai::PromptCache;
use crate::llm::openai::ReasoningEcho;
use crate::record::recorded::RecordedRun;
use crate::solver::Examples;
use crate::solver::setup::{self, AgentSetup, ExtraTools};
use crate::tools::Toolbox;
use crate::tools::{
    self, BuiltinTool, CommandToolConfig, ToolsConfig, websearch::Network, websearch::WebSearchConfig,
};
use crate::trajectories::fewshot_from::FewshotFrom;

/// `--profile`: for the commands that run no agent (`explore`, `serve`, `mcp`) alone, and in
/// [`AgentArgs`] for those that do.
#[derive(Args, Clone, Copy)]
pub struct ProfileArg {
    /// `paper` reproduces the ReAct repository byte for byte; `default` fixes its defects.
    #[arg(
        long,
        env = "REACT_PROFILE",
        default_value = "default",
        value_name = "PROFILE"
    )]
    pub profile: Profile,
}

/// How the agent runs. In `--help`, under "Agent" (the profile and step budget) and "Method".
#[derive(Args, Clone)]
#[command(next_help_heading = "Agent")]
pub struct AgentArgs {
    #[command(flatten)]
    pub profile: ProfileArg,
    /// How to answer: `react`, `act`, `cot`, `standard`, `cot-sc`, `react-then-cot-sc` or
    /// `cot-sc-then-react` (the rows of the ReAct paper's Table 1).
    #[arg(
        long,
        env = "REACT_METHOD",
        default_value = "react",
        value_name = "METHOD",
        help_heading = "Method"
    )]
    pub method: Method,
    /// The step budget of a question (at least 1) [default: 7; 5 for FEVER with a backoff method].
    #[arg(long, value_name = "N", value_parser = parse_step_budget)]
    pub max_steps: Option<usize>,
    /// Few-shot examples in the method's format, instead of the bundled ones; a backoff method
    /// takes two files (ReAct and CoT).
    #[arg(long, value_name = "FILE", help_heading = "Method")]
    pub fewshot: Vec<PathBuf>,
    /// CoT-SC's samples per question (at least 1) [default: 21].
    #[arg(long, value_name = "N", help_heading = "Method")]
    pub samples: Option<usize>,
    /// CoT-SC's sampling temperature [default: 0.7].
    #[arg(long, value_name = "T", help_heading = "Method")]
    pub sample_temperature: Option<f64>,
    /// Stop CoT-SC's sampling once the vote is decided: `exact` (the leader can no longer be
    /// overtaken: the majority of all N) or `beta` (Adaptive-Consistency's Beta rule).
    #[arg(long, value_name = "RULE", help_heading = "Method")]
    pub sc_stop: Option<StopRule>,
    /// With `--sc-stop`: samples asked per request (at least 1) [default: 5].
    #[arg(long, value_name = "K", help_heading = "Method")]
    pub sc_batch: Option<usize>,
    /// With `--sc-stop beta`: the confidence at which it stops, above 0.5 and below 1 [default: 0.95].
    #[arg(long, value_name = "C", help_heading = "Method")]
    pub sc_confidence: Option<f64>,
}

impl AgentArgs {
    /// What `ask`, `chat` and `eval` share of the agent's set-up.
    pub fn setup(&self) -> AgentSetup {
        AgentSetup {
            profile: self.profile.profile,
            method: self.method,
            max_steps: self.max_steps,
            samples: self.samples,
            sample_temperature: self.sample_temperature,
            sc_stop: self.sc_stop.map(|rule| ScStop {
                rule,
                batch: self.sc_batch.unwrap_or(DEFAULT_SC_BATCH),
                confidence: self.sc_confidence.unwrap_or(DEFAULT_SC_CONFIDENCE),
            }),
        }
    }

    /// `--sc-batch` and `--sc-confidence` mean nothing without their rule: refused, not ignored.
    fn check_sc_flags(&self) -> anyhow::Result<()> {
        if self.sc_stop.is_none() && (self.sc_batch.is_some() || self.sc_confidence.is_some()) {
            anyhow::bail!(
                "`--sc-batch` and `--sc-confidence` set how `--sc-stop` samples: give `--sc-stop exact` or `--sc-stop beta`"
            );
        }
        if self.sc_stop == Some(StopRule::Exact) && self.sc_confidence.is_some() {
            anyhow::bail!(
                "`--sc-confidence` is the Beta rule's: `--sc-stop exact` stops only when the vote is certain"
            );
        }
        Ok(())
    }

    /// The library's agent configuration, with these prompt options.
    pub fn config(&self, prompt_options: PromptOptions) -> anyhow::Result<AgentConfig> {
        let examples = if self.fewshot.is_empty() {
            Examples::Bundled(Task::HotpotQa)
        } else {
            let files = self
                .fewshot
                .iter()
                .map(|path| Fewshot::from_file(path))
                .collect::<Result<Vec<_>, _>>()?;
            Examples::Files(files)
        };
        Ok(AgentConfig {
            setup: self.setup(),
            examples,
            prompt_options,
        })
    }
}

/// `--docstore`'s help for the servers (`serve`, `mcp`), which refuse `distractor`.
pub const SERVED_DOCSTORES: &str = "`wikipedia`, `corpus:FILE` or `index:DIR` (built by `index build`)";
/// `--offline`'s help for the servers, which call no model.
pub const SERVED_OFFLINE: &str = "Serve Wikipedia pages from the cache only; a miss is an error";
/// `--docstore`'s help for `explore`, which refuses `distractor` (each question's paragraphs).
pub const EXPLORED_DOCSTORES: &str = "`wikipedia`, `corpus:FILE` (JSON Lines pages, or a HotpotQA file's paragraphs) or `index:DIR` (built by `index build`)";
/// `--offline`'s help for `explore`, which calls no model.
pub const EXPLORED_OFFLINE: &str =
    "Serve Wikipedia pages and web searches from the cache only; a miss is an error (no model is called)";

/// `--show-reasoning`, declared once for the commands that print a trace (`ask`, `chat`, `replay`).
#[derive(Args, Clone, Copy)]
pub struct ShowReasoningArgs {
    /// Print the model's reasoning whole in the trace (by default one dimmed line, cut short).
    #[arg(long)]
    show_reasoning: bool,
}

impl ShowReasoningArgs {
    /// How much reasoning the trace shows: all of it with `--show-reasoning`, else one line.
    pub fn shown(self) -> ShowReasoning {
        if self.show_reasoning {
            ShowReasoning::Whole
        } else {
            ShowReasoning::Line
        }
    }
}

/// The date a command's prompt states when `--today` is not given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DefaultDate {
    /// No `Today is` line (`ask`).
    None,
    /// Today's date, UTC (`chat`, whose follow-ups are often about the present).
    TodayUtc,
}

/// `--today`, declared once for `ask` and `chat`; each says its [`DefaultDate`].
#[derive(Args, Clone)]
pub struct TodayArgs {
    /// State the date in the prompt (`Today is DATE.`, DATE as YYYY-MM-DD), so the model does not
    /// argue with current facts [default: none for `ask`; today, UTC, for `chat`].
    #[arg(long, value_name = "DATE", value_parser = chat::check_date, help_heading = "Agent")]
    today: Option<String>,
}

impl TodayArgs {
    /// The prompt's options: the date given, else `default`'s.
    pub fn prompt_options(self, default: DefaultDate) -> PromptOptions {
        let today = self.today.or_else(|| match default {
            DefaultDate::None => None,
            DefaultDate::TodayUtc => Some(chat::today_utc()),
        });
        PromptOptions { today }
    }
}

/// `--cache-dir`, declared once: the page cache of the docstore's fetches, whose `replies/` is
/// also the reply cache's default directory (the `cache` commands).
#[derive(Args, Clone)]
pub struct PageCacheArgs {
    /// Where fetched pages and web-search answers are cached (default: the user's cache
    /// directory, `$XDG_CACHE_HOME/react-docstore` or `~/.cache/react-docstore`).
    #[arg(long, env = "REACT_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
}

/// Which model answers, and how to reach it.
#[derive(Args, Clone)]
#[command(next_help_heading = "Model")]
pub struct ModelArgs {
    /// The model name the server knows.
    #[arg(long, env = "REACT_MODEL", value_name = "MODEL")]
    pub model: Option<String>,
    /// An OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama, LM Studio).
    #[arg(long, env = "OPENAI_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// The API key; optional for local servers. Never printed [default: the variable
    /// `--api-key-env` names].
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// The environment variable the API key is read from when `--api-key` is not given
    /// [default: `ANTHROPIC_API_KEY` for `--api anthropic` and `anthropic-tools`, else
    /// `OPENAI_API_KEY`].
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,
    /// `chat` (/chat/completions, the prompt continued), `completions` (/completions, the prompt
    /// as text), `tools` (/chat/completions with the actions as functions the model calls),
    /// `responses` or `responses-tools` (OpenAI's /responses, the prompt continued or functions),
    /// `anthropic` (Anthropic's /messages, the prompt continued) or `anthropic-tools`
    /// (/messages with the actions as tools).
    #[arg(long, env = "REACT_API", default_value = "chat", value_name = "API")]
    pub api: Api,
    /// Sampling temperature.
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    pub temperature: f64,
    /// The cap on tokens per model call; 0 sends no cap.
    #[arg(long, default_value_t = crate::llm::openai::DEFAULT_MAX_TOKENS, value_name = "N")]
    pub max_tokens: u32,
    /// An extra request field, e.g. `seed=7` or `reasoning_effort=low` (JSON when it parses). Repeatable.
    #[arg(long = "llm-option", value_name = "KEY=VALUE")]
    pub llm_options: Vec<String>,
    /// Seconds one model request may take.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    pub llm_timeout: u64,
    /// With a function-calling API (`tools`, `responses-tools`, `anthropic-tools`), send earlier
    /// assistant turns back without the reasoning they came with (by default each goes back under
    /// its own field, `reasoning` or `reasoning_content`, as the Responses API's reasoning items or
    /// Anthropic's thinking blocks).
    #[arg(long)]
    pub no_reasoning_echo: bool,
    /// Ask for no prompt caching: no `cache_control` breakpoints (`--api anthropic`: by default
    /// the few-shot prompt is marked, so later steps and questions read it from Anthropic's
    /// cache) and no `prompt_cache_key` (sent by default to api.openai.com).
    #[arg(long, conflicts_with = "prompt_cache_key")]
    pub no_prompt_cache: bool,
    /// The `prompt_cache_key` of every request (`--api chat`, `tools`, `responses`,
    /// `responses-tools`): the requests that share it are routed to one OpenAI prompt cache
    /// [default, api.openai.com only: a digest of the model and the few-shot prompt].
    #[arg(long, value_name = "KEY")]
    pub prompt_cache_key: Option<String>,
}

impl ModelArgs {
    /// The OpenAI-compatible client these options describe.
    pub fn open(&self) -> anyhow::Result<OpenAiClient> {
        if self.no_reasoning_echo && !self.api.calls_functions() {
            anyhow::bail!(
                "`--no-reasoning-echo` is about the assistant turns of `--api tools`: `--api {}` sends none back",
                self.api
            );
        }
        let settings = ModelSettings {
            model: self.model.clone(),
            base_url: self.base_url.clone(),
            api_key: self.api_key()?.map(ApiKey::new),
            api: self.api,
            temperature: Some(self.temperature),
            max_tokens: Some(self.max_tokens),
            options: self.llm_options.clone(),
            timeout: Some(Duration::from_secs(self.llm_timeout)),
            reasoning_echo: if self.no_reasoning_echo {
                ReasoningEcho::Drop
            } else {
                ReasoningEcho::Send
            },
            prompt_cache: if self.no_prompt_cache {
                PromptCache::Off
            } else {
                PromptCache::Breakpoints
            },
            prompt_cache_key: self.prompt_cache_key.clone(),
        };
        Ok(OpenAiClient::from_settings(settings)?)
    }

    /// `--api-key`, else the variable `--api-key-env` names (which must be set), else the API's
    /// own variable when it is set.
    fn api_key(&self) -> anyhow::Result<Option<String>> {
        if let Some(key) = &self.api_key {
            return Ok(Some(key.clone()));
        }
        if let Some(name) = &self.api_key_env {
            return match std::env::var(name) {
                Ok(key) => Ok(Some(key)),
                Err(_) => {
                    anyhow::bail!("`--api-key-env {name}`: the environment variable `{name}` is not set")
                }
            };
        }
        let name = if self.api.is_anthropic() {
            crate::llm::openai::ANTHROPIC_KEY_ENV
        } else {
            "OPENAI_API_KEY"
        };
        Ok(std::env::var(name).ok())
    }
}

/// Where Search and Lookup read from.
#[derive(Args, Clone)]
#[command(next_help_heading = "Docstore")]
pub struct DocstoreArgs {
    /// `wikipedia`, `distractor` (each question's own paragraphs), `corpus:FILE` or `index:DIR`
    /// (built by `index build`).
    #[arg(long, default_value = "wikipedia", value_name = "DOCSTORE")]
    pub docstore: DocstoreKind,
    #[command(flatten)]
    pub fetch: FetchArgs,
}

/// How Wikipedia pages (and web searches) are fetched and cached: with `--docstore` in
/// [`DocstoreArgs`], and in `replay`, whose `--docstore` has no default.
#[derive(Args, Clone)]
pub struct FetchArgs {
    /// The Wikipedia to search; tests and mirrors point it elsewhere [default: English
    /// Wikipedia].
    #[arg(
        long,
        env = "REACT_WIKI_URL",
        default_value = DEFAULT_WIKI_URL,
        hide_default_value = true,
        value_name = "URL"
    )]
    pub wiki_url: String,
    #[command(flatten)]
    pub page_cache: PageCacheArgs,
    /// Serve Wikipedia pages and web searches from the cache only; a miss is an error (a command
    /// that asks a model still calls it: `replay` runs without one).
    #[arg(long)]
    pub offline: bool,
    /// The User-Agent sent to Wikipedia: say who you are and how to reach you.
    #[arg(long, env = "REACT_USER_AGENT", value_name = "TEXT")]
    pub user_agent: Option<String>,
}

impl DocstoreArgs {
    /// The library's docstore configuration under `profile`.
    pub fn config(&self, profile: Profile) -> DocstoreConfig {
        DocstoreConfig {
            kind: self.docstore.clone(),
            wiki_url: self.fetch.wiki_url.clone(),
            cache_dir: self.fetch.page_cache.cache_dir.clone(),
            offline: self.fetch.offline,
            user_agent: self
                .fetch
                .user_agent
                .clone()
                .unwrap_or_else(|| DEFAULT_USER_AGENT.to_owned()),
            ..DocstoreConfig::new(profile)
        }
    }

    /// The docstore Search and Lookup read from for `opener`: one explorer per question over a
    /// shared source.
    pub fn open(&self, profile: Profile, opener: Opener) -> anyhow::Result<Arc<dyn DocstoreSource>> {
        Ok(self.config(profile).open_for(opener)?.source(profile))
    }

    /// Refuses, before anything else is opened, a docstore `opener` cannot serve.
    pub fn check_opener(&self, opener: Opener) -> anyhow::Result<()> {
        Ok(self.docstore.check_opener(opener)?)
    }
}

/// Extra bracketed tools.
#[derive(Args, Clone)]
#[command(next_help_heading = "Tools")]
pub struct ToolArgs {
    /// Built-in tools to register, comma-separated: `calculate`, `websearch`.
    #[arg(long, value_delimiter = ',', value_name = "TOOLS")]
    pub tools: Vec<BuiltinTool>,
    /// A tool of your own: `NAME[input]` runs `sh -c COMMAND` with the input on stdin and reads
    /// its stdout. Repeatable.
    #[arg(long = "tool", value_name = "NAME=COMMAND", value_parser = ToolDefinition)]
    pub commands: Vec<CommandToolConfig>,
    /// The SerpApi-compatible search endpoint of `WebSearch` [default: SerpApi's].
    #[arg(
        long,
        env = "REACT_SEARCH_URL",
        default_value = tools::websearch::DEFAULT_SEARCH_URL,
        hide_default_value = true,
        value_name = "URL"
    )]
    pub search_url: String,
    /// The SerpApi key of `WebSearch`. Never printed.
    #[arg(long, env = "SERPAPI_API_KEY", hide_env_values = true, value_name = "KEY")]
    pub serpapi_key: Option<String>,
}

/// Reads `--tool NAME=COMMAND`, refusing a bad one in its own words: clap's would quote the whole
/// definition, and a command may hold a credential (ours quote it redacted).
#[derive(Clone)]
struct ToolDefinition;

impl clap::builder::TypedValueParser for ToolDefinition {
    type Value = CommandToolConfig;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<CommandToolConfig, clap::Error> {
        let refuse = |message: String| {
            clap::Error::raw(clap::error::ErrorKind::ValueValidation, format!("{message}\n"))
        };
        let definition = value
            .to_str()
            .ok_or_else(|| refuse("a `--tool` definition must be UTF-8".to_owned()))?;
        CommandToolConfig::parse(definition).map_err(|error| refuse(error.to_string()))
    }
}

impl ToolArgs {
    /// Whether any extra tool is registered (`--tools`, `--tool`).
    pub fn any(&self) -> bool {
        !self.tools.is_empty() || !self.commands.is_empty()
    }

    /// Whether these options register tools besides Search, Lookup and Finish.
    pub fn extra(&self) -> ExtraTools {
        if self.any() {
            ExtraTools::Some
        } else {
            ExtraTools::None
        }
    }

    /// The `paper` profile is the ReAct repository's agent, which knows no extra tools.
    pub fn check_profile(&self, profile: Profile) -> anyhow::Result<()> {
        Ok(setup::check_profile_tools(profile, self.extra())?)
    }

    /// The extra tools the command line asks for. WebSearch answers are cached next to the pages:
    /// in `--cache-dir`, else the same default directory the page cache uses, so `--offline`
    /// answers a search an earlier run made whether or not either run named a cache directory.
    pub fn open(&self, fetch: &FetchArgs) -> anyhow::Result<Toolbox> {
        let config = ToolsConfig {
            builtin: self.tools.clone(),
            commands: self.commands.clone(),
            websearch: WebSearchConfig {
                search_url: self.search_url.clone(),
                api_key: self.serpapi_key.clone().map(ApiKey::new),
                cache_dir: Some(
                    fetch
                        .page_cache
                        .cache_dir
                        .clone()
                        .unwrap_or_else(default_cache_dir),
                ),
                network: if fetch.offline {
                    Network::Offline
                } else {
                    Network::Online
                },
                ..WebSearchConfig::default()
            },
        };
        Ok(config.open_toolbox()?)
    }
}

/// What every command that runs the agent takes: the agent, its model, its docstore, its tools.
#[derive(Args)]
pub struct AgentRunArgs {
    #[command(flatten)]
    pub agent: AgentArgs,
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub docstore: DocstoreArgs,
    #[command(flatten)]
    pub tools: ToolArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
}

/// `--cache [DIR]`: model replies kept on disk and served again (docs/cache.md).
#[derive(Args, Clone)]
#[command(next_help_heading = "Model")]
pub struct CacheArgs {
    /// Answer a model call from the reply cache when the same request (model, API, server, the
    /// whole body, attempt) was answered before, and keep new replies there: in DIR, given as
    /// `--cache=DIR` (a word after `--cache` is never its directory), else in `replies/` of the
    /// page cache directory (`--cache-dir`).
    #[arg(long, value_name = "DIR", num_args = 0..=1, require_equals = true)]
    pub cache: Option<Option<PathBuf>>,
    /// With `--cache`: serve a reply whichever host of the model gave it (several servers of one
    /// model behind different URLs).
    #[arg(long, requires = "cache")]
    pub cache_shared_across_hosts: bool,
}

impl CacheArgs {
    /// The reply cache's directory, when `--cache` is on.
    pub fn dir(&self, docstore: &DocstoreArgs) -> Option<PathBuf> {
        let dir = self.cache.as_ref()?;
        Some(
            dir.clone()
                .unwrap_or_else(|| default_replies_dir(docstore.fetch.page_cache.cache_dir.as_deref())),
        )
    }
}

/// A refused command line that holds `--cache WORD`: since `--cache` takes its directory only as
/// `--cache=DIR`, WORD was read as an argument of its own (the question, a second question file),
/// and the error says so.
pub fn explain_cache_word(mut error: clap::Error, args: &[std::ffi::OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if error.kind() != ErrorKind::UnknownArgument {
        return error;
    }
    let Some(word) = args
        .windows(2)
        .take_while(|pair| pair[0] != "--")
        .find(|pair| pair[0] == "--cache" && !pair[1].to_string_lossy().starts_with('-'))
        .map(|pair| pair[1].to_string_lossy().into_owned())
    else {
        return error;
    };
    let tip = format!(
        "`--cache` takes its directory only as `--cache=DIR`: `--cache {word}` is `--cache` and an argument `{word}` of its own; write `--cache={word}`"
    );
    let mut tips = vec![clap::builder::StyledStr::from(tip)];
    if let Some(ContextValue::StyledStrs(others)) = error.get(ContextKind::Suggested) {
        tips.extend(others.iter().cloned());
    }
    error.insert(ContextKind::Suggested, ContextValue::StyledStrs(tips));
    error
}

/// `replies/` in the page cache directory: `--cache-dir`, else the user's cache directory.
pub fn default_replies_dir(cache_dir: Option<&std::path::Path>) -> PathBuf {
    cache_dir
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(default_cache_dir)
        .join(cache::REPLIES_DIR)
}

impl AgentRunArgs {
    /// Options that cannot work together, refused before anything runs, in the library's words
    /// (`ask`, `chat` and `eval` check them again).
    pub fn check(&self, opener: Opener) -> anyhow::Result<()> {
        self.agent.check_sc_flags()?;
        self.agent
            .setup()
            .check(Some(self.model.api), self.tools.extra())?;
        self.docstore.check_opener(opener)
    }

    /// The model client, with the reply cache when `--cache` is on.
    pub fn open_model(&self) -> anyhow::Result<OpenAiClient> {
        let client = self.model.open()?;
        let Some(dir) = self.cache.dir(&self.docstore) else {
            return Ok(client);
        };
        let hosts = if self.cache.cache_shared_across_hosts {
            Hosts::Shared
        } else {
            Hosts::Separate
        };
        let cache = ReplyCache::open(&dir, hosts, client.config().max_response_bytes)?;
        Ok(client.with_cache(cache))
    }

    /// The model shared by concurrent questions, with the reply cache when `--cache` is on.
    pub fn open_shared_model(&self) -> anyhow::Result<Arc<dyn Llm>> {
        Ok(Arc::new(self.open_model()?))
    }

    /// The docstore of these options, for `opener`.
    pub fn open_docstore(&self, opener: Opener) -> anyhow::Result<Arc<dyn DocstoreSource>> {
        self.docstore.open(self.agent.profile.profile, opener)
    }

    /// The tools of these options.
    pub fn open_tools(&self) -> anyhow::Result<Toolbox> {
        self.tools.open(&self.docstore.fetch)
    }
}

/// `--fewshot-from RESULTS --shots K [--seed S]`: few-shot examples drawn from earlier right runs.
/// In `--help`, under "Method" with the other few-shot options.
#[derive(Args, Clone)]
#[command(next_help_heading = "Method")]
pub struct FewshotFromArgs {
    /// Draw the few-shot examples from the right runs of this results file (or directory of run
    /// files), never from a question being asked; they are written beside the results (or run) file.
    #[arg(long, value_name = "RESULTS", requires = "shots", conflicts_with = "fewshot")]
    pub fewshot_from: Option<PathBuf>,
    /// How many examples `--fewshot-from` draws.
    #[arg(long, value_name = "K", requires = "fewshot_from", value_parser = clap::value_parser!(u16).range(1..))]
    pub shots: Option<u16>,
    /// Seed of `--fewshot-from`'s draw of examples, and of nothing else (the model's sampling
    /// takes its own: `--llm-option seed=N`).
    #[arg(
        long,
        visible_alias = "fewshot-seed",
        default_value_t = 0,
        value_name = "S",
        requires = "fewshot_from"
    )]
    pub seed: u64,
}

impl FewshotFromArgs {
    /// The runs to draw from, read once before anything runs.
    pub fn open(&self) -> anyhow::Result<Option<FewshotFrom>> {
        let Some(results) = &self.fewshot_from else {
            return Ok(None);
        };
        let runs = read_results_runs(std::slice::from_ref(results))?
            .into_iter()
            .map(|sourced| sourced.run)
            .collect();
        Ok(Some(FewshotFrom {
            results: results.clone(),
            runs,
            shots: usize::from(self.shots.unwrap_or(1)),
            seed: self.seed,
        }))
    }
}

/// The runs of `paths` for `export` and `--fewshot-from`, read by the one rule
/// ([`crate::record::evaluation::read_all_runs`]), what the evaluation lacks noted on stderr.
pub fn read_results_runs(paths: &[PathBuf]) -> anyhow::Result<Vec<RecordedRun>> {
    let read = crate::record::evaluation::read_all_runs(paths)?;
    warn_gaps(&read.gaps)?;
    Ok(read.runs)
}

/// Whether a person types on stdin.
pub fn stdin_interaction() -> Interaction {
    if std::io::stdin().is_terminal() {
        Interaction::Terminal
    } else {
        Interaction::Piped
    }
}

/// `--max-steps`: a budget of 0 steps would end every run before the model is asked.
fn parse_step_budget(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("the step budget must be at least 1".to_owned()),
        Ok(n_steps) => Ok(n_steps),
        Err(error) => Err(error.to_string()),
    }
}

/// `--seed` of the comparisons' bootstrap: `compare`, and `report` for each pair it compares.
#[derive(Args, Clone, Copy)]
pub struct BootstrapSeedArg {
    /// Seed of the bootstrap's resampling, which draws the intervals (the same seed prints the same
    /// intervals).
    #[arg(long, visible_alias = "bootstrap-seed", default_value_t = DEFAULT_SEED, value_name = "N")]
    pub seed: u64,
}

/// `--prices FILE`: `eval`, `score`, `compare`, `report` and `replay` price the runs' tokens.
#[derive(Args, Clone)]
pub struct PricesArg {
    /// Price the runs' tokens: LiteLLM's JSON price map (`model_prices_and_context_window.json`)
    /// or a TOML table in dollars per million tokens (`"gpt-4o-mini" = { input = 0.15,
    /// cached_input = 0.075, output = 0.6 }`); the summary gives the exact cost, from the usage
    /// the runs recorded.
    #[arg(long, value_name = "FILE", env = "REACT_PRICES")]
    pub prices: Option<PathBuf>,
}

impl PricesArg {
    /// The price file read and checked, when one was given.
    pub fn read(&self) -> Result<Option<PriceList>, PricesError> {
        self.prices.as_deref().map(PriceList::read).transpose()
    }
}

/// `--ignore-gold`: `compare`, and `report` for each pair it compares.
#[derive(Args, Clone, Copy)]
pub struct GoldsArg {
    /// Pair runs whose gold answers differ, each scored against its own file's gold (without it,
    /// such a pair is an error naming both golds).
    #[arg(long)]
    ignore_gold: bool,
}

impl GoldsArg {
    pub fn golds(self) -> Golds {
        if self.ignore_gold {
            Golds::EachFileItsOwn
        } else {
            Golds::MustAgree
        }
    }
}

/// What an evaluation read from several files lacks (missing shards, questions not run) or held
/// twice, one `note:` line each on stderr.
pub fn warn_gaps(gaps: &[String]) -> std::io::Result<()> {
    let mut stderr = output::stderr();
    for gap in gaps {
        writeln!(stderr, "note: {gap}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::{DefaultDate, TodayArgs};

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        today: TodayArgs,
    }

    fn stated(args: &[&str], default: DefaultDate) -> Option<String> {
        let command = Command::parse_from(std::iter::once("command").chain(args.iter().copied()));
        command.today.prompt_options(default).today
    }

    #[test]
    fn the_date_stated_is_the_one_given_else_the_commands_default() {
        let given = ["--today", "2023-11-22"];
        assert_eq!(stated(&given, DefaultDate::None).as_deref(), Some("2023-11-22"));
        assert_eq!(
            stated(&given, DefaultDate::TodayUtc).as_deref(),
            Some("2023-11-22")
        );
        assert_eq!(stated(&[], DefaultDate::None), None);
        let before = crate::apps::chat::today_utc();
        let today = stated(&[], DefaultDate::TodayUtc);
        let after = crate::apps::chat::today_utc();
        // invariant: a test; the date is read twice around the call so midnight cannot fail it
        let today = today.unwrap();
        assert!(today == before || today == after, "{today}");
    }
}
