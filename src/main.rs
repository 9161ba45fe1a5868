//! The `react-docstore` binary: parses the command line and hands over to the library.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use react_docstore::docstore::{DEFAULT_USER_AGENT, DocstoreConfig, DocstoreKind};
use react_docstore::environment::{Environment, Workbench};
use react_docstore::explore::{self, Explore, Format};
use react_docstore::replay::{self, Output, ReplayConfig};
use react_docstore::tool::Toolbox;
use react_docstore::trace::TracePrinter;
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
    /// The step budget of a question.
    #[arg(long, default_value_t = react_docstore::agent::DEFAULT_MAX_STEPS, value_name = "N")]
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
}

/// Where Search and Lookup read from.
#[derive(Args, Clone)]
struct DocstoreArgs {
    /// `wikipedia`, `distractor` (each question's own paragraphs) or `corpus:FILE`.
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
    /// Never touch the network: serve from the cache, and fail on a miss.
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
    tools: Vec<String>,
}

impl ToolArgs {
    /// The registered tools. No built-in tool exists yet: naming one is an error.
    fn toolbox(&self) -> anyhow::Result<Toolbox> {
        match self.tools.first() {
            Some(name) => anyhow::bail!("unknown tool `{name}`"),
            None => Ok(Toolbox::default()),
        }
    }
}

#[derive(Args)]
struct AskArgs {
    question: String,
    #[command(flatten)]
    agent: AgentArgs,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    docstore: DocstoreArgs,
    #[command(flatten)]
    tools: ToolArgs,
    /// Print the run as JSON on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
struct ChatArgs {
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
struct ReplayArgs {
    /// Run files, or directories whose `*.json` files are replayed in name order.
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
}

#[derive(Args)]
struct EvalArgs {
    /// A HotpotQA (official, Hugging Face or ReAct-simplified JSON, or JSON Lines) or FEVER file.
    questions: PathBuf,
    #[command(flatten)]
    agent: AgentArgs,
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    docstore: DocstoreArgs,
    #[command(flatten)]
    tools: ToolArgs,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
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
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return report(&anyhow::Error::new(error).context("cannot start the async runtime")),
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(error) => report(&error),
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Ask(_) => anyhow::bail!("`ask` is not built yet"),
        Command::Chat(_) => anyhow::bail!("`chat` is not built yet"),
        Command::Eval(_) => anyhow::bail!("`eval` is not built yet"),
        Command::Explore(args) => {
            let source = args.docstore.config(args.profile).open()?;
            let mut session = Explore::new(source.as_ref(), args.tools.toolbox()?, args.profile);
            let format = if args.json { Format::Json } else { Format::Text };
            let mut stdout = std::io::stdout().lock();
            if args.actions.is_empty() {
                let stdin = tokio::io::BufReader::new(tokio::io::stdin());
                let prompt = std::io::stdin().is_terminal();
                let mut stderr = std::io::stderr();
                explore::run_interactive(&mut session, stdin, format, &mut stdout, &mut stderr, prompt)
                    .await?;
            } else {
                explore::run_actions(&mut session, &args.actions, format, &mut stdout).await?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Score(_) => anyhow::bail!("`score` is not built yet"),
        Command::Replay(args) => {
            let config = ReplayConfig {
                paths: args.runs,
                output: if args.json { Output::Json } else { Output::Text },
                profile: args.profile,
                max_steps: args.max_steps,
            };
            // Steps without a recorded observation are observed live, under each run's profile.
            let sources = args.docstore.config(Profile::Default).open_sources()?;
            let live = move |_run: &Run, grammar: &ActionGrammar| -> Option<Box<dyn Environment>> {
                let source = sources.get(grammar.profile());
                Some(Box::new(Workbench::new(
                    source.open(&[]),
                    Toolbox::default(),
                    grammar.clone(),
                )))
            };
            let mut stdout = std::io::stdout().lock();
            let mut trace = TracePrinter::stderr();
            let summary = replay::replay(&config, &live, &mut stdout, &mut trace).await?;
            Ok(if summary.n_answered > 0 {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}

fn report(error: &anyhow::Error) -> ExitCode {
    eprintln!("error: {error:#}");
    ExitCode::from(2)
}
