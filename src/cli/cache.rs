//! `cache`: what the reply cache (`--cache`) holds, and removing all or the old part of it. Only
//! the cache's entries (and its writers' temporary files) are touched: a directory that is no
//! reply cache is refused, and other files among the entries are left and named.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use crate::base::output;
use crate::llm::cache::{self, CacheError, CacheInfo, Removed};

use super::options::{PageCacheArgs, default_replies_dir};

#[derive(clap::Subcommand)]
pub enum CacheCommand {
    /// Where the reply cache is, how many replies it holds, their size and age.
    Info(InfoArgs),
    /// Remove every reply.
    Clear(CacheDirArgs),
    /// Remove the replies written longer ago than `--older-than`.
    Prune(PruneArgs),
}

/// Which reply cache.
#[derive(clap::Args)]
pub struct CacheDirArgs {
    /// The reply cache, as `--cache=DIR` named it [default: `replies/` in the page cache
    /// directory].
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
    #[command(flatten)]
    page_cache: PageCacheArgs,
}

impl CacheDirArgs {
    fn dir(&self) -> PathBuf {
        self.dir
            .clone()
            .unwrap_or_else(|| default_replies_dir(self.page_cache.cache_dir.as_deref()))
    }

    /// What the directory holds; the default one, before anything was cached there, holds
    /// nothing (a directory named on the command line must exist).
    fn info(&self) -> Result<(PathBuf, CacheInfo), CacheError> {
        let dir = self.dir();
        match cache::cache_info(&dir) {
            Err(CacheError::Missing { .. }) if self.dir.is_none() => Ok((dir, CacheInfo::default())),
            info => Ok((dir, info?)),
        }
    }

    /// Removes its entries older than `older_than` (all with `None`), as `info` reads it.
    fn remove(&self, older_than: Option<Duration>) -> Result<(PathBuf, Removed), CacheError> {
        let dir = self.dir();
        match cache::remove_entries(&dir, older_than) {
            Err(CacheError::Missing { .. }) if self.dir.is_none() => Ok((dir, Removed::default())),
            removed => Ok((dir, removed?)),
        }
    }
}

