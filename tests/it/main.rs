//! The integration tests: one binary, one module per area. Nothing here touches the network:
//! HTTP clients talk to local wiremock servers serving recorded bodies.

/// Where every snapshot lives: `tests/snapshots/`, committed and reviewed like code.
#[macro_export]
macro_rules! assert_snapshot {
    ($($arg:tt)*) => {{
        let mut settings = insta::Settings::clone_current();
        settings.set_snapshot_path(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/snapshots"));
        settings.set_prepend_module_to_snapshot(true);
        settings.bind(|| insta::assert_snapshot!($($arg)*));
    }};
}

/// A path inside the repository's `fixtures/`.
pub fn fixture(path: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(path)
}

mod docstore;
mod explore;
mod replay_live;
