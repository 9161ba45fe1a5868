//! `Question` and `QuestionFile`: evaluation items read from HotpotQA or FEVER files, in every
//! layout researchers keep them in.
//!
//! Accepted: the official HotpotQA JSON (`_id`, `context` as `[title, [sentences]]` pairs), the
//! Hugging Face schema (`context: {title: [...], sentences: [[...]]}`), the ReAct repository's
//! simplified JSON (`question`, `answer`, `type`; ids are positions), JSON Lines of any of these,
//! and FEVER JSON Lines (`id`, `claim`, `label`). Records count from 0, as the ReAct ids do.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer as _, SeqAccess, Visitor};
use serde_json::{Map, Value};

use crate::base::json::type_name;
use crate::base::task::Task;
use crate::docstore::ContextParagraph;

/// One question (or FEVER claim) of an evaluation.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    /// `_id` or `id` when the file has one, else the record's position (the ReAct convention).
    pub id: String,
    /// Where the question sits in its dataset split: `dev_index` when the record says, else its
    /// position in the file. `--subset paper500` selects on it.
    pub position: usize,
    /// The question, or the FEVER claim.
    pub question: String,
    /// The gold answer, when the file has one.
    pub answer: Option<String>,
    /// HotpotQA's `type`: `bridge` or `comparison`.
    pub kind: Option<String>,
    /// HotpotQA's `level`: `easy`, `medium` or `hard`.
    pub level: Option<String>,
    /// The paragraphs that come with the question (the distractor setting); empty when none.
    pub context: Vec<ContextParagraph>,
    /// FEVER's gold label: `SUPPORTS`, `REFUTES` or `NOT ENOUGH INFO`.
    pub label: Option<String>,
}

impl Question {
    /// What the agent's answer is scored against: the answer, or the FEVER label.
    pub fn gold(&self) -> Option<&str> {
        self.answer.as_deref().or(self.label.as_deref())
    }
}

/// A question file, read whole and checked.
#[derive(Debug, Clone)]
pub struct QuestionFile {
    pub path: PathBuf,
    pub task: Task,
    pub questions: Vec<Question>,
    /// `sha256:` of the file's bytes (an evaluation records it), computed as the file is read.
    pub digest: String,
    /// Some record came with context paragraphs (HotpotQA's distractor files), kept or not:
    /// `--docstore distractor` could search them.
    pub has_contexts: bool,
}

/// Whether an evaluation's docstore reads the questions' context paragraphs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Contexts {
    /// `--docstore distractor`: each question searches its own paragraphs (and what reads a
    /// file whole keeps them).
    #[default]
    Required,
    /// Any other docstore: the paragraphs are dropped as the file is read.
    Unused,
}

/// Which records of a question file are kept as it is read; every record is still checked.
/// A question that is not kept costs nothing past its own record.
#[derive(Debug, Clone, Default)]
pub struct RecordFilter {
    /// Keep only the records at these positions (`--subset`).
    pub positions: Option<HashSet<usize>>,
    /// Keep only the records with these ids (`--ids`).
    pub ids: Option<HashSet<String>>,
    /// Keep at most this many records, the first ones that pass the filters above.
    pub max_kept: Option<usize>,
    pub contexts: Contexts,
}

impl RecordFilter {
    fn keeps(&self, question: &Question, n_kept: usize) -> bool {
        self.positions
            .as_ref()
            .is_none_or(|positions| positions.contains(&question.position))
            && self.ids.as_ref().is_none_or(|ids| ids.contains(&question.id))
            && self.max_kept.is_none_or(|max_kept| n_kept < max_kept)
    }
}

/// Which record of a question file: its index (from 0) and, in JSON Lines, its line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordLocation {
    pub index: usize,
    pub line: Option<usize>,
}

impl fmt::Display for RecordLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "record {}", self.index)?;
        if let Some(line) = self.line {
            write!(f, " (line {line})")?;
        }
        Ok(())
    }
}

