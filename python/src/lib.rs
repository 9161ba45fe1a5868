//! `react_docstore._native`: the Python module over the library's own types. A `Docstore` opens
//! a spec as `--docstore` does ([`DocstoreConfig::open_for`]); each `Explorer` is an [`Explore`]
//! session, as `react-docstore explore` runs one; `run_cli` is the command line itself
//! ([`react_docstore::cli::run`]). Nothing here searches, looks up or scores on its own.
//!
//! Every call that can take time (a search, opening an index, reading results, the command line)
//! runs with the GIL released, so Python threads run their searches in parallel.

use std::ffi::CString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex, PoisonError};

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyUserWarning};
use pyo3::prelude::*;

use react_docstore::agent::environment::EnvironmentError;
use react_docstore::apps::explore::Explore;
use react_docstore::base::metrics::AnswerScore;
use react_docstore::base::profile::Profile;
use react_docstore::docstore::{
    DEFAULT_USER_AGENT, DEFAULT_WIKI_URL, DocstoreConfig, DocstoreError as LibDocstoreError, DocstoreKind,
    DocstoreSource, OpenedDocstore, Opener, index::IndexError,
};
use react_docstore::record::evaluation::read_evaluation;
use react_docstore::tools::Toolbox;

create_exception!(
    react_docstore._native,
    DocstoreError,
    PyException,
    "A docstore could not be opened or searched: the message is the command line's."
);
create_exception!(
    react_docstore._native,
    SpecError,
    DocstoreError,
    "A docstore spec, profile or setting that is not valid (what `--docstore` would refuse)."
);
create_exception!(
    react_docstore._native,
    NotFoundError,
    DocstoreError,
    "The index directory or corpus file a spec names does not exist."
);
create_exception!(
    react_docstore._native,
    OfflineError,
    DocstoreError,
    "`offline=True` and the page is not in the cache."
);
create_exception!(
    react_docstore._native,
    NetworkError,
    DocstoreError,
    "Wikipedia (or the configured mirror) could not be reached or answered badly, after retries."
);
create_exception!(
    react_docstore._native,
    DocstoreIOError,
    DocstoreError,
    "A file of the docstore (index, corpus, page cache) could not be read or is malformed."
);
create_exception!(
    react_docstore._native,
    ResultsError,
    PyException,
    "A results file could not be read: the message names the file (and line)."
);

/// Who opens the docstore, as the refusal of `distractor` names it.
const OPENER: Opener = Opener::Command("react_docstore.Docstore");

/// Runs `work`; a panic in it (a defect: no input should reach one) becomes the error `Err` with
/// its message, raised as the call's own exception, instead of pyo3's `PanicException`, which
/// `except Exception` does not catch. The last line of defence: the bounds on every count read
/// (`react_docstore::base::limits`) are what keep an input from aborting the interpreter, which no
/// unwinding can catch.
fn guarded<T>(work: impl FnOnce() -> T) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).map_err(|payload| {
        let text = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|text| (*text).to_owned()))
            .unwrap_or_default();
        format!("internal error (a defect of react-docstore, please report it): {text}")
    })
}

/// The command line's message of an error: its chain joined by `: ` (as `error: {:#}`).
fn message(error: impl Into<anyhow::Error>) -> String {
    format!("{:#}", error.into())
}

fn docstore_error(error: LibDocstoreError) -> PyErr {
    let not_found = |source: &std::io::Error| source.kind() == std::io::ErrorKind::NotFound;
    let class = match &error {
        LibDocstoreError::Config(_) | LibDocstoreError::NoQuestionParagraphs { .. } => "spec",
        LibDocstoreError::NotCached { .. } => "offline",
        LibDocstoreError::Status { .. }
        | LibDocstoreError::WaitTooLong { .. }
        | LibDocstoreError::Network { .. }
        | LibDocstoreError::Unreachable { .. }
        | LibDocstoreError::NotAPage { .. }
        | LibDocstoreError::EmptyBody { .. }
        | LibDocstoreError::TooLarge { .. }
        | LibDocstoreError::Client(_) => "network",
        LibDocstoreError::CorpusFile { source, .. } if not_found(source) => "not found",
        LibDocstoreError::Index(IndexError::NoIndex { .. }) => "not found",
        LibDocstoreError::Index(IndexError::Read { source, .. }) if not_found(source) => "not found",
        LibDocstoreError::Shared(shared) => match shared.as_ref() {
            LibDocstoreError::NotCached { .. } => "offline",
            _ => "network",
        },
        _ => "io",
    };
    let text = message(error);
    match class {
        "spec" => SpecError::new_err(text),
        "offline" => OfflineError::new_err(text),
        "network" => NetworkError::new_err(text),
        "not found" => NotFoundError::new_err(text),
        _ => DocstoreIOError::new_err(text),
    }
}

