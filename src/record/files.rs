//! `recorded_files`: the one rule that turns path arguments into the run and results files they
//! name, for every command that reads recorded runs (`replay`, `score`, `compare`, `report`,
//! `merge`, `export`, `--fewshot-from`). An argument is a file; a directory, whose files are found
//! at any depth, in name order; or, when no file has that name, a comma list of these
//! (`a.jsonl,b.jsonl`). Hidden entries (a name starting with `.`: an interrupted write's
//! temporary file) are passed over. [`read_runs`] reads the runs of a file of either kind.

use std::fs::FileType;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::base::task::Task;
use crate::record::recorded::{RecordedRun, RunPlace};
use crate::record::results::{ResultsError, parse_run_lines};
use crate::record::run::{Run, RunFileError};

/// Which files a directory is searched for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wanted {
    /// `eval`'s results files: `*.jsonl`.
    Results,
    /// Run files of either kind: `*.json` (one run, `ask --record`) and `*.jsonl`.
    Runs,
}

impl Wanted {
    fn takes(self, path: &Path) -> bool {
        match path.extension().and_then(|ext| ext.to_str()) {
            Some("jsonl") => true,
            Some("json") => self == Wanted::Runs,
            _ => false,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Wanted::Results => "results file (`*.jsonl`)",
            Wanted::Runs => "run file (`*.json`, `*.jsonl`)",
        }
    }
}

/// How a file came to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found {
    /// Named by an argument: a file that is not what the command reads is an error.
    Named,
    /// Found in a directory an argument named: one that cannot be read may be passed over.
    InDirectory,
}

/// A file to read, and how it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedFile {
    pub path: PathBuf,
    pub found: Found,
}

/// The deepest a directory is searched: deeper levels are a link loop, not an evaluation.
const MAX_DEPTH: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum FilesError {
    #[error("no file given")]
    NoFiles,
    #[error("cannot list directory `{}`", path.display())]
    List {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("directory `{}` holds no {wanted}, at any depth", path.display())]
    EmptyDirectory { path: PathBuf, wanted: &'static str },
    #[error("directory `{}` nests more than {MAX_DEPTH} levels deep (a link loop?)", path.display())]
    TooDeep { path: PathBuf },
}

/// The files `arguments` name (see the module's rule), in the order given, each directory's in
/// name order.
pub fn recorded_files(arguments: &[PathBuf], wanted: Wanted) -> Result<Vec<RecordedFile>, FilesError> {
    if arguments.is_empty() {
        return Err(FilesError::NoFiles);
    }
    let mut files = Vec::new();
    for argument in arguments {
        for path in split_list(argument) {
            if !path.is_dir() {
                files.push(RecordedFile {
                    path,
                    found: Found::Named,
                });
                continue;
            }
            let mut found = Vec::new();
            collect(&path, wanted, 0, &mut found)?;
            if found.is_empty() {
                return Err(FilesError::EmptyDirectory {
                    path,
                    wanted: wanted.describe(),
                });
            }
            files.extend(found.into_iter().map(|path| RecordedFile {
                path,
                found: Found::InDirectory,
            }));
        }
    }
    Ok(files)
}

/// The paths of `recorded_files`, for readers that treat every file alike.
pub fn recorded_paths(arguments: &[PathBuf], wanted: Wanted) -> Result<Vec<PathBuf>, FilesError> {
    Ok(recorded_files(arguments, wanted)?
        .into_iter()
        .map(|file| file.path)
        .collect())
}

/// Whether an argument is a comma list of several paths (no file has its name).
pub fn is_list(argument: &Path) -> bool {
    split_list(argument).len() > 1
}

/// An argument as the paths it lists: itself when it exists or holds no comma.
fn split_list(argument: &Path) -> Vec<PathBuf> {
    if argument.exists() {
        return vec![argument.to_owned()];
    }
    let text = argument.to_string_lossy();
    if !text.contains(',') {
        return vec![argument.to_owned()];
    }
    text.split(',')
        .filter(|part| !part.is_empty())
        .map(PathBuf::from)
        .collect()
}

/// The wanted files below `dir`, depth first, entries in name order.
fn collect(dir: &Path, wanted: Wanted, depth: usize, files: &mut Vec<PathBuf>) -> Result<(), FilesError> {
    if depth > MAX_DEPTH {
        return Err(FilesError::TooDeep { path: dir.to_owned() });
    }
    let list_error = |source| FilesError::List {
        path: dir.to_owned(),
        source,
    };
    // The entries' types come with the listing: no `stat` a file, except through a symbolic link.
    let mut entries: Vec<(PathBuf, FileType)> = std::fs::read_dir(dir)
        .map_err(list_error)?
        .map(|entry| entry.and_then(|entry| Ok((entry.path(), entry.file_type()?))))
        .collect::<Result<_, _>>()
        .map_err(list_error)?;
    entries.sort_by(|(a, _), (b, _)| a.cmp(b));
    for (entry, file_type) in entries {
        if entry
            .file_name()
            .is_some_and(|name| name.to_string_lossy().starts_with('.'))
        {
            continue;
        }
        let (is_dir, is_file) = if file_type.is_symlink() {
            (entry.is_dir(), entry.is_file())
        } else {
            (file_type.is_dir(), file_type.is_file())
        };
        if is_dir {
            collect(&entry, wanted, depth + 1, files)?;
        } else if is_file && wanted.takes(&entry) {
            files.push(entry);
        }
    }
    Ok(())
}

/// Why the runs of a file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum RunsError {
    #[error(transparent)]
    RunFile(#[from] RunFileError),
    #[error(transparent)]
    RunLines(#[from] ResultsError),
    #[error("`{}`, line {line}: the last line is cut short (a write still in progress, or interrupted)", path.display())]
    TornLine { path: PathBuf, line: usize },
    #[error(
        "`{}` is {}, not runs: `replay`, `export` and `--fewshot-from` take the runs `ask --record` and `eval --out` write; `eval {}` runs its questions",
        path.display(),
        crate::record::questions::describe(*task),
        path.display()
    )]
    QuestionFile { path: PathBuf, task: Task },
}