/// What is wrong with a field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldProblem {
    #[error("is missing")]
    Missing,
    #[error("is {found}, expected {expected}")]
    WrongType {
        expected: &'static str,
        found: &'static str,
    },
    #[error("has {n_titles} titles but {n_sentence_lists} sentence lists")]
    LengthMismatch {
        n_titles: usize,
        n_sentence_lists: usize,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum QuestionFileError {
    #[error("cannot read question file `{}`", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("question file `{}` is not valid JSON (line {line}, column {column})", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        #[source]
        source: serde_json::Error,
    },
    #[error("question file `{}`, {location}: expected an object, found {found}", path.display())]
    NotAnObject {
        path: PathBuf,
        location: RecordLocation,
        found: &'static str,
    },
    #[error("question file `{}`, {location}: field `{field}` {problem}", path.display())]
    Field {
        path: PathBuf,
        location: RecordLocation,
        field: String,
        problem: FieldProblem,
    },
    #[error("question file `{}`, {location}: id `{id}` was already used by record {first}", path.display())]
    DuplicateId {
        path: PathBuf,
        location: RecordLocation,
        id: String,
        first: usize,
    },
    #[error("question file `{}` holds no question", path.display())]
    Empty { path: PathBuf },
    #[error(
        "question file `{}` is neither a JSON array nor JSON Lines of records (it starts with `{start}`): {FORMATS}",
        path.display()
    )]
    NotJson { path: PathBuf, start: String },
    #[error(
        "`{}` holds runs (a run file, or `eval`'s results), not questions: `replay` runs them again, `score`, `compare` and `report` read results; `eval` takes a question file: {FORMATS}",
        path.display()
    )]
    Runs { path: PathBuf },
}

/// Whether a record is a run (`react-docstore.run.*`, or a record with `steps`), not a question.
fn is_run(value: &Value) -> bool {
    value.get("steps").is_some_and(Value::is_array)
        || value
            .get("format")
            .and_then(Value::as_str)
            .is_some_and(|format| format.starts_with("react-docstore.run"))
}

/// The task of the questions `bytes` hold when they are a question file, of any layout this
/// reader takes (one JSON array, on one line or many, or JSON Lines; HotpotQA or FEVER): its
/// first record (the array's first element, or the first line's object) reads as a question and
/// is no run. The one test every reader of runs and results makes of a file it cannot read, to say
/// what the file is; only that first record is parsed, whatever the file's size.
pub fn recognise(bytes: &[u8]) -> Option<Task> {
    let bytes = bytes.strip_prefix(BOM).unwrap_or(bytes);
    let start = bytes.iter().position(|byte| !byte.is_ascii_whitespace())?;
    let first = match bytes.get(start..)? {
        [b'[', rest @ ..] => rest,
        from_start => from_start,
    };
    let record = serde_json::Deserializer::from_slice(first)
        .into_iter::<Value>()
        .next()?
        .ok()?;
    if !record.is_object() || is_run(&record) {
        return None;
    }
    let mut task = None;
    question_from_record(record, 0, &mut task).ok()?;
    task
}

/// What a question file is, in words: `a HotpotQA question file`, `a FEVER claim file`.
pub fn describe(task: Task) -> &'static str {
    match task {
        Task::HotpotQa => "a HotpotQA question file",
        Task::Fever => "a FEVER claim file",
    }
}

/// The formats a question file may have, as errors name them.
const FORMATS: &str = "question files are HotpotQA (the official JSON, the Hugging Face or the ReAct-simplified one, or JSON Lines of these) or FEVER (JSON Lines)";

/// How much of a file's first line an error quotes.
const START_CHARS: usize = 40;

/// How a question file's text starts, past a byte order mark and whitespace.
enum Start {
    /// `[`: one JSON array of records.
    Array,
    /// `{`, or nothing: JSON Lines (an empty file holds no question).
    Lines,
    /// Anything else, which no layout starts with: its first line, shortened.
    Other(String),
}

impl Start {
    fn of(head: &[u8]) -> Start {
        let head = head.strip_prefix(BOM).unwrap_or(head);
        let Some(first) = head.iter().position(|byte| !byte.is_ascii_whitespace()) else {
            return Start::Lines;
        };
        match head[first] {
            b'[' => Start::Array,
            b'{' => Start::Lines,
            _ => {
                let line = head[first..]
                    .split(|&byte| byte == b'\n')
                    .next()
                    .unwrap_or_default();
                let line = String::from_utf8_lossy(line);
                Start::Other(crate::base::text::shorten(line.trim_end(), START_CHARS).into_owned())
            }
        }
    }

    /// The error for a file that starts as no question file does.
    fn check(self, path: &Path) -> Result<Start, QuestionFileError> {
        match self {
            Start::Other(start) => Err(QuestionFileError::NotJson {
                path: path.to_owned(),
                start,
            }),
            start => Ok(start),
        }
    }
}

/// A record-level failure before the file path is attached.
enum RecordError {
    NotAnObject { found: &'static str },
    Field { field: String, problem: FieldProblem },
}

impl QuestionFile {
    /// Reads every question of a file.
    pub fn read(path: &Path) -> Result<QuestionFile, QuestionFileError> {
        QuestionFile::read_filtered(path, &RecordFilter::default())
    }

