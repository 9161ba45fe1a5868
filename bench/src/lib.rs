//! The benchmarks and generators behind the figures of `docs/performance.md` (`src/bin/`, one
//! program each: `cargo run --release --bin NAME -- ARGS`) and what they share with the tests:
//! the fuzz targets and the tag-soup generator (`tests/it/fuzz.rs` and the HTML reader's unit
//! test use them too), the HotpotQA page writer of the two dump generators, and the process's CPU
//! time. `cargo test` builds this library, for the tests, but none of the programs.

pub mod cpu;
pub mod hotpot_jsonl;
pub mod tag_soup;
pub mod targets;

use std::path::Path;

/// The repository's root, which holds `fixtures/`.
pub fn repository_root() -> &'static Path {
    // invariant: this crate's manifest directory is `bench/`, inside the repository.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("bench/ is inside the repository")
}
