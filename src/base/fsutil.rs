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
        let file = self.file.as_ref();
        // invariant: `file` is `None` only inside `commit` and `drop`, which consume `self`
        file.expect("an uncommitted AtomicFile holds its file")
    }

    /// Syncs the written bytes, renames the file over the target and syncs the directory that
    /// holds both; returns the file, now at the target's path.
    pub fn commit(mut self) -> io::Result<File> {
        let file = self.file.take();
        // invariant: `file` is `None` only after `commit` or `drop`, which consume `self`
        let file = file.expect("an uncommitted AtomicFile holds its file");
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

/// Removes the temporary siblings of `target` that a process no longer running left behind (killed
/// or crashed mid-write): `.{name}.tmp{pid}-{n}` whose `pid` is not alive. Those of live processes
/// (another writer of the same file) stay. Returns how many were removed; a directory that cannot
/// be read removes none. The writers of few, large files call it after their write (run files,
/// results files, reports, the index manifest); the caches, which hold many small files, do not.
pub fn remove_stale_temporaries(target: &Path) -> usize {
    let Some(name) = target.file_name().map(|name| name.to_string_lossy().into_owned()) else {
        return 0;
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let prefix = format!(".{name}.tmp");
    let mut removed = 0;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name
            .to_str()
            .and_then(|file_name| file_name.strip_prefix(&prefix))
            .and_then(|rest| rest.split_once('-'))
            .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !process_is_alive(pid) && std::fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Whether a process with this id runs (and might still be writing a file it named after itself:
/// a temporary, an index's staging directory). An id we may not signal belongs to a live process.
pub fn process_is_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if pid <= 0 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists and may be signalled; nothing is sent.
    let status = unsafe { libc::kill(pid, 0) };
    status == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
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

    #[test]
    fn temporaries_of_dead_writers_are_removed_and_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("results.jsonl");
        // A process that ran and ended: its id is free.
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let mine = std::process::id();
        for name in [
            format!(".results.jsonl.tmp{dead}-0"),
            format!(".results.jsonl.tmp{dead}-17"),
            format!(".results.jsonl.tmp{mine}-3"),
            format!(".other.jsonl.tmp{dead}-0"),
            format!(".results.jsonl.tmp{dead}-x"),
            "results.jsonl".to_owned(),
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        assert_eq!(remove_stale_temporaries(&target), 2);
        let mut kept = vec![
            format!(".other.jsonl.tmp{dead}-0"),
            format!(".results.jsonl.tmp{dead}-x"),
            format!(".results.jsonl.tmp{mine}-3"),
            "results.jsonl".to_owned(),
        ];
        kept.sort();
        assert_eq!(entries(dir.path()), kept);
        assert_eq!(remove_stale_temporaries(&dir.path().join("missing/file")), 0);
    }

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
