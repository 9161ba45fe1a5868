//! `EvalSettings`: what makes runs one evaluation — every setting that changes answers, written
//! on every results line `eval` appends — and `compare`, the one comparison that `eval`'s resume,
//! `merge`, `score`, `compare`, `report`, `export` and `--fewshot-from` make of two runs.
//!
//! Settings that do not change answers (`--concurrency`, timeouts, `--base-url`, the key, `--out`)
//! are not part of it. An unsharded evaluation's selection (`--subset`, `--ids`, `--limit`) may be
//! widened on resume; a shard's is part of the comparison, so the shards `merge` joins are of one
//! selection. Lines written before results recorded their settings are compared on what they do
//! record (model, API, profile, method, few-shot names, step budget, tools, attempt kind,
//! strategy, docstore); the rest is unknown, which [`SettingsComparison::unknown`] reports.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::base::method::{Method, Reflect, ScStop};
use crate::base::profile::Profile;
use crate::docstore::DocstoreInfo;
use crate::llm::{Generation, openai::Api};
use crate::record::run::{Attempt, Run};

/// The settings of the evaluation a results line belongs to, as `eval` wrote them beside the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvalSettings {
    pub model: String,
    /// `None`: a model that is not an OpenAI-compatible server's (a recording, a test's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
    pub profile: Profile,
    pub method: Method,
    /// CoT-SC's N and temperature: `None` for methods that do not sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
    /// What the requests carry besides the prompt; `None` for a model that is not a server's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<Generation>,
    /// The step budget of a method that acts; `None` for CoT, Standard and CoT-SC.
    #[serde(
        default,
        deserialize_with = "crate::base::limits::steps",
        skip_serializing_if = "Option::is_none"
    )]
    pub max_steps: Option<usize>,
    /// The digest of each phase's prompt before the question: the instruction, the few-shot
    /// examples (bundled, `--fewshot` files or drawn by `--fewshot-from`) and the tools' lines.
    pub prompts: Vec<String>,
    pub tools: Vec<String>,
    pub attempts: AttemptsRecord,
    pub docstore: DocstoreInfo,
    /// The question file's digest (`sha256:` of its bytes).
    pub questions: String,
    pub selection: SelectionRecord,
}

/// CoT-SC's sampling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    #[serde(deserialize_with = "crate::base::limits::samples")]
    pub samples: usize,
    pub temperature: f64,
    /// The stopping rule (`--sc-stop`); absent: all N asked (and lines written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<ScStop>,
}

/// How a method's sampling stops, as messages show it: `none` for a method that samples
/// nothing, else the rule or `all N`.
fn stop_text(samples: bool, stop: Option<&ScStop>) -> String {
    match (samples, stop) {
        (false, _) => "none".to_owned(),
        (true, Some(stop)) => format!("`--sc-stop {stop}`"),
        (true, None) => "all N".to_owned(),
    }
}

/// How many attempts each question gets, and of which kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum AttemptsRecord {
    Once,
    Trials {
        #[serde(deserialize_with = "crate::base::limits::attempts")]
        count: u32,
        reflect: Reflect,
    },
    Epochs {
        #[serde(deserialize_with = "crate::base::limits::attempts")]
        count: u32,
    },
}

/// Which questions of the file the evaluation asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SelectionRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subset: Option<String>,
    /// The digest of the `--ids` file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// With `--shard`: how many shards, and how many questions the whole selection held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<ShardSplit>,
}

/// A sharded selection's split (the shard's own index is each line's `shard` record).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardSplit {
    pub count: u32,
    pub selected: usize,
}

impl fmt::Display for AttemptsRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttemptsRecord::Once => f.write_str("one attempt a question"),
            AttemptsRecord::Trials { count, reflect } => write!(f, "{count} trials, `--reflect {reflect}`"),
            AttemptsRecord::Epochs { count } => write!(f, "{count} epochs"),
        }
    }
}

impl fmt::Display for SelectionRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(subset) = &self.subset {
            parts.push(format!("--subset {subset}"));
        }
        if let Some(ids) = &self.ids {
            parts.push(format!("--ids {}", short_digest(ids)));
        }
        if let Some(limit) = self.limit {
            parts.push(format!("--limit {limit}"));
        }
        if parts.is_empty() {
            parts.push("every question".to_owned());
        }
        if let Some(split) = self.shards {
            parts.push(format!(
                "in {} shards of {} questions",
                split.count, split.selected
            ));
        }
        f.write_str(&parts.join(" "))
    }
}

