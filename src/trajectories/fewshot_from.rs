//! `--fewshot-from`: few-shot examples drawn from your own right runs — K trajectories chosen
//! once by a seed, rendered in the method's few-shot format (the bytes each run's model wrote, as
//! `export` rebuilds them), never a question of the evaluation being run, written to a file beside
//! the results that every run names with its digest.

use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::agent::fewshot::{Fewshot, FewshotError, Format, without_thoughts};
use crate::base::digest::digest;
use crate::base::fsutil::atomic_write;
use crate::base::method::Method;
use crate::base::profile::Profile;
use crate::base::task::Task;
use crate::record::run::{Attempt, FewshotSource, Run};
use crate::trajectories::rebuild::rebuild;
use crate::trajectories::{Excluded, Keep, is_kept, question_key};

/// Where to draw examples from, and how many.
#[derive(Debug, Clone)]
pub struct FewshotFrom {
    /// The results file the runs were read from.
    pub results: PathBuf,
    pub runs: Vec<Run>,
    /// K: examples in the prompt.
    pub shots: usize,
    pub seed: u64,
}

/// What drawing does when the examples file beside the results already holds other examples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtherExamples {
    /// Replace it (`ask`: its run file is replaced too).
    Replace,
    /// Refuse (`eval`: the runs of the results file it resumes were made with those examples).
    Refuse,
}

/// Examples drawn: the few-shot examples (named by the file they were written to) and what each
/// run records of them.
#[derive(Debug, Clone)]
pub struct Drawn {
    pub fewshot: Fewshot,
    pub source: FewshotSource,
}

#[derive(Debug, thiserror::Error)]
pub enum FewshotFromError {
    #[error(
        "`--fewshot-from` gives one set of examples; `--method {method}` runs two phases: use `react`, `act`, `cot`, `cot-sc` or `standard`"
    )]
    TwoPhases { method: Method },
    #[error(
        "`{}` holds {found} right runs in the {format} format on questions this run does not ask, fewer than `--shots {shots}`",
        results.display()
    )]
    TooFew {
        results: PathBuf,
        format: Format,
        found: usize,
        shots: usize,
    },
    #[error(
        "`{}` holds other examples than this draw, which the runs of the results file beside it were made with: an evaluation never mixes prompts — pass another `--out`, or the same `--fewshot-from`, `--shots` and `--seed`",
        path.display()
    )]
    OtherExamples { path: PathBuf },
    #[error(
        "`{}` holds the examples the runs of the results file beside it were made with, and {questions} drawn there {verb} now a question of this evaluation, which no example may be, so the draw changed: evaluate the questions those runs were made with (the same selection, e.g. `--limit`), or pass another `--out` to start an evaluation with a new draw",
        path.display()
    )]
    DrawnNowAsked {
        path: PathBuf,
        /// The questions, by id (or text) and position in this evaluation's selection.
        questions: String,
        verb: &'static str,
    },
    #[error("`--shots` must be at least 1")]
    NoShots,
    #[error("cannot write the drawn examples to `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Fewshot(#[from] FewshotError),
}

impl FewshotFrom {
    /// The file the examples drawn for a results (or run) file are written to, beside it:
    /// `dev.results.jsonl` → `dev.results.fewshot.txt`.
    pub fn examples_path(beside: &Path) -> PathBuf {
        let stem = beside
            .file_stem()
            .map_or_else(|| "run".to_owned(), |stem| stem.to_string_lossy().into_owned());
        beside.with_file_name(format!("{stem}.fewshot.txt"))
    }

