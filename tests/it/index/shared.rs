//! One index for a whole lab: built readable by everyone the umask allows, opened without writing
//! anything (no lock file), so another user, a read-only file system and twenty processes at once
//! all open and search it.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

use react_docstore::base::profile::Profile;
use react_docstore::docstore::index::IndexSource;

use super::{build_index, search};

/// What the tests search and what the index answers.
const ENTITY: &str = "Search[Special Air Service]";
const FOUND: &str =
    "Observation: The Special Air Service (SAS) is a special forces unit of the British Army.";

/// An index of `pages.jsonl` in a directory every user may enter.
fn shared_index() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let report = build_index(dir.path(), "wiki", &["pages.jsonl"]);
    (dir, report.dir)
}

/// `explore --docstore index:DIR ENTITY` as this process's user.
fn explore(dir: &Path) -> Command {
    let mut command = crate::binary();
    command.args([
        "explore",
        "--docstore",
        &format!("index:{}", dir.display()),
        ENTITY,
    ]);
    command
}

/// A user other than this process's, when it can switch to one: `nobody`, by `runuser` or
/// `setpriv` (root only). `None` with the reason when it cannot.
///
/// The program runs from `shared`, a directory every user may enter: where the build put it
/// (root's `~/.cache`, say) another user may not reach.
fn as_nobody(command: &Command, shared: &Path) -> Result<Command, &'static str> {
    let root = std::fs::metadata("/proc/self").is_ok_and(|proc| proc.uid() == 0);
    if !root {
        return Err("not root: cannot switch to another user");
    }
    let program = reachable_copy(Path::new(command.get_program()), shared);
    let args: Vec<_> = command.get_args().map(|arg| arg.to_owned()).collect();
    let envs: Vec<_> = command
        .get_envs()
        .map(|(key, value)| (key.to_owned(), value.map(|value| value.to_owned())))
        .collect();
    let mut wrapped = if Command::new("runuser").arg("--help").output().is_ok() {
        let mut runuser = Command::new("runuser");
        runuser.args(["-u", "nobody", "--"]);
        runuser
    } else if Command::new("setpriv").arg("--help").output().is_ok() {
        let mut setpriv = Command::new("setpriv");
        setpriv.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        setpriv
    } else {
        return Err("neither runuser nor setpriv is installed");
    };
    wrapped.arg(program).args(args);
    for (key, value) in envs {
        match value {
            Some(value) => wrapped.env(key, value),
            None => wrapped.env_remove(key),
        };
    }
    Ok(wrapped)
}

/// `program` in `shared` (linked where one file system holds both, else copied), runnable by
/// every user.
fn reachable_copy(program: &Path, shared: &Path) -> PathBuf {
    let copy = shared.join(program.file_name().unwrap());
    if !copy.exists() && std::fs::hard_link(program, &copy).is_err() {
        std::fs::copy(program, &copy).unwrap();
    }
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    copy
}

#[track_caller]
fn assert_found(output: &Output, who: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{who}: {stderr}");
    assert!(stdout.contains(FOUND), "{who}: {stdout}");
}

/// Every entry of `dir` (the directory itself under `.`): its mode, size and modification time.
fn listing(dir: &Path) -> BTreeMap<String, (u32, u64, SystemTime)> {
    let entry = |metadata: std::fs::Metadata| {
        (
            metadata.permissions().mode(),
            metadata.len(),
            metadata.modified().unwrap(),
        )
    };
    let mut listing = BTreeMap::from([(".".to_owned(), entry(std::fs::metadata(dir).unwrap()))]);
    for file in std::fs::read_dir(dir).unwrap() {
        let file = file.unwrap();
        listing.insert(
            file.file_name().to_string_lossy().into_owned(),
            entry(file.metadata().unwrap()),
        );
    }
    listing
}

/// A copy of the index at `index` in `dir/name`, made read-only (`chmod -R a-w`).
fn read_only_copy(index: &Path, dir: &Path, name: &str) -> PathBuf {
    let copy = dir.join(name);
    std::fs::create_dir(&copy).unwrap();
    for file in std::fs::read_dir(index).unwrap() {
        let file = file.unwrap();
        std::fs::copy(file.path(), copy.join(file.file_name())).unwrap();
        std::fs::set_permissions(
            copy.join(file.file_name()),
            std::fs::Permissions::from_mode(0o444),
        )
        .unwrap();
    }
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o555)).unwrap();
    copy
}