/// The runs of one file with their places: JSON Lines (`*.jsonl`, or a `.json` file of several
/// runs a line each) or a single run. The file is read once (it may be a pipe).
pub fn read_runs(path: &Path) -> Result<Vec<RecordedRun>, RunsError> {
    let bytes = std::fs::read(path).map_err(|source| RunFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    if path.extension().is_none_or(|ext| ext != "jsonl") {
        return match single_run(&bytes, path) {
            Ok(run) => Ok(vec![RecordedRun {
                place: RunPlace {
                    file: Arc::from(path),
                    line: None,
                },
                run,
                line_bytes: None,
            }]),
            Err(single_error) => match parse_run_lines(&bytes, path) {
                Ok(lines) if lines.runs.len() > 1 && lines.torn_bytes == 0 => Ok(lines.runs),
                _ => Err(unless_questions(single_error.into(), &bytes, path)),
            },
        };
    }
    let lines =
        parse_run_lines(&bytes, path).map_err(|error| unless_questions(error.into(), &bytes, path))?;
    if lines.torn_bytes > 0 {
        return Err(RunsError::TornLine {
            path: path.to_owned(),
            line: bytes[..lines.valid_len]
                .iter()
                .filter(|&&byte| byte == b'\n')
                .count()
                + 1,
        });
    }
    Ok(lines.runs)
}

/// A single run's file, as [`Run::read`] parses it (text that is not UTF-8 cannot be read).
fn single_run(bytes: &[u8], path: &Path) -> Result<Run, RunFileError> {
    let text = std::str::from_utf8(bytes).map_err(|_| RunFileError::Read {
        path: path.to_owned(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        ),
    })?;
    Run::from_json(text, path)
}

/// `error`, or the question-file error when the file's bytes are a question file
/// ([`crate::record::questions::recognise`]).
fn unless_questions(error: RunsError, bytes: &[u8], path: &Path) -> RunsError {
    match crate::record::questions::recognise(bytes) {
        Some(task) => RunsError::QuestionFile {
            path: path.to_owned(),
            task,
        },
        None => error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files, directories at any depth and comma lists name the same files for every reader.
    #[test]
    fn every_form_names_the_files() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("evaluation/shard-1")).unwrap();
        for name in [
            "evaluation/a.results.jsonl",
            "evaluation/shard-1/b.results.jsonl",
            "evaluation/shard-1/run.json",
            "evaluation/shard-1/.c.results.jsonl.tmp",
            "evaluation/notes.txt",
            "evaluation/a.results.jsonl.set-aside",
        ] {
            std::fs::write(root.join(name), "").unwrap();
        }
        let names = |files: Vec<PathBuf>| -> Vec<String> {
            files
                .iter()
                .map(|path| path.strip_prefix(root).unwrap().display().to_string())
                .collect()
        };
        let results = recorded_paths(&[root.join("evaluation")], Wanted::Results).unwrap();
        assert_eq!(
            names(results),
            ["evaluation/a.results.jsonl", "evaluation/shard-1/b.results.jsonl"]
        );
        let runs = recorded_paths(&[root.join("evaluation")], Wanted::Runs).unwrap();
        assert_eq!(names(runs).len(), 3);
        let list = format!(
            "{},{}",
            root.join("evaluation/a.results.jsonl").display(),
            root.join("evaluation/shard-1").display()
        );
        let listed = recorded_paths(&[PathBuf::from(list)], Wanted::Results).unwrap();
        assert_eq!(
            names(listed),
            ["evaluation/a.results.jsonl", "evaluation/shard-1/b.results.jsonl"]
        );
        std::fs::create_dir(root.join("empty")).unwrap();
        assert!(matches!(
            recorded_paths(&[root.join("empty")], Wanted::Results),
            Err(FilesError::EmptyDirectory { .. })
        ));
    }
}
