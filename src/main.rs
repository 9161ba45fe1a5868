//! The `react-docstore` binary: parses the command line and hands over to the library.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use react_docstore::ask::{self, AgentConfig, AskConfig, AskOutput, Outcome};
use react_docstore::chat::{self, ChatConfig, ChatOutput, Interaction};
use react_docstore::docstore::index::{
    self, BuildConfig, BuildProgress, DumpFormat, IndexInfo, MalformedRecords,
};
use react_docstore::docstore::{DEFAULT_USER_AGENT, DocstoreConfig, DocstoreKind, DocstoreSource};
use react_docstore::environment::{Environment, Workbench};
use react_docstore::eval::{self, Contexts, EvalConfig, EvalServices, Progress, Resume, Selection, Subset};
use react_docstore::explore::{self, Explore, Format};
use react_docstore::fewshot::Fewshot;
use react_docstore::llm::{Api, ApiKey, Llm, ModelSettings, OpenAiClient};
use react_docstore::output;
use react_docstore::prompt::PromptOptions;
use react_docstore::replay::{self, Output, ReplayConfig};
use react_docstore::tool::Toolbox;
use react_docstore::tools::{self, BuiltinTool, CommandToolConfig, Network, ToolsConfig, WebSearchConfig};
use react_docstore::trace::{LogOutput, TracePrinter};
use react_docstore::{ActionGrammar, Profile, Run};

#[derive(Parser)]
#[command(
    name = "react-docstore",
    version,
    about = "A few-shot ReAct agent over Wikipedia"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Answer one question: the trace on stderr, the answer on stdout.
    Ask(AskArgs),
    /// Converse: follow-ups are rewritten into standalone questions, then answered.
    Chat(ChatArgs),
    /// Replay run files (or directories of them) offline.
    Replay(ReplayArgs),
    /// Evaluate a question file: EM/F1 summary on stdout.
    Eval(EvalArgs),
    /// Run Search[...] / Lookup[...] (and tool actions) by hand against a docstore.
    Explore(ExploreArgs),
    /// The official HotpotQA EM/F1 of a predictions file against a gold file.
    Score(ScoreArgs),
    /// Index a frozen Wikipedia dump for `--docstore index:DIR`, or say what an index holds.
    #[command(subcommand)]
    Index(IndexCommand),
}

#[derive(Subcommand)]
enum IndexCommand {
    /// Index dumps (HotpotQA processed Wikipedia, KILT, FEVER wiki-pages, DPR passages, JSON Lines),
    /// compressed or not, in tar/zip archives or directories.
    Build(IndexBuildArgs),
    /// What an index holds: formats, sources, pages, snapshot id, build date.
    Info(IndexInfoArgs),
}

#[derive(Args)]
struct IndexBuildArgs {
    /// Dump files or directories, read in the order given.
    #[arg(required = true, value_name = "SOURCE")]
    sources: Vec<PathBuf>,
    /// The index directory to write (an existing index there is replaced when the build completes).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// `auto` (recognised from each source's first record), `hotpotqa`, `kilt`, `fever`, `dpr` or `jsonl`.
    #[arg(long, default_value = "auto", value_parser = parse_dump_format, value_name = "FORMAT")]
    format: FormatChoice,
    /// Memory of the indexing threads together (`512M`, `2G`): bounds the build's memory.
    #[arg(long, default_value = "512M", value_parser = react_docstore::docstore::index::parse_size, value_name = "SIZE")]
    memory: usize,
    /// Parsing and indexing threads (default: the number of cores).
    #[arg(long, value_name = "N")]
    threads: Option<std::num::NonZeroUsize>,
    /// Stop at the first malformed record instead of skipping it.
    #[arg(long)]
    strict: bool,
    /// Print the manifest as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct IndexInfoArgs {
    /// The index directory.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Print it as one JSON object.
    #[arg(long)]
    json: bool,
}

/// `--format`: `None` to recognise each source's format.
#[derive(Clone)]
struct FormatChoice(Option<DumpFormat>);

/// `auto` → detect, else the named format.
fn parse_dump_format(text: &str) -> Result<FormatChoice, String> {
    match text {
        "auto" => Ok(FormatChoice(None)),
        _ => text.parse().map(|format| FormatChoice(Some(format))),
    }
}