    /// Opens a file and looks at how it starts, as reading it would: an error when it cannot be
    /// read or is no question file, before anything costly (a model, a docstore) is set up. A
    /// pipe (`<(zcat dev.json.gz)`) can be read only once: it is only checked to exist.
    pub fn check_readable(path: &Path) -> Result<(), QuestionFileError> {
        let metadata = std::fs::metadata(path).map_err(|source| QuestionFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        if !metadata.is_file() {
            return Ok(());
        }
        QuestionFile::open(path).map(|_| ())
    }

    /// The file, buffered, and how it starts.
    fn open(path: &Path) -> Result<(BufReader<Hashing<File>>, Start), QuestionFileError> {
        let read_error = |source| QuestionFileError::Read {
            path: path.to_owned(),
            source,
        };
        let file = Hashing::new(File::open(path).map_err(read_error)?);
        let mut reader = BufReader::with_capacity(1 << 16, file);
        let start = Start::of(reader.fill_buf().map_err(read_error)?).check(path)?;
        Ok((reader, start))
    }

    /// Reads a file once, keeping only the questions `filter` keeps.
    pub fn read_filtered(path: &Path, filter: &RecordFilter) -> Result<QuestionFile, QuestionFileError> {
        let read_error = |source| QuestionFileError::Read {
            path: path.to_owned(),
            source,
        };
        let (mut reader, start) = QuestionFile::open(path)?;
        if let Start::Lines = start {
            // JSON Lines: read as text, which their line numbers are counted in.
            let mut text = String::new();
            reader.read_to_string(&mut text).map_err(read_error)?;
            let mut file = QuestionFile::parse_filtered(&text, path, filter)?;
            file.digest = reader.into_inner().finish();
            return Ok(file);
        }
        // A top-level array is streamed from the file: memory follows the records kept, not the file.
        let head = reader.fill_buf().map_err(read_error)?;
        let bom = if head.starts_with(BOM) { BOM.len() } else { 0 };
        reader.consume(bom);
        let mut builder = Builder::new(path, filter);
        builder.read_array(&mut serde_json::Deserializer::from_reader(&mut reader))?;
        // What follows the array (white space) is part of the file's digest too.
        std::io::copy(&mut reader, &mut std::io::sink()).map_err(read_error)?;
        let mut file = builder.finish()?;
        file.digest = reader.into_inner().finish();
        Ok(file)
    }

    /// Parses a question file's text; `path` is only named in errors.
    pub fn parse(text: &str, path: &Path) -> Result<QuestionFile, QuestionFileError> {
        QuestionFile::parse_filtered(text, path, &RecordFilter::default())
    }

    fn parse_filtered(
        text: &str,
        path: &Path,
        filter: &RecordFilter,
    ) -> Result<QuestionFile, QuestionFileError> {
        let digest = crate::base::digest::digest(text.as_bytes());
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let start = Start::of(text.as_bytes()).check(path)?;
        let mut builder = Builder::new(path, filter);
        if let Start::Array = start {
            builder.read_array(&mut serde_json::Deserializer::from_str(text))?;
        } else {
            let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
            let (mut counted_to, mut line) = (0, 1);
            let mut index = 0;
            loop {
                let offset = stream.byte_offset();
                let start = offset + text[offset..].len() - text[offset..].trim_start().len();
                let Some(value) = stream.next() else { break };
                let value = value.map_err(|source| syntax_error(path, source))?;
                line += text[counted_to..start].matches('\n').count();
                counted_to = start;
                builder.push(
                    value,
                    RecordLocation {
                        index,
                        line: Some(line),
                    },
                )?;
                index += 1;
            }
        }
        let mut file = builder.finish()?;
        file.digest = digest;
        Ok(file)
    }
}

/// A reader that hashes every byte read through it: a question file's digest, in the one read.
struct Hashing<R> {
    inner: R,
    hasher: sha2::Sha256,
}

impl<R> Hashing<R> {
    fn new(inner: R) -> Hashing<R> {
        use sha2::Digest;
        Hashing {
            inner,
            hasher: sha2::Sha256::new(),
        }
    }