/// A digest as messages show it: its first 12 hex digits.
fn short_digest(digest: &str) -> &str {
    let end = digest
        .char_indices()
        .nth("sha256:".len() + 12)
        .map_or(digest.len(), |(cut, _)| cut);
    &digest[..end]
}

pub use crate::base::digest::{digest, file_digest};

/// One setting of a run as the comparison sees it.
#[derive(Debug, Clone, PartialEq)]
enum Setting {
    /// Recorded (or derived from what every line records), as messages show it.
    Known(String),
    /// Derived from an older line in a form only other older lines share (a few-shot file's
    /// name, not its digest): compared with those alone.
    Named(String),
    /// Not recorded by the line's version.
    Unknown,
}

fn known(text: impl Into<String>) -> Setting {
    Setting::Known(text.into())
}

/// `none`, or the value as `show` writes it.
fn or_none<T>(value: Option<T>, show: impl FnOnce(T) -> String) -> String {
    value.map_or_else(|| "none".to_owned(), show)
}

/// One setting compared: its name, the flags that set it, and how its value is read now (from
/// an `evaluation` record) and from an older run (a line written before that record: `sharded`
/// says whether it has a shard record).
struct Row {
    name: &'static str,
    flag: &'static str,
    now: fn(&EvalSettings) -> Setting,
    older: fn(&Run, bool) -> Setting,
}

/// The name of the selection's row: compared only when both runs are sharded.
const SELECTION: &str = "selection";