/// How the agent runs.
#[derive(Args, Clone)]
struct AgentArgs {
    /// `paper` reproduces the ReAct repository byte for byte; `default` fixes its defects.
    #[arg(
        long,
        env = "REACT_PROFILE",
        default_value = "default",
        value_name = "PROFILE"
    )]
    profile: Profile,
    /// The step budget of a question (at least 1).
    #[arg(long, default_value_t = react_docstore::agent::DEFAULT_MAX_STEPS, value_name = "N", value_parser = parse_step_budget)]
    max_steps: usize,
    /// Few-shot examples in the numbered format, instead of the bundled HotpotQA ones.
    #[arg(long, value_name = "FILE")]
    fewshot: Option<PathBuf>,
}

/// Which model answers, and how to reach it.
#[derive(Args, Clone)]
struct ModelArgs {
    /// The model name the server knows.
    #[arg(long, env = "REACT_MODEL", value_name = "MODEL")]
    model: Option<String>,
    /// An OpenAI-compatible server (OpenAI, vLLM, llama.cpp, Ollama, LM Studio).
    #[arg(long, env = "OPENAI_BASE_URL", value_name = "URL")]
    base_url: Option<String>,
    /// The API key; optional for local servers. Never printed.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true, value_name = "KEY")]
    api_key: Option<String>,
    /// `chat` (/chat/completions) or `completions` (/completions, the prompt as text).
    #[arg(long, env = "REACT_API", default_value = "chat", value_name = "API")]
    api: Api,
    /// Sampling temperature.
    #[arg(long, default_value_t = 0.0, value_name = "T")]
    temperature: f64,
    /// The cap on tokens per model call; 0 sends no cap.
    #[arg(long, default_value_t = react_docstore::llm::openai::DEFAULT_MAX_TOKENS, value_name = "N")]
    max_tokens: u32,
    /// An extra request field, e.g. `seed=7` or `reasoning_effort=low` (JSON when it parses). Repeatable.
    #[arg(long = "llm-option", value_name = "KEY=VALUE")]
    llm_options: Vec<String>,
    /// Seconds one model request may take.
    #[arg(long, default_value_t = 120, value_name = "SECONDS")]
    llm_timeout: u64,
}

/// Where Search and Lookup read from.
#[derive(Args, Clone)]
struct DocstoreArgs {
    /// `wikipedia`, `distractor` (each question's own paragraphs), `corpus:FILE` or `index:DIR`
    /// (built by `index build`).
    #[arg(long, default_value = "wikipedia", value_name = "DOCSTORE")]
    docstore: DocstoreKind,
    /// The Wikipedia to search; tests and mirrors point it elsewhere.
    #[arg(
        long,
        env = "REACT_WIKI_URL",
        default_value = "https://en.wikipedia.org",
        value_name = "URL"
    )]
    wiki_url: String,
    /// Where fetched pages are cached.
    #[arg(long, env = "REACT_CACHE_DIR", value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// Serve Wikipedia pages and web searches from the cache only; a miss is an error (the model is
    /// still called: `replay` runs without one).
    #[arg(long)]
    offline: bool,
    /// The User-Agent sent to Wikipedia: say who you are and how to reach you.
    #[arg(long, env = "REACT_USER_AGENT", value_name = "TEXT")]
    user_agent: Option<String>,
}

impl DocstoreArgs {
    /// The library's docstore configuration under `profile`.
    fn config(&self, profile: Profile) -> DocstoreConfig {
        DocstoreConfig {
            kind: self.docstore.clone(),
            wiki_url: self.wiki_url.clone(),
            cache_dir: self.cache_dir.clone(),
            offline: self.offline,
            user_agent: self
                .user_agent
                .clone()
                .unwrap_or_else(|| DEFAULT_USER_AGENT.to_owned()),
            ..DocstoreConfig::new(profile)
        }
    }
}