    /// Draws K examples for `method` (its few-shot format) from the right runs that ended with an
    /// answer, one per question, none of `excluded`; the choice is `seed`'s alone (the K
    /// questions whose seeded hash is smallest), so the same seed draws the same examples
    /// whatever the order of the file. Writes them beside `beside` (unless other examples are
    /// there and `other` refuses them) and reads them back as the examples every question's
    /// prompt shows.
    pub async fn draw(
        &self,
        method: Method,
        task: Task,
        profile: Profile,
        excluded: &Excluded,
        beside: &Path,
        other: OtherExamples,
    ) -> Result<Drawn, FewshotFromError> {
        let format = match method {
            Method::React => Format::React,
            Method::Act => Format::Act,
            Method::Cot | Method::CotSc => Format::Cot,
            Method::Standard => Format::Standard,
            Method::ReactThenCotSc | Method::CotScThenReact => {
                return Err(FewshotFromError::TwoPhases { method });
            }
        };
        if self.shots == 0 {
            return Err(FewshotFromError::NoShots);
        }
        let mut candidates = self.candidates(format, |run| !excluded.contains(run)).await;
        if candidates.len() < self.shots {
            return Err(FewshotFromError::TooFew {
                results: self.results.clone(),
                format,
                found: candidates.len(),
                shots: self.shots,
            });
        }
        candidates.sort_by(|a, b| (a.hash, &a.text).cmp(&(b.hash, &b.text)));
        // The bundled examples' preamble (FEVER's instruction line), then the drawn ones.
        let bundled = Fewshot::bundled(task, format, profile);
        let label = format!("{}:", bundled.input_label);
        let preamble_len = bundled
            .examples
            .split_inclusive('\n')
            .take_while(|line| !line.starts_with(&label))
            .map(str::len)
            .sum::<usize>();
        let mut text = bundled.examples[..preamble_len].to_owned();
        for candidate in candidates.iter().take(self.shots) {
            text.push_str(&candidate.text);
        }
        let path = FewshotFrom::examples_path(beside);
        if other == OtherExamples::Refuse
            && let Ok(found) = std::fs::read(&path)
            && found != text.as_bytes()
        {
            return Err(self.why_other(format, excluded, path, &found).await);
        }
        atomic_write(&path, text.as_bytes()).map_err(|source| FewshotFromError::Write {
            path: path.clone(),
            source,
        })?;
        let fewshot = Fewshot::from_file(&path)?;
        Ok(Drawn {
            fewshot,
            source: FewshotSource {
                results: self.results.display().to_string(),
                shots: self.shots,
                seed: self.seed,
                digest: digest(text.as_bytes()),
            },
        })
    }

    /// The trajectories in `format` of the right runs that ended with an answer, for the
    /// questions `asked` takes, one per question: its first attempt (trial, epoch) that gives
    /// one, and of two runs of that attempt the smaller text — whatever the order of the file.
    async fn candidates(&self, format: Format, asked: impl Fn(&Run) -> bool) -> Vec<Candidate<'_>> {
        let mut runs: Vec<(String, Attempt, &Run)> = self
            .runs
            .iter()
            .filter(|run| asked(run))
            .map(|run| (question_key(run), run.attempt(), run))
            .collect();
        runs.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut candidates: Vec<Candidate> = Vec::new();
        // The question given last and the attempt that gave it.
        let mut given: Option<(&str, Attempt)> = None;
        for (key, attempt, run) in &runs {
            if let Some((given_key, given_attempt)) = given
                && given_key == key
                && given_attempt < *attempt
            {
                continue;
            }
            // A run that does not rebuild cannot give its exact text: it is no candidate.
            let Ok(examples) = rebuild(run).await else {
                continue;
            };
            let text = examples
                .iter()
                .filter(|example| example.finished && is_kept(Keep::Right, example))
                .find_map(|example| match (example.format, format) {
                    (found, wanted) if found == wanted => Some(example.trajectory()),
                    (Format::React, Format::Act) => Some(without_thoughts(&example.trajectory())),
                    _ => None,
                });
            let Some(text) = text else {
                continue;
            };
            match candidates.last_mut() {
                Some(last) if given.is_some_and(|(given_key, _)| given_key == key) => {
                    if text < last.text {
                        last.text = text;
                    }
                }
                _ => candidates.push(Candidate {
                    hash: xxh3_64_with_seed(key.as_bytes(), self.seed),
                    run,
                    text,
                }),
            }
            given = Some((key, *attempt));
        }
        candidates
    }

    /// Why the examples beside the results (`found`) are not this draw: one of them is a
    /// question the evaluation now asks (it asks more questions than when they were drawn), or
    /// another source, `--shots` or `--seed`.
    async fn why_other(
        &self,
        format: Format,
        excluded: &Excluded,
        path: PathBuf,
        found: &[u8],
    ) -> FewshotFromError {
        let found = String::from_utf8_lossy(found);
        let asked: Vec<Candidate> = self
            .candidates(format, |run| excluded.contains(run))
            .await
            .into_iter()
            .filter(|candidate| found.contains(&candidate.text))
            .collect();
        if asked.is_empty() {
            return FewshotFromError::OtherExamples { path };
        }
        let questions: Vec<String> = asked
            .iter()
            .map(|candidate| {
                let run = candidate.run;
                let question = run.id.as_deref().unwrap_or(&run.question);
                match excluded.position_of(run) {
                    Some(position) => format!("`{question}` (position {position})"),
                    None => format!("`{question}`"),
                }
            })
            .collect();
        FewshotFromError::DrawnNowAsked {
            path,
            verb: if questions.len() == 1 { "is" } else { "are" },
            questions: questions.join(", "),
        }
    }
}

/// A right run's trajectory that may be drawn, and its question's seeded hash.
struct Candidate<'a> {
    hash: u64,
    run: &'a Run,
    text: String,
}