#[test]
fn a_built_index_is_readable_by_everyone_the_umask_allows_and_holds_no_lock_file() {
    let (dir, index) = shared_index();
    // A file created as usual gets the mode the umask allows.
    let probe = dir.path().join("probe");
    std::fs::File::create(&probe).unwrap();
    let allowed = std::fs::metadata(&probe).unwrap().permissions().mode() & 0o777;
    for (name, (mode, _, _)) in listing(&index) {
        assert!(!name.ends_with(".lock"), "a lock file is left: {name}");
        if name != "." {
            assert_eq!(
                mode & 0o777,
                allowed,
                "{name}: {:o}, expected {allowed:o}",
                mode & 0o777
            );
        }
    }
}

#[test]
fn opening_and_searching_an_index_writes_nothing() {
    let (_dir, index) = shared_index();
    let before = listing(&index);
    let mut explorer = IndexSource::open(&index, Profile::Default).unwrap().explorer();
    assert!(search(&mut explorer, "Special Air Service").starts_with("The Special Air Service"));
    drop(explorer);
    assert_found(&explore(&index).output().unwrap(), "the command");
    assert_eq!(listing(&index), before, "the index directory changed");
}

#[test]
fn another_user_and_twenty_processes_at_once_open_a_read_only_copy() {
    let (dir, index) = shared_index();
    let copy = read_only_copy(&index, dir.path(), "read-only");
    let before = listing(&copy);
    // Root ignores permission bits: the copy is read-only for `nobody` (or any user but root).
    let shared = dir.path();
    if let Err(why) = as_nobody(&explore(&copy), shared) {
        eprintln!("the processes run as this user, not root, for whom the copy is read-only: {why}");
    }
    let command = |dir: &Path| as_nobody(&explore(dir), shared).unwrap_or_else(|_| explore(dir));
    let children: Vec<_> = (0..20)
        .map(|_| {
            command(&copy)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (idx, child) in children.into_iter().enumerate() {
        assert_found(&child.wait_with_output().unwrap(), &format!("process {idx}"));
    }
    assert_eq!(listing(&copy), before, "the read-only copy changed");

    // The original, which only its builder may write, for another user.
    match as_nobody(&explore(&index), shared) {
        Ok(mut command) => assert_found(&command.output().unwrap(), "nobody"),
        Err(why) => eprintln!("skipped: another user opening the index: {why}"),
    }
}

#[test]
fn an_index_on_a_read_only_mount_opens() {
    let (dir, index) = shared_index();
    const MOUNTED: &str = "mounted read-only";
    let mount = dir.path().join("mount");
    std::fs::create_dir(&mount).unwrap();
    // A read-only bind mount in a mount namespace of its own: gone with the process.
    let script = format!(
        "mount --bind -o ro '{}' '{}' || exit 99; echo {MOUNTED} >&2; exec \"$@\"",
        index.display(),
        mount.display()
    );
    let explore = explore(&mount);
    let output = Command::new("unshare")
        .args(["--mount", "sh", "-c", &script, "sh"])
        .arg(explore.get_program())
        .args(explore.get_args())
        .env("NO_COLOR", "1")
        .output();
    match output {
        Ok(output) if String::from_utf8_lossy(&output.stderr).starts_with(MOUNTED) => {
            assert_found(&output, "a read-only mount")
        }
        _ => eprintln!("skipped: no read-only bind mount here (needs unshare and mount rights)"),
    }
}

/// Makes `file` of a shared index readable by its owner only, then checks that another user
/// opening the index is told which file and how its owner shares it.
fn another_user_is_told_who_can_share(file: &str) {
    let (dir, index) = shared_index();
    std::fs::set_permissions(index.join(file), std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut command = match as_nobody(&explore(&index), dir.path()) {
        Ok(command) => command,
        Err(why) => {
            eprintln!("skipped: another user opening the index: {why}");
            return;
        }
    };
    let output = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "error: cannot read `{0}/{file}` of index `{0}`: its owner can let everyone read it with `chmod -R a+rX {0}`: Permission denied (os error 13)",
            index.display()
        )
    );
}

#[test]
fn an_index_another_user_may_not_read_says_who_can_share_it() {
    // As an index of an earlier version was written: tantivy's bookkeeping readable by its owner only.
    another_user_is_told_who_can_share(".managed.json");
}

#[test]
fn a_title_table_another_user_may_not_read_says_who_can_share_it() {
    another_user_is_told_who_can_share("react-docstore-titles.sstable");
}