/// Extra bracketed tools.
#[derive(Args, Clone)]
struct ToolArgs {
    /// Built-in tools to register, comma-separated: `calculate`, `websearch`.
    #[arg(long, value_delimiter = ',', value_name = "TOOLS")]
    tools: Vec<BuiltinTool>,
    /// A tool of your own: `NAME[input]` runs `sh -c COMMAND` with the input on stdin and reads
    /// its stdout. Repeatable.
    #[arg(long = "tool", value_name = "NAME=COMMAND", value_parser = CommandToolConfig::parse)]
    commands: Vec<CommandToolConfig>,
    /// The SerpApi-compatible search endpoint of `WebSearch`.
    #[arg(long, env = "REACT_SEARCH_URL", default_value = tools::websearch::DEFAULT_SEARCH_URL, value_name = "URL")]
    search_url: String,
    /// The SerpApi key of `WebSearch`. Never printed.
    #[arg(long, env = "SERPAPI_API_KEY", hide_env_values = true, value_name = "KEY")]
    serpapi_key: Option<String>,
}

/// What every command that runs the agent takes: the agent, its model, its docstore, its tools.
#[derive(Args)]
struct AgentRunArgs {
    #[command(flatten)]
    agent: AgentArgs,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    docstore: DocstoreArgs,
    #[command(flatten)]
    tools: ToolArgs,
}

#[derive(Args)]
struct AskArgs {
    #[arg(value_parser = ask::check_question)]
    question: String,
    #[command(flatten)]
    run: AgentRunArgs,
    /// Print the run as JSON on stdout.
    #[arg(long)]
    json: bool,
    /// Write the run file (`react-docstore.run.v1`) here, for `replay`.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// State the date in the prompt (`Today is DATE.`, DATE as YYYY-MM-DD), so the model does not
    /// argue with current facts.
    #[arg(long, value_name = "DATE", value_parser = chat::check_date)]
    today: Option<String>,
}

#[derive(Args)]
struct ChatArgs {
    /// The date the prompt states (`Today is {date}.`, YYYY-MM-DD); default: today (UTC).
    #[arg(long, value_name = "DATE", value_parser = chat::check_date)]
    today: Option<String>,
    /// Print each question's run as one JSON line instead of its answer.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    run: AgentRunArgs,
}

#[derive(Args)]
struct ReplayArgs {
    /// Run files (a run, or JSON Lines of runs such as an eval results file), or directories whose
    /// `*.json` and `*.jsonl` files are replayed, recursively, in name order.
    #[arg(required = true, value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// Replay under this profile instead of the one each run recorded.
    #[arg(long, value_name = "PROFILE")]
    profile: Option<Profile>,
    /// Replay with this step budget instead of the one each run recorded.
    #[arg(long, value_name = "N")]
    max_steps: Option<usize>,
    /// Print each run as a JSON line, then a summary line.
    #[arg(long)]
    json: bool,
    /// Where steps without a recorded observation are observed.
    #[command(flatten)]
    docstore: DocstoreArgs,
    /// The tools that observe recorded tool actions without an observation.
    #[command(flatten)]
    tools: ToolArgs,
}

#[derive(Args)]
struct EvalArgs {
    /// A HotpotQA (official, Hugging Face or ReAct-simplified JSON, or JSON Lines) or FEVER file.
    questions: PathBuf,
    #[command(flatten)]
    run: AgentRunArgs,
    #[command(flatten)]
    selection: SelectionArgs,
    /// Questions in flight at once.
    #[arg(long, default_value_t = 1, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    concurrency: u16,
    /// Every finished run is appended here; running the same command again resumes from it.
    /// Default: `<questions file stem>.results.jsonl` in the current directory.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
    /// Run again the questions whose run ended in an error (the results file drops them first).
    #[arg(long)]
    retry_errors: bool,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Which questions of the file to run: subset, then ids, then limit.
#[derive(Args, Clone)]
struct SelectionArgs {
    /// `paper500`: the 500 dev questions the ReAct paper scores, in its order (needs the full dev file).
    #[arg(long, value_name = "SUBSET")]
    subset: Option<Subset>,
    /// Only the questions whose ids this file lists, one a line.
    #[arg(long, value_name = "FILE")]
    ids: Option<PathBuf>,
    /// At most this many questions.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
}

#[derive(Args)]
struct ExploreArgs {
    /// Actions such as `Search[Colorado orogeny]` `Lookup[New Mexico]`; none: an interactive prompt.
    actions: Vec<String>,
    #[arg(
        long,
        env = "REACT_PROFILE",
        default_value = "default",
        value_name = "PROFILE"
    )]
    profile: Profile,
    #[command(flatten)]
    docstore: DocstoreArgs,
    #[command(flatten)]
    tools: ToolArgs,
    /// Print one `{"action", "observation"}` JSON line per action.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ScoreArgs {
    /// Predictions: the official `{"answer": {id: text}}` JSON, or an `eval` results JSONL.
    predictions: PathBuf,
    /// The gold question file.
    gold: PathBuf,
    /// Print `{"n", "em", "f1", "prec", "recall"}`.
    #[arg(long)]
    json: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Log lines go to stderr, above `eval`'s progress bar while it is drawn.
    let log = LogOutput::stderr();
    // Warnings (a model server being retried) by default; `RUST_LOG=debug` for more.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(log.clone())
        .with_ansi(react_docstore::trace::Color::for_stderr() == react_docstore::trace::Color::Always)
        .without_time()
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return report(&anyhow::Error::new(error).context("cannot start the async runtime")),
    };
    match runtime.block_on(run(cli, log)) {
        Ok(code) => code,
        Err(error) => report(&error),
    }
}