#[derive(clap::Args)]
pub struct InfoArgs {
    #[command(flatten)]
    dir: CacheDirArgs,
    /// Print it as one JSON object.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
pub struct PruneArgs {
    #[command(flatten)]
    dir: CacheDirArgs,
    /// The age past which a reply goes: a number and a unit, `s`, `m`, `h`, `d` or `w` (`7d`,
    /// `12h`).
    #[arg(long, value_name = "AGE", value_parser = parse_age)]
    older_than: Duration,
}

pub fn run(command: CacheCommand) -> anyhow::Result<ExitCode> {
    let mut stdout = output::stdout();
    match command {
        CacheCommand::Info(args) => {
            let (dir, info) = args.dir.info()?;
            if args.json {
                let json = serde_json::json!({"dir": dir, "info": info});
                writeln!(stdout, "{json}")?;
            } else {
                write_info(&mut stdout, &dir, &info)?;
            }
        }
        CacheCommand::Clear(args) => {
            let (dir, removed) = args.remove(None)?;
            writeln!(
                stdout,
                "removed        {} from {}",
                replies(removed.entries),
                dir.display()
            )?;
            write_left(&mut stdout, &removed)?;
        }
        CacheCommand::Prune(args) => {
            let (dir, removed) = args.dir.remove(Some(args.older_than))?;
            writeln!(
                stdout,
                "removed        {} older than {} from {}",
                replies(removed.entries),
                age(args.older_than),
                dir.display()
            )?;
            write_left(&mut stdout, &removed)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn write_info(out: &mut dyn Write, dir: &std::path::Path, info: &CacheInfo) -> std::io::Result<()> {
    writeln!(out, "directory      {}", dir.display())?;
    writeln!(out, "replies        {}, {} bytes", info.entries, info.bytes)?;
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    if let (Some(oldest), Some(newest)) = (info.oldest, info.newest) {
        let ago = |time: u64| age(Duration::from_secs(now.saturating_sub(time)));
        let (oldest, newest) = (ago(oldest), ago(newest));
        if oldest == newest {
            writeln!(out, "written        {newest} ago")?;
        } else {
            writeln!(out, "written        {oldest} ago to {newest} ago")?;
        }
    } else {
        writeln!(out, "written        nothing yet")?;
    }
    if info.temporary_files > 0 {
        writeln!(
            out,
            "temporary      {} of writers (`cache prune` removes those whose writer is no longer running)",
            counted(info.temporary_files, "file", "files")
        )?;
    }
    if info.other_files > 0 {
        writeln!(
            out,
            "other files    {}, not replies (`clear` and `prune` leave them): {}",
            info.other_files,
            cache::named(&info.others, info.other_files)
        )?;
    }
    Ok(())
}

/// What `clear` and `prune` removed besides replies, and what they left.
fn write_left(out: &mut dyn Write, removed: &Removed) -> std::io::Result<()> {
    if removed.temporary_files > 0 {
        writeln!(
            out,
            "removed        {} of writers no longer running",
            counted(removed.temporary_files, "temporary file", "temporary files")
        )?;
    }
    if removed.other_files > 0 {
        writeln!(
            out,
            "left           {}, not replies: {}",
            counted(removed.other_files, "other file", "other files"),
            cache::named(&removed.others, removed.other_files)
        )?;
    }
    Ok(())
}

/// `1 file`, `2 files`.
fn counted(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn replies(n: u64) -> String {
    counted(n, "reply", "replies")
}

/// `7d`, `12h`, `90s`: the largest unit that divides it whole (whole hours when none does).
fn age(duration: Duration) -> String {
    let secs = duration.as_secs();
    for (unit, size) in [("d", 86_400), ("h", 3600), ("m", 60)] {
        if secs >= size && secs.is_multiple_of(size) {
            return format!("{}{unit}", secs / size);
        }
    }
    if secs >= 3600 {
        return format!("{}h", secs / 3600);
    }
    format!("{secs}s")
}

/// `--older-than`: a whole number and a unit (`s`, `m`, `h`, `d`, `w`).
fn parse_age(text: &str) -> Result<Duration, String> {
    let error = || format!("expected a number and a unit such as `7d`, `12h` or `30m`, not `{text}`");
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(error)?;
    let (number, unit) = text.split_at(split);
    let number: u64 = number.parse().map_err(|_| error())?;
    let size = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(error()),
    };
    number
        .checked_mul(size)
        .map(Duration::from_secs)
        .ok_or_else(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_parse_with_their_unit() {
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_age("12h"), Ok(Duration::from_secs(12 * 3600)));
        assert_eq!(parse_age("30m"), Ok(Duration::from_secs(1800)));
        assert_eq!(parse_age("2w"), Ok(Duration::from_secs(14 * 86_400)));
        assert_eq!(parse_age("0s"), Ok(Duration::ZERO));
        for bad in ["7", "d", "7x", "-1d", "1.5d", "99999999999999999999d"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
        assert_eq!(age(Duration::from_secs(7 * 86_400)), "7d");
        assert_eq!(age(Duration::from_secs(3 * 86_400)), "3d");
        assert_eq!(age(Duration::from_secs(45)), "45s");
    }

    /// Replies all written at one time are said to be written then, once.
    #[test]
    fn one_writing_time_is_said_once() {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        let info = CacheInfo {
            entries: 1,
            bytes: 10,
            oldest: Some(now),
            newest: Some(now),
            ..CacheInfo::default()
        };
        let mut out = Vec::new();
        write_info(&mut out, std::path::Path::new("replies"), &info).unwrap();
        let text = String::from_utf8(out).unwrap();
        let written = text.lines().find(|line| line.starts_with("written")).unwrap();
        assert!(written.ends_with("s ago") && !written.contains(" to "), "{text}");
    }
}