/// The settings compared, in the order a difference is reported.
const ROWS: [Row; 17] = [
    Row {
        name: "model",
        flag: "--model",
        now: |s| known(format!("`{}`", s.model)),
        older: |run, _| {
            run.model
                .as_ref()
                .map_or(Setting::Unknown, |model| known(format!("`{model}`")))
        },
    },
    Row {
        name: "API",
        flag: "--api",
        now: |s| known(or_none(s.api, |api| format!("`{}`", api.as_str()))),
        older: |run, _| {
            run.api
                .map_or(Setting::Unknown, |api| known(format!("`{}`", api.as_str())))
        },
    },
    Row {
        name: "profile",
        flag: "--profile",
        now: |s| known(format!("`{}`", s.profile)),
        older: |run, _| known(format!("`{}`", run.profile)),
    },
    Row {
        name: "method",
        flag: "--method",
        now: |s| known(format!("`{}`", s.method)),
        older: |run, _| known(format!("`{}`", run.method())),
    },
    Row {
        name: "samples and sample temperature",
        flag: "--samples/--sample-temperature",
        now: |s| {
            known(or_none(s.sampling, |sampling| {
                format!("N = {}, T = {}", sampling.samples, sampling.temperature)
            }))
        },
        older: |run, _| match (run.method().samples(), &run.vote) {
            (false, _) => known("none"),
            (true, Some(vote)) => {
                let samples = run.sc_stop.map_or(vote.samples, |record| record.samples);
                known(format!("N = {samples}, T = {}", vote.temperature))
            }
            (true, None) => Setting::Unknown,
        },
    },
    Row {
        name: "stopping rule",
        flag: "--sc-stop/--sc-batch/--sc-confidence",
        now: |s| {
            known(stop_text(
                s.sampling.is_some(),
                s.sampling.as_ref().and_then(|sampling| sampling.stop.as_ref()),
            ))
        },
        older: |run, _| {
            known(stop_text(
                run.method().samples(),
                run.sc_stop.as_ref().map(|record| &record.stop),
            ))
        },
    },
    Row {
        name: "temperature",
        flag: "--temperature",
        now: |s| {
            known(or_none(s.generation.as_ref(), |generation| {
                generation.temperature.to_string()
            }))
        },
        older: |_, _| Setting::Unknown,
    },
    Row {
        name: "max tokens",
        flag: "--max-tokens",
        now: |s| {
            known(or_none(
                s.generation.as_ref().and_then(|generation| generation.max_tokens),
                |max_tokens| max_tokens.to_string(),
            ))
        },
        older: |_, _| Setting::Unknown,
    },
    Row {
        name: "model options",
        flag: "--llm-option",
        now: |s| {
            known(match &s.generation {
                Some(generation) if !generation.options.is_empty() => {
                    // serde_json's maps are sorted by key: one text for one set of options
                    Value::Object(generation.options.clone()).to_string()
                }
                _ => "none".to_owned(),
            })
        },
        older: |_, _| Setting::Unknown,
    },
    Row {
        name: "step budget",
        flag: "--max-steps",
        now: |s| known(or_none(s.max_steps, |max_steps| max_steps.to_string())),
        older: |run, _| match (run.method().acts(), run.max_steps) {
            (false, _) => known("none"),
            (true, Some(max_steps)) => known(max_steps.to_string()),
            (true, None) => Setting::Unknown,
        },
    },
    Row {
        name: "few-shot examples",
        flag: "--fewshot/--fewshot-from",
        now: |s| {
            known(
                s.prompts
                    .iter()
                    .map(|digest| format!("prompt {}", short_digest(digest)))
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        },
        older: |run, _| match &run.fewshot_from {
            Some(source) => Setting::Named(format!("drawn, digest {}", short_digest(&source.digest))),
            None => Setting::Named(
                [run.fewshot.as_deref(), run.cot_fewshot.as_deref()]
                    .into_iter()
                    .flatten()
                    .map(|name| format!("`{name}`"))
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        },
    },
    Row {
        name: "tools",
        flag: "--tools/--tool",
        now: |s| known(tools_text(&s.tools)),
        older: |run, _| Setting::Named(tools_text(&run.tools)),
    },
    Row {
        name: "attempts",
        flag: "--trials/--epochs/--reflect",
        now: |s| known(s.attempts.to_string()),
        older: |run, _| match run.attempt() {
            Attempt::Only => known(AttemptsRecord::Once.to_string()),
            _ => Setting::Unknown,
        },
    },
    Row {
        name: "docstore",
        flag: "--docstore",
        now: |s| known(s.docstore.to_string()),
        older: |run, _| {
            run.docstore
                .as_ref()
                .map_or(Setting::Unknown, |docstore| known(docstore.to_string()))
        },
    },
    Row {
        name: "question file",
        flag: "QUESTIONS",
        now: |s| known(format!("digest {}", short_digest(&s.questions))),
        older: |_, _| Setting::Unknown,
    },
    Row {
        name: SELECTION,
        flag: "--subset/--ids/--limit/--shard",
        now: |s| known(s.selection.to_string()),
        older: |_, _| Setting::Unknown,
    },
    Row {
        name: "shard",
        flag: "--shard",
        now: |s| {
            known(if s.selection.shards.is_some() {
                "sharded"
            } else {
                "unsharded"
            })
        },
        older: |_, sharded| known(if sharded { "sharded" } else { "unsharded" }),
    },
];

/// A run's settings as the comparison sees them: one value a row of [`ROWS`], by the row's name.
#[derive(Debug, Clone, PartialEq)]
pub struct SettingRows {
    values: Vec<(&'static str, Setting)>,
    sharded: bool,
}

impl SettingRows {
    /// The settings a results line records: its `evaluation` record when it has one, else what
    /// older lines record. A line whose own fields (`model`, `api`, `profile`, `method`, its
    /// attempt, `reflect`, `docstore`) disagree with its `evaluation` record is refused, named by
    /// `source`: which of the two is the evaluation's cannot be told.
    pub fn of_run(run: &Run, source: SettingsSource) -> Result<SettingRows, Box<LineContradiction>> {
        let sharded = run.shard.is_some();
        match &run.evaluation {
            Some(settings) => match contradiction(run, settings) {
                Some((field, own, recorded)) => Err(Box::new(LineContradiction {
                    line: source,
                    field,
                    own,
                    recorded,
                })),
                None => Ok(SettingRows::of_settings(settings, sharded)),
            },
            None => Ok(SettingRows {
                values: ROWS
                    .iter()
                    .map(|row| (row.name, (row.older)(run, sharded)))
                    .collect(),
                sharded,
            }),
        }
    }

    /// The settings of an evaluation about to run.
    pub fn of_settings(settings: &EvalSettings, sharded: bool) -> SettingRows {
        SettingRows {
            values: ROWS.iter().map(|row| (row.name, (row.now)(settings))).collect(),
            sharded,
        }
    }

    /// The value of the row named `name`: [`Setting::Unknown`] when this side has no such row.
    fn value(&self, name: &str) -> &Setting {
        self.values
            .iter()
            .find(|(row, _)| *row == name)
            .map_or(&Setting::Unknown, |(_, value)| value)
    }

    /// The first setting in which `self` and `other` differ, and which rows one of them does
    /// not record (not compared): every row of [`ROWS`], by name, so a row either side lacks is
    /// unknown, never skipped.
    pub fn compare(&self, other: &SettingRows) -> SettingsComparison {
        let mut comparison = SettingsComparison::default();
        for row in &ROWS {
            if row.name == SELECTION && !(self.sharded && other.sharded) {
                // An unsharded evaluation may be widened; sharded beside unsharded is the
                // `shard` row's difference.
                continue;
            }
            let differs = match (self.value(row.name), other.value(row.name)) {
                (Setting::Known(mine), Setting::Known(theirs))
                | (Setting::Named(mine), Setting::Named(theirs)) => {
                    (mine != theirs).then(|| (mine.clone(), theirs.clone()))
                }
                _ => {
                    comparison.unknown.push(row.name);
                    None
                }
            };
            if let Some((mine, theirs)) = differs
                && comparison.difference.is_none()
            {
                comparison.difference = Some(SettingDifference {
                    field: row.name,
                    flag: row.flag,
                    first: mine,
                    second: theirs,
                });
            }
        }
        comparison
    }
}

fn tools_text(tools: &[String]) -> String {
    if tools.is_empty() {
        "none".to_owned()
    } else {
        tools.join(", ")
    }
}

/// What [`SettingRows::compare`] found.
#[derive(Debug, Default)]
pub struct SettingsComparison {
    /// The first field that differs.
    pub difference: Option<SettingDifference>,
    /// Rows one side does not record (an older line), in [`ROWS`] order.
    pub unknown: Vec<&'static str>,
}

/// One setting that differs: its name, the flags that set it, and both values as messages show them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingDifference {
    pub field: &'static str,
    pub flag: &'static str,
    pub first: String,
    pub second: String,
}

/// Where a compared run came from: a results file's line, or the command about to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsSource {
    Line { file: std::path::PathBuf, line: usize },
    ThisCommand,
}

impl fmt::Display for SettingsSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SettingsSource::Line { file, line } => write!(f, "`{}` line {line}", file.display()),
            SettingsSource::ThisCommand => f.write_str("this command"),
        }
    }
}

