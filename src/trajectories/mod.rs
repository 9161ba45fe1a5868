//! Trajectories: recorded runs rebuilt as their model saw them ([`rebuild`], also how `replay`
//! sets a run's method up again), written out as fine-tuning data ([`export`]) and drawn as
//! few-shot examples ([`fewshot_from`]).

pub mod rebuild;
pub mod export;
pub mod fewshot_from;
