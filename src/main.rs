//! The `react-docstore` binary: the command line of [`react_docstore::cli`].

fn main() -> std::process::ExitCode {
    react_docstore::cli::main()
}
