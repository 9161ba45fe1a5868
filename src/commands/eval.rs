//! `eval`: a question file run concurrently, resumable from its results file; the summary on stdout.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use react_docstore::docstore::DocstoreKind;
use react_docstore::eval::{self, Contexts, EvalConfig, EvalServices, Progress, Resume, Selection, Subset};
use react_docstore::output;
use react_docstore::report;
use react_docstore::trace::LogOutput;

use super::options::{AgentRunArgs, FewshotFromArgs};
use super::signals::stop_signals;

#[derive(clap::Args)]
pub struct EvalArgs {
    /// A HotpotQA (official, Hugging Face or ReAct-simplified JSON, or JSON Lines) or FEVER file.
    questions: PathBuf,
    #[command(flatten)]
    run: AgentRunArgs,
    #[command(flatten)]
    fewshot_from: FewshotFromArgs,
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
#[derive(clap::Args, Clone)]
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

pub async fn run(args: EvalArgs, log: LogOutput) -> anyhow::Result<ExitCode> {
    args.run.check_profile()?;
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
        method: args.run.agent.method_config(),
        max_steps: args.run.agent.max_steps,
        fewshot: args.run.agent.fewshot,
        fewshot_from: args.fewshot_from.open()?,
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
    // The inputs before the model: a missing or mistyped question file is named first.
    eval::QuestionFile::check_readable(&config.questions)?;
    let services = EvalServices {
        llm: args.run.model.open_shared()?,
        docstore: args.run.docstore.open(args.run.agent.profile)?,
        toolbox: args.run.tools.open(&args.run.docstore)?,
    };
    let summary = eval::evaluate(&config, &services, interrupt).await?;
    let mut stdout = output::stdout();
    if args.json {
        writeln!(stdout, "{}", serde_json::to_string(&summary)?)?;
    } else {
        summary.write_text(&mut stdout)?;
        writeln!(
            stdout,
            "report         {}",
            report::report_command(&summary.results)
        )?;
    }
    Ok(ExitCode::from(summary.exit_code()))
}

/// `dev.json` → `dev.results.jsonl` in the current directory.
fn default_results_path(questions: &Path) -> PathBuf {
    let stem = questions
        .file_stem()
        .map(|stem| stem.to_string_lossy().into_owned())
        .unwrap_or_else(|| "questions".to_owned());
    PathBuf::from(format!("{stem}.results.jsonl"))
}
