//! `Shard`: one part of an evaluation split across machines (`eval --shard I/N`, `--shard auto`
//! under a Slurm job array or a Kubernetes Indexed Job) — which questions it runs, and the record
//! each of its results lines keeps.
//!
//! A question belongs to shard `h mod N`, where `h` is the first 8 bytes (big-endian) of the
//! SHA-256 of its id: the same part on every machine, for every order of the question file and
//! every build of this tool, with no list of the other shards' questions needed. The N parts are
//! disjoint and cover the selection; a merge can check that a run sits in the shard its id names.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::record::run::{Run, ShardRecord};

/// The Slurm variables `--shard auto` reads: the task's index in its array, and the array's size.
pub const SLURM_TASK_ID: &str = "SLURM_ARRAY_TASK_ID";
pub const SLURM_TASK_COUNT: &str = "SLURM_ARRAY_TASK_COUNT";
/// The array's first index (`--array=1-8` starts at 1; a resubmitted `--array=3` at 3) and its
/// step (`0-15:2`).
pub const SLURM_TASK_MIN: &str = "SLURM_ARRAY_TASK_MIN";
pub const SLURM_TASK_STEP: &str = "SLURM_ARRAY_TASK_STEP";
/// The variable Kubernetes sets in each pod of an Indexed Job. No variable carries the Job's
/// `completions`: the count is given as `--shard auto/N`.
pub const KUBERNETES_INDEX: &str = "JOB_COMPLETION_INDEX";

/// Shard `index` of `count` (`0 ≤ index < count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Shard `index` of `count`, when `index < count`.
    pub fn new(index: u32, count: u32) -> Option<Shard> {
        (index < count).then_some(Shard { index, count })
    }

    /// Whether question `id` is in this shard.
    pub fn holds(self, id: &str) -> bool {
        shard_of(id, self.count) == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let expected = || format!("`{s}` is not a shard: expected I/N with 0 ≤ I < N, e.g. `0/8`");
        let (index, count) = s.split_once('/').ok_or_else(expected)?;
        let index: u32 = index.trim().parse().map_err(|_| expected())?;
        let count: u32 = count.trim().parse().map_err(|_| expected())?;
        Shard::new(index, count).ok_or_else(expected)
    }
}

/// The shard of question `id` among `count` (`count` ≥ 1): the first 8 bytes of the SHA-256 of the
/// id, big-endian, modulo `count`. In Python:
/// `int.from_bytes(hashlib.sha256(id.encode()).digest()[:8], "big") % count`.
pub fn shard_of(id: &str, count: u32) -> u32 {
    let digest = Sha256::digest(id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    (u64::from_be_bytes(first) % u64::from(count.max(1))) as u32
}

/// What `--shard` says: a shard, or `auto` (from the scheduler's environment), with the count
/// given when the scheduler does not pass it (Kubernetes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShardArg {
    Fixed(Shard),
    Auto { count: Option<u32> },
}