async fn run(cli: Cli, log: LogOutput) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Ask(args) => {
            check_combination(args.run.agent.profile, &args.run.docstore, &args.run.tools, "ask")?;
            let llm = open_model(&args.run.model)?;
            let docstore = open_docstore(&args.run.docstore, args.run.agent.profile)?;
            let toolbox = open_toolbox(&args.run.tools, &args.run.docstore)?;
            let config = AskConfig {
                question: args.question,
                agent: agent_config(&args.run.agent, PromptOptions { today: args.today })?,
                output: if args.json {
                    AskOutput::Run
                } else {
                    AskOutput::Answer
                },
                record: args.record,
            };
            let mut stdout = output::stdout();
            let mut trace = TracePrinter::stderr();
            let run = ask::ask(
                &config,
                &llm,
                docstore.as_ref(),
                &toolbox,
                &mut stdout,
                &mut trace,
            )
            .await?;
            if let Some(error) = &run.error {
                let _ = writeln!(output::stderr(), "error: {error}");
            }
            Ok(ExitCode::from(Outcome::of(&run).exit_code()))
        }
        Command::Chat(args) => {
            check_combination(
                args.run.agent.profile,
                &args.run.docstore,
                &args.run.tools,
                "chat",
            )?;
            let llm = open_model(&args.run.model)?;
            let docstore = open_docstore(&args.run.docstore, args.run.agent.profile)?;
            let toolbox = open_toolbox(&args.run.tools, &args.run.docstore)?;
            let today = args.today.unwrap_or_else(chat::today_utc);
            let config = ChatConfig {
                agent: agent_config(&args.run.agent, PromptOptions { today: Some(today) })?,
                interaction: stdin_interaction(),
                output: if args.json {
                    ChatOutput::Run
                } else {
                    ChatOutput::Answer
                },
            };
            let mut stdin = std::io::stdin().lock();
            let mut stdout = output::stdout();
            let mut trace = TracePrinter::stderr();
            let summary = chat::chat(
                &config,
                &llm,
                docstore.as_ref(),
                &toolbox,
                &mut stdin,
                &mut stdout,
                &mut trace,
            )
            .await?;
            Ok(ExitCode::from(summary.exit_code()))
        }
        Command::Eval(args) => {
            check_tools(args.run.agent.profile, &args.run.tools)?;
            // Registered first: a job scheduler's SIGTERM during start-up is an interrupt too.
            let interrupt = stop_signals()?;
            let results = args
                .out
                .clone()
                .unwrap_or_else(|| default_results_path(&args.questions));
            let config = EvalConfig {
                questions: args.questions,
                selection: Selection {
                    subset: args.selection.subset,
                    ids: args.selection.ids,
                    limit: args.selection.limit,
                },
                contexts: if args.run.docstore.docstore == DocstoreKind::Distractor {
                    Contexts::Required
                } else {
                    Contexts::Unused
                },
                profile: args.run.agent.profile,
                max_steps: args.run.agent.max_steps,
                fewshot: args.run.agent.fewshot,
                concurrency: usize::from(args.concurrency),
                results,
                resume: if args.retry_errors {
                    Resume::RetryErrors
                } else {
                    Resume::SkipDone
                },
                progress: Progress::for_stderr(),
                log,
            };
            let services = EvalServices {
                llm: open_llm(&args.run.model)?,
                docstore: open_docstore(&args.run.docstore, args.run.agent.profile)?,
                toolbox: open_toolbox(&args.run.tools, &args.run.docstore)?,
            };
            let summary = eval::evaluate(&config, &services, interrupt).await?;
            let mut stdout = output::stdout();
            if args.json {
                writeln!(stdout, "{}", serde_json::to_string(&summary)?)?;
            } else {
                summary.write_text(&mut stdout)?;
            }
            Ok(ExitCode::from(summary.exit_code()))
        }
        Command::Explore(args) => {
            check_combination(args.profile, &args.docstore, &args.tools, "explore")?;
            let source = args.docstore.config(args.profile).open()?;
            let mut session = Explore::new(
                source.as_ref(),
                open_toolbox(&args.tools, &args.docstore)?,
                args.profile,
            );
            let format = if args.json { Format::Json } else { Format::Text };
            let mut stdout = output::stdout();
            if args.actions.is_empty() {
                let stdin = tokio::io::BufReader::new(tokio::io::stdin());
                let mut stderr = output::stderr();
                explore::run_interactive(
                    &mut session,
                    stdin,
                    format,
                    &mut stdout,
                    &mut stderr,
                    stdin_interaction(),
                )
                .await?;
            } else {
                explore::run_actions(&mut session, &args.actions, format, &mut stdout).await?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Score(args) => {
            let report = eval::score::score(&args.predictions, &args.gold)?;
            let mut stdout = output::stdout();
            if args.json {
                writeln!(stdout, "{}", serde_json::to_string(&report)?)?;
            } else {
                report.write_text(&mut stdout)?;
            }
            // 1: the predictions answer none of the gold questions.
            Ok(if report.missing == report.scores.n {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            })
        }
        Command::Index(IndexCommand::Build(args)) => {
            let mut config = BuildConfig::new(args.sources, args.out);
            config.format = args.format.0;
            config.memory_bytes = args.memory;
            if let Some(threads) = args.threads {
                config.threads = threads.get();
            }
            if args.strict {
                config.malformed = MalformedRecords::Fail;
            }
            config.progress = BuildProgress::for_stderr();
            // Ctrl-C, SIGTERM or SIGHUP: the build stops and removes what it wrote.
            let signals = stop_signals()?;
            let interrupted = Arc::new(AtomicBool::new(false));
            let flag = interrupted.clone();
            tokio::spawn(async move {
                signals.await;
                flag.store(true, Ordering::Relaxed);
            });
            let report = tokio::task::spawn_blocking(move || index::build(&config, &interrupted)).await??;
            let mut stdout = output::stdout();
            if args.json {
                writeln!(stdout, "{}", serde_json::to_string(&report.manifest)?)?;
            } else {
                report.write_summary(&mut stdout)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Index(IndexCommand::Info(args)) => {
            let info = IndexInfo::read(&args.dir)?;
            let mut stdout = output::stdout();
            if args.json {
                writeln!(stdout, "{}", serde_json::to_string(&info)?)?;
            } else {
                info.write_text(&mut stdout)?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Replay(args) => {
            check_combination(Profile::Default, &args.docstore, &args.tools, "replay")?;
            let config = ReplayConfig {
                paths: args.runs,
                output: if args.json { Output::Json } else { Output::Text },
                profile: args.profile,
                max_steps: args.max_steps,
            };
            // Steps without a recorded observation are observed live, under each run's profile.
            let sources = args.docstore.config(Profile::Default).open_sources()?;
            let toolbox = open_toolbox(&args.tools, &args.docstore)?;
            let live = move |_run: &Run, grammar: &ActionGrammar| -> Option<Box<dyn Environment>> {
                let source = sources.get(grammar.profile());
                Some(Box::new(Workbench::new(
                    source.open(&[]),
                    toolbox.clone(),
                    grammar.clone(),
                )))
            };
            let mut stdout = output::stdout();
            let mut trace = TracePrinter::stderr();
            let summary = replay::replay(&config, &live, &mut stdout, &mut trace).await?;
            Ok(ExitCode::from(summary.exit_code()))
        }
    }
}

fn open_model(args: &ModelArgs) -> anyhow::Result<OpenAiClient> {
    let settings = ModelSettings {
        model: args.model.clone(),
        base_url: args.base_url.clone(),
        api_key: args.api_key.clone().map(ApiKey::new),
        api: args.api,
        temperature: Some(args.temperature),
        max_tokens: Some(args.max_tokens),
        options: args.llm_options.clone(),
        timeout: Some(Duration::from_secs(args.llm_timeout)),
    };
    Ok(OpenAiClient::from_settings(settings)?)
}

fn agent_config(args: &AgentArgs, prompt_options: PromptOptions) -> anyhow::Result<AgentConfig> {
    let fewshot = match &args.fewshot {
        Some(path) => Fewshot::from_file(path)?,
        None => Fewshot::hotpotqa(),
    };
    Ok(AgentConfig {
        profile: args.profile,
        max_steps: args.max_steps,
        fewshot,
        prompt_options,
    })
}

/// The docstore Search and Lookup read from: one explorer per question over a shared source.
fn open_docstore(args: &DocstoreArgs, profile: Profile) -> anyhow::Result<Arc<dyn DocstoreSource>> {
    Ok(args.config(profile).open()?)
}

/// Options that cannot work together, refused before anything runs.
fn check_combination(
    profile: Profile,
    docstore: &DocstoreArgs,
    tools: &ToolArgs,
    command: &str,
) -> anyhow::Result<()> {
    check_tools(profile, tools)?;
    if docstore.docstore == DocstoreKind::Distractor {
        anyhow::bail!(
            "`--docstore distractor` searches each question's own paragraphs, which only `eval` has (a HotpotQA file with contexts); `{command}` can search Wikipedia or `--docstore corpus:FILE`"
        );
    }
    Ok(())
}

/// The `paper` profile is the ReAct repository's agent, which knows no extra tools.
fn check_tools(profile: Profile, tools: &ToolArgs) -> anyhow::Result<()> {
    if profile == Profile::Paper && !(tools.tools.is_empty() && tools.commands.is_empty()) {
        anyhow::bail!(
            "the `paper` profile reproduces the ReAct repository, which has no extra tools: drop `--tools`/`--tool` or use `--profile default`"
        );
    }
    Ok(())
}

/// The extra tools the command line asks for. WebSearch answers are cached next to the pages.
fn open_toolbox(args: &ToolArgs, docstore: &DocstoreArgs) -> anyhow::Result<Toolbox> {
    let config = ToolsConfig {
        builtin: args.tools.clone(),
        commands: args.commands.clone(),
        websearch: WebSearchConfig {
            search_url: args.search_url.clone(),
            api_key: args.serpapi_key.clone().map(tools::ApiKey::new),
            cache_dir: docstore.cache_dir.clone(),
            network: if docstore.offline {
                Network::Offline
            } else {
                Network::Online
            },
            ..WebSearchConfig::default()
        },
    };
    Ok(config.open_toolbox()?)
}

/// Resolves on the first Ctrl-C (SIGINT), SIGTERM (a job scheduler stopping the run) or SIGHUP
/// (the terminal closed). The handlers are installed now, before the returned future is polled.
#[cfg(unix)]
fn stop_signals() -> anyhow::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let watch = |kind: SignalKind| signal(kind).context("cannot watch for stop signals");
    let mut interrupt = watch(SignalKind::interrupt())?;
    let mut terminate = watch(SignalKind::terminate())?;
    let mut hangup = watch(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
            _ = hangup.recv() => {}
        }
    })
}

/// Resolves on Ctrl-C; never, when it cannot be watched.
#[cfg(not(unix))]
fn stop_signals() -> anyhow::Result<impl Future<Output = ()>> {
    Ok(async {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    })
}

/// `dev.json` → `dev.results.jsonl` in the current directory.
fn default_results_path(questions: &std::path::Path) -> PathBuf {
    let stem = questions
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "questions".to_owned());
    PathBuf::from(format!("{stem}.results.jsonl"))
}

/// The model `eval` shares across its concurrent questions.
fn open_llm(args: &ModelArgs) -> anyhow::Result<Arc<dyn Llm>> {
    Ok(Arc::new(open_model(args)?))
}

/// Whether a person types on stdin.
fn stdin_interaction() -> Interaction {
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

fn report(error: &anyhow::Error) -> ExitCode {
    let _ = writeln!(output::stderr(), "error: {error:#}");
    ExitCode::from(2)
}