/// A results line whose own fields say another evaluation than its `evaluation` record does.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{line} contradicts itself: its `{field}` is {own}, its `evaluation` record says {recorded}; the line was changed after `eval` wrote it — restore it, or take it out of the file"
)]
pub struct LineContradiction {
    pub line: SettingsSource,
    /// The line's field, as the file spells it.
    pub field: &'static str,
    pub own: String,
    pub recorded: String,
}

/// The first field of `run` that disagrees with `settings`, the evaluation it says it belongs to:
/// the field, its value and the record's.
fn contradiction(run: &Run, settings: &EvalSettings) -> Option<(&'static str, String, String)> {
    let quoted = |text: &str| format!("`{text}`");
    let model = run.model.as_deref().map(quoted);
    let api = run.api.map(|api| quoted(api.as_str()));
    let attempt_fits = match (run.attempt(), settings.attempts) {
        (Attempt::Only, AttemptsRecord::Once) => true,
        (Attempt::Trial(k), AttemptsRecord::Trials { count, .. })
        | (Attempt::Epoch(k), AttemptsRecord::Epochs { count }) => (1..=count).contains(&k),
        _ => false,
    };
    let record_reflect = match settings.attempts {
        AttemptsRecord::Trials { reflect, .. } => Some(reflect),
        AttemptsRecord::Once | AttemptsRecord::Epochs { .. } => None,
    };
    let checks = [
        (
            "model",
            model.clone().unwrap_or_else(|| "absent".to_owned()),
            quoted(&settings.model),
            model.is_none_or(|model| model == quoted(&settings.model)),
        ),
        (
            "api",
            api.clone().unwrap_or_else(|| "absent".to_owned()),
            settings
                .api
                .map_or_else(|| "none".to_owned(), |api| quoted(api.as_str())),
            run.api.is_none() || run.api == settings.api,
        ),
        (
            "profile",
            quoted(&run.profile.to_string()),
            quoted(&settings.profile.to_string()),
            run.profile == settings.profile,
        ),
        (
            "method",
            quoted(&run.method().to_string()),
            quoted(&settings.method.to_string()),
            run.method() == settings.method,
        ),
        (
            "trial/epoch",
            run.attempt().to_string(),
            settings.attempts.to_string(),
            attempt_fits,
        ),
        (
            "reflect",
            run.reflect
                .map_or_else(|| "absent".to_owned(), |reflect| quoted(reflect.as_str())),
            record_reflect.map_or_else(|| "none".to_owned(), |reflect| quoted(reflect.as_str())),
            run.reflect.is_none() || run.reflect == record_reflect,
        ),
        (
            "docstore",
            run.docstore
                .as_ref()
                .map_or_else(|| "absent".to_owned(), ToString::to_string),
            settings.docstore.to_string(),
            run.docstore
                .as_ref()
                .is_none_or(|docstore| *docstore == settings.docstore),
        ),
    ];
    checks
        .into_iter()
        .find(|(_, _, _, agrees)| !agrees)
        .map(|(field, own, recorded, _)| (field, own, recorded))
}

