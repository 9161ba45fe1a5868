//! `--fewshot-from`: few-shot examples drawn from your own right runs — K trajectories chosen
//! once by a seed, rendered in the method's few-shot format (the bytes each run's model wrote, as
//! `export` rebuilds them), never a question of the evaluation being run, written to a file beside
//! the results that every run names with its digest.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::export::{Excluded, Keep, digest, is_kept, question_key, rebuild};
use crate::fewshot::{Bundled, Fewshot, FewshotError, Format, without_thoughts};
use crate::fsutil::atomic_write;
use crate::method::Method;
use crate::profile::Profile;
use crate::run::{FewshotSource, Run};

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
        task: Bundled,
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
        let mut given = HashSet::new();
        let mut candidates: Vec<(u64, String)> = Vec::new();
        for run in &self.runs {
            let key = question_key(run);
            if excluded.contains(run) || given.contains(&key) {
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
            if let Some(text) = text {
                candidates.push((xxh3_64_with_seed(key.as_bytes(), self.seed), text));
                given.insert(key);
            }
        }
        if candidates.len() < self.shots {
            return Err(FewshotFromError::TooFew {
                results: self.results.clone(),
                format,
                found: candidates.len(),
                shots: self.shots,
            });
        }
        candidates.sort();
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
        for (_, example) in candidates.iter().take(self.shots) {
            text.push_str(example);
        }
        let path = FewshotFrom::examples_path(beside);
        if other == OtherExamples::Refuse && std::fs::read(&path).is_ok_and(|found| found != text.as_bytes())
        {
            return Err(FewshotFromError::OtherExamples { path });
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
}