    /// `sha256:` and the hex digest of the bytes read.
    fn finish(self) -> String {
        use sha2::Digest;
        crate::base::digest::hex_digest(self.hasher.finalize().as_slice())
    }
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        use sha2::Digest;
        let n_read = self.inner.read(buf)?;
        self.hasher.update(&buf[..n_read]);
        Ok(n_read)
    }
}

/// The UTF-8 byte order mark some editors write first.
const BOM: &[u8] = b"\xEF\xBB\xBF";

fn syntax_error(path: &Path, source: serde_json::Error) -> QuestionFileError {
    QuestionFileError::Syntax {
        path: path.to_owned(),
        line: source.line(),
        column: source.column(),
        source,
    }
}

/// Collects questions record by record, so a large file is never held as one JSON tree.
struct Builder<'a> {
    path: &'a Path,
    filter: &'a RecordFilter,
    task: Option<Task>,
    /// The questions kept.
    questions: Vec<Question>,
    first_by_id: HashMap<String, usize>,
    /// Records read, kept or not.
    n_records: usize,
    /// Some record read had context paragraphs.
    has_contexts: bool,
    error: Option<QuestionFileError>,
}

impl<'a> Builder<'a> {
    fn new(path: &'a Path, filter: &'a RecordFilter) -> Builder<'a> {
        Builder {
            path,
            filter,
            task: None,
            questions: Vec::new(),
            first_by_id: HashMap::new(),
            n_records: 0,
            has_contexts: false,
            error: None,
        }
    }

    /// Reads a top-level array of records, one at a time.
    fn read_array<'de, R: serde_json::de::Read<'de>>(
        &mut self,
        deserializer: &mut serde_json::Deserializer<R>,
    ) -> Result<(), QuestionFileError> {
        let parsed = deserializer
            .deserialize_seq(RecordsVisitor { builder: self })
            .and_then(|()| deserializer.end());
        if let Some(error) = self.error.take() {
            return Err(error);
        }
        parsed.map_err(|source| syntax_error(self.path, source))
    }

    fn finish(self) -> Result<QuestionFile, QuestionFileError> {
        match self.task {
            Some(task) if self.n_records > 0 => Ok(QuestionFile {
                path: self.path.to_owned(),
                task,
                questions: self.questions,
                digest: String::new(),
                has_contexts: self.has_contexts,
            }),
            _ => Err(QuestionFileError::Empty {
                path: self.path.to_owned(),
            }),
        }
    }

    fn push(&mut self, value: Value, location: RecordLocation) -> Result<(), QuestionFileError> {
        let path = self.path;
        if location.index == 0 && is_run(&value) {
            return Err(QuestionFileError::Runs {
                path: path.to_owned(),
            });
        }
        let question =
            question_from_record(value, location.index, &mut self.task).map_err(|error| match error {
                RecordError::NotAnObject { found } => QuestionFileError::NotAnObject {
                    path: path.to_owned(),
                    location,
                    found,
                },
                RecordError::Field { field, problem } => QuestionFileError::Field {
                    path: path.to_owned(),
                    location,
                    field,
                    problem,
                },
            })?;
        if let Some(&first) = self.first_by_id.get(&question.id) {
            return Err(QuestionFileError::DuplicateId {
                path: path.to_owned(),
                location,
                id: question.id,
                first,
            });
        }
        self.first_by_id.insert(question.id.clone(), location.index);
        self.n_records += 1;
        self.has_contexts |= !question.context.is_empty();
        if self.filter.keeps(&question, self.questions.len()) {
            let mut question = question;
            if self.filter.contexts == Contexts::Unused {
                question.context = Vec::new();
            }
            self.questions.push(question);
        }
        Ok(())
    }
}

/// Walks a top-level JSON array one record at a time.
struct RecordsVisitor<'a, 'b> {
    builder: &'a mut Builder<'b>,
}

impl<'de> Visitor<'de> for RecordsVisitor<'_, '_> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an array of question records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0;
        while let Some(value) = seq.next_element::<Value>()? {
            let location = RecordLocation { index, line: None };
            if let Err(error) = self.builder.push(value, location) {
                self.builder.error = Some(error);
                return Err(de::Error::custom("invalid record"));
            }
            index += 1;
        }
        Ok(())
    }
}