fn environment_error(error: EnvironmentError) -> PyErr {
    match error {
        EnvironmentError::Docstore(error) => docstore_error(error),
        other => DocstoreError::new_err(message(other)),
    }
}

/// An opened docstore: a spec (`wikipedia`, `index:DIR`, `corpus:FILE`) under a profile, shared by
/// every explorer it gives.
#[pyclass(frozen, subclass, module = "react_docstore._native")]
struct Docstore {
    source: Arc<dyn DocstoreSource>,
    profile: Profile,
    spec: String,
    /// Live Wikipedia's HTTP client runs on it; `None` for an index or a corpus, whose searches
    /// run on the calling thread (as `explore` and `bench_index` run them).
    runtime: Option<Arc<tokio::runtime::Runtime>>,
}

#[pymethods]
impl Docstore {
    #[new]
    #[pyo3(signature = (spec, profile = "default", offline = false, cache_dir = None, wiki_url = None, user_agent = None))]
    fn new(
        py: Python<'_>,
        spec: String,
        profile: &str,
        offline: bool,
        cache_dir: Option<PathBuf>,
        wiki_url: Option<String>,
        user_agent: Option<String>,
    ) -> PyResult<Docstore> {
        let profile: Profile = profile.parse().map_err(SpecError::new_err)?;
        let kind: DocstoreKind = spec.parse().map_err(SpecError::new_err)?;
        // The command line's defaults: its options fall back on these variables.
        let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let config = DocstoreConfig {
            kind,
            wiki_url: wiki_url
                .or_else(|| env("REACT_WIKI_URL"))
                .unwrap_or_else(|| DEFAULT_WIKI_URL.to_owned()),
            cache_dir: cache_dir.or_else(|| env("REACT_CACHE_DIR").map(PathBuf::from)),
            offline,
            user_agent: user_agent
                .or_else(|| env("REACT_USER_AGENT"))
                .unwrap_or_else(|| DEFAULT_USER_AGENT.to_owned()),
            ..DocstoreConfig::new(profile)
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(|error| DocstoreError::new_err(format!("cannot start the async runtime: {error}")))?;
        // Opening an index or reading a corpus file takes time: other threads go on meanwhile.
        let opened = py.detach(|| {
            let _entered = runtime.enter();
            config.open_for(OPENER)
        });
        let opened = opened.map_err(docstore_error)?;
        let runtime = match opened {
            OpenedDocstore::Index { .. } => None,
            _ => Some(Arc::new(runtime)),
        };
        Ok(Docstore {
            source: opened.source(profile),
            profile,
            spec,
            runtime,
        })
    }

    /// A new explorer: its own page and Lookup cursor over this docstore.
    fn explorer(&self) -> Explorer {
        Explorer {
            session: Mutex::new(Explore::new(
                self.source.as_ref(),
                Toolbox::default(),
                self.profile,
            )),
            runtime: self.runtime.clone(),
        }
    }

    /// The spec given.
    #[getter]
    fn spec(&self) -> &str {
        &self.spec
    }

    /// `"paper"` or `"default"`.
    #[getter]
    fn profile(&self) -> &'static str {
        self.profile.as_str()
    }

    /// Which docstore answers, as run files record it: `{"kind": ..., "snapshot": ...}`.
    fn info(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let info = self.source.info();
        let dict = pyo3::types::PyDict::new(py);
        dict.set_item("kind", info.kind)?;
        dict.set_item("snapshot", info.snapshot)?;
        Ok(dict.into_any().unbind())
    }

    fn __repr__(&self) -> String {
        format!("Docstore({:?}, profile={:?})", self.spec, self.profile.as_str())
    }
}

/// One explorer: the page it has open and the Lookup cursor, as one question's agent has them.
#[pyclass(frozen, module = "react_docstore._native")]
struct Explorer {
    session: Mutex<Explore>,
    runtime: Option<Arc<tokio::runtime::Runtime>>,
}

