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
mod ask;
mod docstore;
mod end_to_end;
mod eval;
mod explore;
mod llm;
mod replay;
mod replay_live;
mod tools;

/// `text` as a regex matching itself, for insta filters of server URLs and temp paths.
pub fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}