fn question_from_record(
    value: Value,
    index: usize,
    task: &mut Option<Task>,
) -> Result<Question, RecordError> {
    let Value::Object(mut record) = value else {
        return Err(RecordError::NotAnObject {
            found: type_name(&value),
        });
    };
    let record_task = *task.get_or_insert(if record.contains_key("claim") {
        Task::Fever
    } else {
        Task::HotpotQa
    });
    let id = match (take(&mut record, "_id"), take(&mut record, "id")) {
        (Some(id), _) => string_field("_id", id)?,
        (None, Some(Value::Number(number))) => number.to_string(),
        (None, Some(id)) => string_field("id", id)?,
        (None, None) => index.to_string(),
    };
    let position = match take(&mut record, "dev_index") {
        Some(value) => value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| wrong_type("dev_index", "a non-negative integer", &value))?,
        None => index,
    };
    let optional = |record: &mut Map<String, Value>, field: &'static str| {
        take(record, field)
            .map(|value| string_field(field, value))
            .transpose()
    };
    match record_task {
        Task::HotpotQa => Ok(Question {
            id,
            position,
            question: required_string(&mut record, "question")?,
            answer: optional(&mut record, "answer")?,
            kind: optional(&mut record, "type")?,
            level: optional(&mut record, "level")?,
            context: match take(&mut record, "context") {
                Some(context) => context_paragraphs(context)?,
                None => Vec::new(),
            },
            label: None,
        }),
        Task::Fever => Ok(Question {
            id,
            position,
            question: required_string(&mut record, "claim")?,
            answer: None,
            kind: None,
            level: None,
            context: Vec::new(),
            label: optional(&mut record, "label")?,
        }),
    }
}

/// Removes a field; `null` counts as absent.
fn take(record: &mut Map<String, Value>, field: &str) -> Option<Value> {
    record.remove(field).filter(|value| !value.is_null())
}

fn required_string(record: &mut Map<String, Value>, field: &'static str) -> Result<String, RecordError> {
    match take(record, field) {
        Some(value) => string_field(field, value),
        None => Err(RecordError::Field {
            field: field.to_owned(),
            problem: FieldProblem::Missing,
        }),
    }
}

fn string_field(field: &str, value: Value) -> Result<String, RecordError> {
    match value {
        Value::String(text) => Ok(text),
        other => Err(wrong_type(field, "a string", &other)),
    }
}

fn wrong_type(field: &str, expected: &'static str, found: &Value) -> RecordError {
    RecordError::Field {
        field: field.to_owned(),
        problem: FieldProblem::WrongType {
            expected,
            found: type_name(found),
        },
    }
}

/// `[[title, [sentences]], ...]` (official) or `{title: [...], sentences: [[...]]}` (Hugging Face).
fn context_paragraphs(context: Value) -> Result<Vec<ContextParagraph>, RecordError> {
    match context {
        Value::Array(pairs) => pairs
            .into_iter()
            .enumerate()
            .map(|(idx, pair)| {
                let field = format!("context[{idx}]");
                let pair_error = |found: &Value| wrong_type(&field, "a `[title, [sentences]]` pair", found);
                let Value::Array(mut parts) = pair else {
                    return Err(pair_error(&pair));
                };
                if parts.len() != 2 {
                    return Err(pair_error(&Value::Array(parts)));
                }
                let sentences = parts.pop().unwrap_or_default();
                let title = parts.pop().unwrap_or_default();
                Ok(ContextParagraph {
                    title: string_field(&format!("{field}[0]"), title)?,
                    sentences: strings(&format!("{field}[1]"), sentences)?,
                })
            })
            .collect(),
        Value::Object(mut columns) => {
            let titles = match columns.remove("title") {
                Some(titles) => strings("context.title", titles)?,
                None => return Err(missing("context.title")),
            };
            let sentence_lists = match columns.remove("sentences") {
                Some(Value::Array(lists)) => lists,
                Some(other) => return Err(wrong_type("context.sentences", "an array", &other)),
                None => return Err(missing("context.sentences")),
            };
            if titles.len() != sentence_lists.len() {
                return Err(RecordError::Field {
                    field: "context".to_owned(),
                    problem: FieldProblem::LengthMismatch {
                        n_titles: titles.len(),
                        n_sentence_lists: sentence_lists.len(),
                    },
                });
            }
            titles
                .into_iter()
                .zip(sentence_lists)
                .enumerate()
                .map(|(idx, (title, sentences))| {
                    Ok(ContextParagraph {
                        title,
                        sentences: strings(&format!("context.sentences[{idx}]"), sentences)?,
                    })
                })
                .collect()
        }
        other => Err(wrong_type("context", "an array or an object", &other)),
    }
}

fn missing(field: &str) -> RecordError {
    RecordError::Field {
        field: field.to_owned(),
        problem: FieldProblem::Missing,
    }
}

fn strings(field: &str, value: Value) -> Result<Vec<String>, RecordError> {
    let Value::Array(items) = value else {
        return Err(wrong_type(field, "an array of strings", &value));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(idx, item)| string_field(&format!("{field}[{idx}]"), item))
        .collect()
}