impl Explorer {
    /// Runs `call` on the session with the GIL released. One explorer's calls take turns; a
    /// panic in an earlier call does not leave it unusable.
    fn with_session<T: Send>(
        &self,
        py: Python<'_>,
        call: impl AsyncFnOnce(&mut Explore) -> Result<T, EnvironmentError> + Send,
    ) -> PyResult<T> {
        py.detach(|| {
            guarded(|| {
                let mut session = self.session.lock().unwrap_or_else(PoisonError::into_inner);
                match &self.runtime {
                    Some(runtime) => runtime.block_on(call(&mut session)),
                    None => futures::executor::block_on(call(&mut session)),
                }
            })
        })
        .map_err(DocstoreError::new_err)?
        .map_err(environment_error)
    }
}

#[pymethods]
impl Explorer {
    /// `Search[entity]`: the observation, exactly as `react-docstore explore` shows it.
    fn search(&self, py: Python<'_>, entity: &str) -> PyResult<String> {
        self.with_session(py, async |session: &mut Explore| session.search(entity).await)
    }

    /// `Lookup[keyword]` on the page open, from the cursor.
    fn lookup(&self, py: Python<'_>, keyword: &str) -> PyResult<String> {
        self.with_session(py, async |session: &mut Explore| session.lookup(keyword).await)
    }

    /// One action written as the model writes it (`Search[...]`, `Lookup[...]`, `Finish[...]`,
    /// anything else): its observation.
    fn step(&self, py: Python<'_>, action: &str) -> PyResult<String> {
        self.with_session(py, async |session: &mut Explore| {
            session.run(action).await.map(|explored| explored.observation)
        })
    }
}

/// The official HotpotQA exact match of `prediction` against `gold`.
#[pyfunction]
fn exact_match(prediction: &str, gold: &str) -> bool {
    AnswerScore::new(prediction, gold).em
}

/// The official HotpotQA F1 of `prediction` against `gold`.
#[pyfunction]
fn f1(prediction: &str, gold: &str) -> f64 {
    AnswerScore::new(prediction, gold).f1
}

/// The runs of the results files `paths` name (files, directories of shards, comma lists), as
/// JSON texts: one evaluation, read as `score` reads it (`read_evaluation`: shards in their
/// selection's order, a run in two files kept once, other settings refused); what it lacks or
/// held twice is a `UserWarning` each, as `score` prints a `note:` each.
#[pyfunction]
fn read_results_json(py: Python<'_>, paths: Vec<PathBuf>) -> PyResult<Vec<String>> {
    let evaluation = py
        .detach(|| guarded(|| read_evaluation(&paths)))
        .map_err(ResultsError::new_err)?
        .map_err(|error| ResultsError::new_err(message(error)))?;
    let category = py.get_type::<PyUserWarning>();
    for gap in evaluation.gaps() {
        let text = CString::new(gap.replace('\0', "")).unwrap_or_default();
        PyErr::warn(py, category.as_any(), &text, 1)?;
    }
    evaluation
        .runs
        .iter()
        .map(|recorded| serde_json::to_string(&recorded.run))
        .collect::<Result<_, _>>()
        .map_err(|error| ResultsError::new_err(error.to_string()))
}

/// Runs the command line on `argv` (the program name first), as the binary does, with the GIL
/// released: its exit code (101 after a panic, as the binary's; the panic's message is on stderr).
#[pyfunction]
fn run_cli(py: Python<'_>, argv: Vec<std::ffi::OsString>) -> u8 {
    let Ok(code) = py.detach(|| guarded(|| react_docstore::cli::run(argv))) else {
        return 101;
    };
    // `ExitCode` has no getter: the codes the command line returns are small numbers.
    (0..=255u8)
        .find(|&number| ExitCode::from(number) == code)
        .unwrap_or(1)
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = module.py();
    module.add_class::<Docstore>()?;
    module.add_class::<Explorer>()?;
    module.add_function(wrap_pyfunction!(exact_match, module)?)?;
    module.add_function(wrap_pyfunction!(f1, module)?)?;
    module.add_function(wrap_pyfunction!(read_results_json, module)?)?;
    module.add_function(wrap_pyfunction!(run_cli, module)?)?;
    module.add("DocstoreError", py.get_type::<DocstoreError>())?;
    module.add("SpecError", py.get_type::<SpecError>())?;
    module.add("NotFoundError", py.get_type::<NotFoundError>())?;
    module.add("OfflineError", py.get_type::<OfflineError>())?;
    module.add("NetworkError", py.get_type::<NetworkError>())?;
    module.add("DocstoreIOError", py.get_type::<DocstoreIOError>())?;
    module.add("ResultsError", py.get_type::<ResultsError>())?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
