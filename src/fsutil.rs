//! Durable file writes, the one way every file the tool keeps is replaced: the run file, the index
//! manifest, the page cache, the WebSearch cache and the `--retry-errors` rewrite of a results file.
//!
//! [`AtomicFile`] writes a temporary sibling (same directory, so the same file system), syncs it,
//! renames it over the target and syncs the directory: after a crash or a power cut the target is
//! the old file or the new one, whole, never a mix or nothing.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// `dir/.{name}.{tag}` for `dir/name`: a hidden file beside `path`, on its file system, so a
/// rename into place is atomic.
pub fn hidden_sibling(path: &Path, tag: &str) -> PathBuf {
    let file_name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{file_name}.{tag}"))
}

/// The temporary sibling this process writes for `path`: unique per call, so concurrent writers
/// of one path (two questions caching one page) never share a temporary file.
fn temporary_sibling(path: &Path) -> PathBuf {
    static N_TEMPORARY: AtomicU64 = AtomicU64::new(0);
    let n_temporary = N_TEMPORARY.fetch_add(1, Ordering::Relaxed);
    hidden_sibling(path, &format!("tmp{}-{n_temporary}", std::process::id()))
}

/// A file being written beside its target; [`AtomicFile::commit`] puts it in place. Dropped
/// without a commit, the temporary file is removed and the target is untouched.
#[derive(Debug)]
pub struct AtomicFile {
    target: PathBuf,
    temporary: PathBuf,
    file: Option<File>,
}

impl AtomicFile {
    /// Creates the temporary sibling of `target` (readable and writable, so a caller may lock it).
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let temporary = temporary_sibling(target);
        let file = OpenOptions::new()
            .create_new(true)
            .read(true)
            .write(true)
            .open(&temporary)?;
        Ok(AtomicFile {
            target: target.to_owned(),
            temporary,
            file: Some(file),
        })
    }

    /// The open temporary file.
    pub fn file(&self) -> &File {
        self.file
            .as_ref()
            // invariant: `file` is `None` only inside `commit` and `drop`, which consume `self`
            .expect("an uncommitted AtomicFile holds its file")
    }

    /// Syncs the written bytes, renames the file over the target and syncs the directory that
    /// holds both; returns the file, now at the target's path.
    pub fn commit(mut self) -> io::Result<File> {
        let file = self
            .file
            .take()
            // invariant: `file` is `None` only after `commit` or `drop`, which consume `self`
            .expect("an uncommitted AtomicFile holds its file");
        file.sync_all()?;
        std::fs::rename(&self.temporary, &self.target)?;
        sync_parent(&self.target)?;
        Ok(file)
    }
}

impl Write for AtomicFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.file().write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file().flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.file.take().is_some() {
            let _ = std::fs::remove_file(&self.temporary);
        }
    }
}

/// Replaces `path` with `bytes` durably: the old file or the new one, whole, at every instant.
pub fn atomic_write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = AtomicFile::create(path)?;
    file.write_all(bytes)?;
    file.commit().map(drop)
}

/// Syncs the directory holding `path`, so a rename or a removal in it survives a power cut.
pub fn sync_parent(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_write_replaces_the_file_whole_and_leaves_nothing_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.json");
        atomic_write(&path, b"old").unwrap();
        atomic_write(&path, b"new, and longer").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new, and longer");
        assert_eq!(entries(dir.path()), ["run.json"]);
    }

    #[test]
    fn an_uncommitted_file_leaves_the_target_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("results.jsonl");
        atomic_write(&path, b"kept").unwrap();
        let mut file = AtomicFile::create(&path).unwrap();
        file.write_all(b"half of a rewrite").unwrap();
        drop(file);
        assert_eq!(std::fs::read(&path).unwrap(), b"kept");
        assert_eq!(entries(dir.path()), ["results.jsonl"]);
    }

    #[test]
    fn a_failed_write_names_no_partial_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing").join("manifest.json");
        assert!(atomic_write(&path, b"x").is_err());
        assert!(entries(dir.path()).is_empty());
    }

    #[test]
    fn concurrent_writers_of_one_path_each_write_a_whole_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("page");
        let bodies: Vec<Vec<u8>> = (0..8u8).map(|n| vec![b'a' + n; 64 * 1024]).collect();
        std::thread::scope(|scope| {
            for body in &bodies {
                let path = &path;
                scope.spawn(move || atomic_write(path, body).unwrap());
            }
        });
        let written = std::fs::read(&path).unwrap();
        assert!(bodies.contains(&written), "a torn mix of two writers");
        assert_eq!(entries(dir.path()), ["page"]);
    }
}