impl FromStr for ShardArg {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.strip_prefix("auto") {
            Some("") => Ok(ShardArg::Auto { count: None }),
            Some(rest) => match rest.strip_prefix('/').map(str::parse::<u32>) {
                Some(Ok(count)) if count > 0 => Ok(ShardArg::Auto { count: Some(count) }),
                _ => Err(format!(
                    "`{s}` is not a shard: expected `auto` or `auto/N` with N ≥ 1 (N: the Kubernetes Job's completions)"
                )),
            },
            None => s.parse().map(ShardArg::Fixed),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error(
        "`--shard auto` found no scheduler's shard in the environment: it reads `{SLURM_TASK_ID}` and `{SLURM_TASK_COUNT}` (a Slurm job array, `sbatch --array=0-N`) or `{KUBERNETES_INDEX}` (a Kubernetes Indexed Job, with `--shard auto/N`), and none is set; outside a scheduler, pass `--shard I/N`"
    )]
    NoScheduler,
    #[error(
        "`--shard auto`: `{SLURM_TASK_ID}` is set but `{SLURM_TASK_COUNT}` is not (Slurm before 17.02?); pass the array's size as `--shard auto/N`"
    )]
    SlurmCountMissing,
    #[error(
        "`--shard auto`: `{KUBERNETES_INDEX}` is {index}, but Kubernetes passes no variable with the Job's completions count; pass it as `--shard auto/N` (N = the Job's `spec.completions`)"
    )]
    KubernetesCountMissing { index: String },
    #[error("`--shard auto`: `{name}` is `{value}`, expected a number")]
    NotANumber { name: &'static str, value: String },
    #[error(
        "`--shard auto`: the Slurm array steps by {step} (`{SLURM_TASK_STEP}`); shards need consecutive indices from 0, e.g. `sbatch --array=0-{last}`"
    )]
    SlurmStep { step: u32, last: u32 },
    #[error(
        "`--shard auto`: the Slurm array starts at {first} (`{SLURM_TASK_MIN}`), so its size is not the shard count; run the whole array from 0 (`sbatch --array=0-N`), or give the count: `--shard auto/N` (a task resubmitted alone keeps its index)"
    )]
    SlurmNotFromZero { first: u32 },
    #[error(
        "`--shard auto`: the scheduler's index {index} (`{variable}`) is not below the shard count {count}; the indices must run from 0, e.g. `sbatch --array=0-{last}` or `completions: {count}`"
    )]
    OutOfRange {
        variable: &'static str,
        index: u32,
        count: u32,
        last: u32,
    },
    #[error(
        "results file `{}` holds runs of {recorded}, this evaluation is {current}: each shard has its results file — pass another --out",
        results.display()
    )]
    OtherShard {
        results: PathBuf,
        recorded: ShardName,
        current: ShardName,
    },
}

/// A shard, or none, as messages name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardName(pub Option<Shard>);

impl fmt::Display for ShardName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(shard) => write!(f, "shard {shard}"),
            None => f.write_str("an unsharded evaluation"),
        }
    }
}

impl ShardArg {
    /// The shard: as given, or from the scheduler's variables, read through `var`: Slurm's when
    /// `SLURM_ARRAY_TASK_ID` is set, else Kubernetes'. The index is the task's own
    /// (`SLURM_ARRAY_TASK_ID`, `JOB_COMPLETION_INDEX`); the count is `auto/N`'s, else the size of
    /// a Slurm array that runs from 0 with step 1 (`SLURM_ARRAY_TASK_COUNT`).
    pub fn resolve(self, var: impl Fn(&str) -> Option<String>) -> Result<Shard, ShardError> {
        let given = match self {
            ShardArg::Fixed(shard) => return Ok(shard),
            ShardArg::Auto { count } => count,
        };
        let number = |name: &'static str| -> Result<Option<u32>, ShardError> {
            var(name)
                .map(|value| {
                    value
                        .trim()
                        .parse::<u32>()
                        .map_err(|_| ShardError::NotANumber { name, value })
                })
                .transpose()
        };
        let (variable, index, count) = if let Some(task_id) = number(SLURM_TASK_ID)? {
            let count = match given {
                Some(count) => count,
                None => {
                    let count = number(SLURM_TASK_COUNT)?.ok_or(ShardError::SlurmCountMissing)?;
                    let step = number(SLURM_TASK_STEP)?.unwrap_or(1);
                    if step != 1 {
                        return Err(ShardError::SlurmStep {
                            step,
                            last: count.saturating_sub(1),
                        });
                    }
                    let first = number(SLURM_TASK_MIN)?.unwrap_or(0);
                    if first != 0 {
                        return Err(ShardError::SlurmNotFromZero { first });
                    }
                    count
                }
            };
            (SLURM_TASK_ID, task_id, count)
        } else if let Some(index) = var(KUBERNETES_INDEX) {
            let Some(count) = given else {
                return Err(ShardError::KubernetesCountMissing { index });
            };
            let index = index.trim().parse::<u32>().map_err(|_| ShardError::NotANumber {
                name: KUBERNETES_INDEX,
                value: index,
            })?;
            (KUBERNETES_INDEX, index, count)
        } else {
            return Err(ShardError::NoScheduler);
        };
        Shard::new(index, count).ok_or(ShardError::OutOfRange {
            variable,
            index,
            count,
            last: count.saturating_sub(1),
        })
    }
}

