//! No code: this crate's dependencies turn on, in every build of the workspace, the features that
//! only the dev-dependencies used to turn on (see its `Cargo.toml`).