/// Two runs that are not one evaluation: the one message every reader and writer gives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not one evaluation: they differ in {} — {} has {}, {} has {} ({} sets it)",
    difference.field,
    first,
    difference.first,
    second,
    difference.second,
    difference.flag
)]
pub struct NotOneEvaluation {
    pub first: SettingsSource,
    pub second: SettingsSource,
    pub difference: SettingDifference,
}

/// `fields` (names of [`SettingsComparison::unknown`]) in the order messages list settings.
pub fn in_field_order(fields: &std::collections::BTreeSet<&'static str>) -> Vec<&'static str> {
    ROWS.iter()
        .map(|row| row.name)
        .filter(|name| fields.contains(name))
        .collect()
}

/// Compares two runs' settings: `Err` naming both places when they are not one evaluation, else
/// the fields one of them does not record.
pub fn check_same(
    first: (&SettingRows, SettingsSource),
    second: (&SettingRows, SettingsSource),
) -> Result<Vec<&'static str>, Box<NotOneEvaluation>> {
    let comparison = first.0.compare(second.0);
    match comparison.difference {
        Some(difference) => Err(Box::new(NotOneEvaluation {
            first: first.1,
            second: second.1,
            difference,
        })),
        None => Ok(comparison.unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::base::method::StopRule;
    use serde_json::Map;

    fn settings() -> EvalSettings {
        EvalSettings {
            model: "gpt-4o-mini".to_owned(),
            api: Some(Api::Chat),
            profile: Profile::Default,
            method: Method::CotSc,
            sampling: Some(Sampling {
                samples: 21,
                temperature: 0.7,
                stop: None,
            }),
            generation: Some(Generation {
                temperature: 0.0,
                max_tokens: Some(256),
                options: Map::new(),
            }),
            max_steps: Some(7),
            prompts: vec![digest(b"examples")],
            tools: Vec::new(),
            attempts: AttemptsRecord::Once,
            docstore: DocstoreInfo {
                kind: "distractor".to_owned(),
                snapshot: None,
            },
            questions: digest(b"questions"),
            selection: SelectionRecord {
                subset: None,
                ids: None,
                limit: Some(5),
                shards: None,
            },
        }
    }

    /// Each setting that changes answers, changed alone, is a difference naming its field.
    #[test]
    fn every_setting_is_compared() {
        let base = settings();
        type Change = Box<dyn Fn(&mut EvalSettings)>;
        let changes: Vec<(&str, Change)> = vec![
            ("model", Box::new(|s| s.model = "other".to_owned())),
            ("API", Box::new(|s| s.api = Some(Api::Completions))),
            ("profile", Box::new(|s| s.profile = Profile::Paper)),
            ("method", Box::new(|s| s.method = Method::Cot)),
            (
                "samples and sample temperature",
                Box::new(|s| {
                    s.sampling = Some(Sampling {
                        samples: 7,
                        temperature: 0.7,
                        stop: None,
                    })
                }),
            ),
            (
                "samples and sample temperature",
                Box::new(|s| {
                    s.sampling = Some(Sampling {
                        samples: 21,
                        temperature: 1.5,
                        stop: None,
                    })
                }),
            ),
            (
                "stopping rule",
                Box::new(|s| {
                    s.sampling.as_mut().unwrap().stop = Some(ScStop::new(StopRule::Exact));
                }),
            ),
            (
                "temperature",
                Box::new(|s| s.generation.as_mut().unwrap().temperature = 0.5),
            ),
            (
                "max tokens",
                Box::new(|s| s.generation.as_mut().unwrap().max_tokens = None),
            ),
            (
                "model options",
                Box::new(|s| {
                    s.generation
                        .as_mut()
                        .unwrap()
                        .options
                        .insert("top_p".to_owned(), Value::from(0.9));
                }),
            ),
            ("step budget", Box::new(|s| s.max_steps = Some(5))),
            (
                "few-shot examples",
                Box::new(|s| s.prompts = vec![digest(b"other examples")]),
            ),
            ("tools", Box::new(|s| s.tools = vec!["Calculate".to_owned()])),
            (
                "attempts",
                Box::new(|s| s.attempts = AttemptsRecord::Epochs { count: 3 }),
            ),
            (
                "attempts",
                Box::new(|s| {
                    s.attempts = AttemptsRecord::Trials {
                        count: 3,
                        reflect: Reflect::Reflexion,
                    }
                }),
            ),
            ("docstore", Box::new(|s| s.docstore.kind = "wikipedia".to_owned())),
            (
                "question file",
                Box::new(|s| s.questions = digest(b"other questions")),
            ),
        ];
        for (field, change) in changes {
            let mut other = base.clone();
            change(&mut other);
            let comparison =
                SettingRows::of_settings(&base, false).compare(&SettingRows::of_settings(&other, false));
            assert_eq!(
                comparison.difference.map(|difference| difference.field),
                Some(field)
            );
        }
    }

    /// Rows are matched by name: a row one side lacks is reported unknown, wherever it sits, and
    /// the rows after it are still compared.
    #[test]
    fn a_row_missing_on_one_side_is_unknown_and_the_rest_still_compared() {
        let base = settings();
        let mut other = base.clone();
        other.questions = digest(b"other questions");
        for missing in ["model", "docstore", "shard"] {
            let mut lacking = SettingRows::of_settings(&base, false);
            lacking.values.retain(|(name, _)| *name != missing);
            let comparison = lacking.compare(&SettingRows::of_settings(&other, false));
            assert_eq!(comparison.unknown, [missing]);
            assert_eq!(
                comparison.difference.map(|difference| difference.field),
                Some("question file"),
                "without {missing}"
            );
            let whole = SettingRows::of_settings(&base, false).compare(&lacking);
            assert_eq!(whole.unknown, [missing]);
        }
        assert_eq!(
            ROWS.iter()
                .map(|row| row.name)
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            ROWS.len(),
            "one row a name"
        );
    }

    /// The rules, their batch and beta's confidence each make another evaluation; a line written
    /// before rules existed (no `stop`) is one evaluation with a line that asks all N.
    #[test]
    fn stopping_rules_are_compared_and_an_old_line_asks_all_n() {
        let with = |stop: Option<ScStop>| {
            let mut s = settings();
            s.sampling.as_mut().unwrap().stop = stop;
            SettingRows::of_settings(&s, false)
        };
        let exact = ScStop::new(StopRule::Exact);
        let beta = ScStop::new(StopRule::Beta);
        for (first, second) in [
            (exact, beta),
            (exact, ScStop { batch: 1, ..exact }),
            (
                beta,
                ScStop {
                    confidence: 0.9,
                    ..beta
                },
            ),
        ] {
            let difference = with(Some(first)).compare(&with(Some(second))).difference.unwrap();
            assert_eq!(difference.field, "stopping rule");
            assert_eq!(difference.flag, "--sc-stop/--sc-batch/--sc-confidence");
        }
        let line = serde_json::to_value(settings()).unwrap();
        assert!(line["sampling"].get("stop").is_none(), "{line}");
        let old: EvalSettings = serde_json::from_value(line).unwrap();
        assert_eq!(
            SettingRows::of_settings(&old, false)
                .compare(&with(None))
                .difference,
            None
        );
        assert_eq!(
            with(Some(exact))
                .compare(&with(None))
                .difference
                .map(|d| d.second),
            Some("all N".to_owned())
        );
    }

    /// An unsharded selection may be widened; a shard's may not.
    #[test]
    fn only_a_sharded_selection_is_compared() {
        let narrow = settings();
        let mut wide = settings();
        wide.selection.limit = Some(10);
        let unsharded =
            SettingRows::of_settings(&narrow, false).compare(&SettingRows::of_settings(&wide, false));
        assert_eq!(unsharded.difference, None);
        let sharded = SettingRows::of_settings(&narrow, true).compare(&SettingRows::of_settings(&wide, true));
        assert_eq!(
            sharded.difference.map(|difference| difference.field),
            Some("selection")
        );
    }

    #[test]
    fn digests_are_sha256_hex() {
        assert_eq!(
            digest(b"abc"),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abc");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(file_digest(&path).unwrap(), digest(b"abc"));
    }
}