/// A sharded evaluation's part of the selection: the shard, how many questions the whole
/// selection held, and the place in it of each of the shard's questions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShardPlan {
    pub shard: Shard,
    pub selected: usize,
    positions: HashMap<String, usize>,
}

impl ShardPlan {
    /// The shard's questions among `ids` (the whole selection, in its order): their positions.
    pub fn new<'a>(shard: Shard, ids: impl IntoIterator<Item = &'a str>) -> ShardPlan {
        let mut selected = 0;
        let mut positions = HashMap::new();
        for (position, id) in ids.into_iter().enumerate() {
            selected = position + 1;
            if shard.holds(id) {
                positions.insert(id.to_owned(), position);
            }
        }
        ShardPlan {
            shard,
            selected,
            positions,
        }
    }

    /// Whether question `id` is one of the shard's.
    pub fn holds(&self, id: &str) -> bool {
        self.positions.contains_key(id)
    }

    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// What a results line of question `id` records.
    pub fn record(&self, id: &str) -> Option<ShardRecord> {
        let &position = self.positions.get(id)?;
        Some(ShardRecord {
            index: self.shard.index,
            count: self.shard.count,
            position,
            selected: self.selected,
        })
    }

    /// Writes the shard into `run` (by its id).
    pub fn stamp(&self, run: &mut Run) {
        if let Some(id) = run.id.as_deref() {
            run.shard = self.record(id);
        }
    }
}

/// The shard a stored run was part of, if any.
pub fn recorded_shard(run: &Run) -> Option<Shard> {
    run.shard.map(|record| Shard {
        index: record.index,
        count: record.count,
    })
}

/// Refuses to resume a results file that another shard (or an unsharded evaluation, or a sharded
/// one when this one is not) wrote: each shard keeps its own file.
pub fn check_resume(stored: &[Run], plan: Option<&ShardPlan>, results: &Path) -> Result<(), ShardError> {
    let current = plan.map(|plan| plan.shard);
    match stored
        .iter()
        .map(recorded_shard)
        .find(|recorded| *recorded != current)
    {
        Some(recorded) => Err(ShardError::OtherShard {
            results: results.to_owned(),
            recorded: ShardName(recorded),
            current: ShardName(current),
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_arguments_parse() {
        assert_eq!("3/8".parse(), Ok(ShardArg::Fixed(Shard { index: 3, count: 8 })));
        assert_eq!("auto".parse(), Ok(ShardArg::Auto { count: None }));
        assert_eq!("auto/4".parse(), Ok(ShardArg::Auto { count: Some(4) }));
        for bad in ["8/8", "1", "-1/4", "a/b", "0/0", "auto/0", "auto/x", "autox"] {
            assert!(bad.parse::<ShardArg>().is_err(), "{bad}");
        }
    }

    /// The hash is SHA-256's first 8 bytes: pinned, so a build that changed it would fail here.
    #[test]
    fn the_partition_is_pinned() {
        // Python: int.from_bytes(hashlib.sha256(b"5a8b57f25542995c1a6e8a5c").digest()[:8], "big") % 8
        let ids = ["0", "1", "2", "3", "5a8b57f25542995c1a6e8a5c"];
        let shards: Vec<u32> = ids.iter().map(|id| shard_of(id, 8)).collect();
        assert_eq!(shards, PINNED_SHARDS_OF_8);
    }

    const PINNED_SHARDS_OF_8: [u32; 5] = [0, 1, 6, 3, 2];
}
