//! `Manifest`: what an index holds — written last by a build, so an index without one is
//! incomplete and never opens.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::IndexError;
use super::formats::DumpFormat;
use crate::base::fsutil::atomic_write;

/// The manifest's file name inside an index directory.
pub const MANIFEST_FILE: &str = "react-docstore-index.json";
/// The manifest's `format` field: changes when an index of this version cannot be read.
/// v3: one segment, its documents in dump order (the ranked search's ties read no fast field),
/// and a table of folded titles ([`super::titles`]) instead of two title terms a page.
pub const INDEX_FORMAT: &str = "react-docstore.index.v3";
/// v2, still read: its title terms (`title_exact`, `title_folded`) find a page by title.
pub const INDEX_FORMAT_V2: &str = "react-docstore.index.v2";

/// One source a build read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceInfo {
    /// As given on the command line.
    pub path: PathBuf,
    /// Bytes on disk (a directory: its files together).
    pub bytes: u64,
    /// The format it was read as.
    pub format: Option<DumpFormat>,
}

/// What an index holds and how it was built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: String,
    /// The dump formats read, in source order, without repeats.
    pub dump_formats: Vec<DumpFormat>,
    pub sources: Vec<SourceInfo>,
    pub pages: u64,
    /// Malformed records skipped.
    pub malformed: u64,
    /// Derived from every page's title, text and number in the dump: two builds of the same
    /// pages in the same order have the same snapshot, whatever the machine, the number of
    /// threads or how the dump is packaged (one file, a tar of compressed members, a directory).
    pub snapshot: String,
    /// When the build finished (HTTP date, UTC).
    pub built: String,
    pub build_seconds: f64,
    /// `react-docstore 0.1.0`.
    pub tool: String,
    /// The layout of the index's table of title-word neighbours
    /// (`neighbours::NEIGHBOUR_TABLE_FORMAT`), absent from an index built before it:
    /// such an index finds them with a Levenshtein automaton, as it did, and a release before the
    /// table reads an index that has one (it ignores the field and the file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub neighbour_table: Option<String>,
}

impl Manifest {
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(MANIFEST_FILE)
    }

    /// Reads the manifest of the index at `dir`.
    pub fn read(dir: &Path) -> Result<Manifest, IndexError> {
        match std::fs::metadata(dir) {
            Ok(metadata) if metadata.is_dir() => {}
            Ok(_) => return Err(IndexError::NotAnIndex { dir: dir.to_owned() }),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(IndexError::NoIndex { dir: dir.to_owned() });
            }
            Err(source) => return Err(read_error(dir, dir, source)),
        }
        let path = Manifest::path(dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            // Tantivy's own files without a manifest: a build that did not finish.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && holds_index_files(dir) => {
                return Err(IndexError::Incomplete { dir: dir.to_owned() });
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                return Err(IndexError::NotAnIndex { dir: dir.to_owned() });
            }
            Err(source) => return Err(read_error(dir, &path, source)),
        };
        let manifest: Manifest = serde_json::from_str(&text).map_err(|source| IndexError::Manifest {
            path: path.clone(),
            source,
        })?;
        if manifest.format != INDEX_FORMAT && manifest.format != INDEX_FORMAT_V2 {
            return Err(IndexError::Version {
                dir: dir.to_owned(),
                found: manifest.format,
            });
        }
        Ok(manifest)
    }

    /// Writes the manifest into `dir` durably ([`atomic_write`]).
    pub fn write(&self, dir: &Path) -> Result<(), IndexError> {
        let path = Manifest::path(dir);
        let write_error = |source| IndexError::Write {
            path: path.clone(),
            source,
        };
        let json =
            serde_json::to_string_pretty(self).map_err(|error| write_error(std::io::Error::other(error)))?;
        atomic_write(&path, (json + "\n").as_bytes()).map_err(write_error)?;
        crate::base::fsutil::remove_stale_temporaries(&path);
        Ok(())
    }
}

/// Whether `dir` holds the files tantivy writes first (its index metadata).
fn holds_index_files(dir: &Path) -> bool {
    ["meta.json", ".managed.json"]
        .iter()
        .any(|name| dir.join(name).symlink_metadata().is_ok())
}

/// A failure to read `path` of the index at `dir`: one the user may not read says who can fix it.
pub(super) fn read_error(dir: &Path, path: &Path, source: std::io::Error) -> IndexError {
    match source.kind() {
        std::io::ErrorKind::PermissionDenied => IndexError::Unreadable {
            dir: dir.to_owned(),
            path: path.to_owned(),
            source,
        },
        _ => IndexError::Read {
            path: path.to_owned(),
            source,
        },
    }
}

/// What `index info` shows: the manifest, where the index is and what it takes on disk.
#[derive(Debug, Clone, Serialize)]
pub struct IndexInfo {
    pub dir: PathBuf,
    /// Bytes of the index directory.
    pub index_bytes: u64,
    #[serde(flatten)]
    pub manifest: Manifest,
}

impl IndexInfo {
    pub fn read(dir: &Path) -> Result<IndexInfo, IndexError> {
        let manifest = Manifest::read(dir)?;
        let index_bytes = std::fs::read_dir(dir)
            .map_err(|source| IndexError::Read {
                path: dir.to_owned(),
                source,
            })?
            .flatten()
            .filter_map(|entry| entry.metadata().ok())
            .filter(|metadata| metadata.is_file())
            .map(|metadata| metadata.len())
            .sum();
        Ok(IndexInfo {
            dir: dir.to_owned(),
            index_bytes,
            manifest,
        })
    }

    pub fn write_text(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        let manifest = &self.manifest;
        let formats: Vec<&str> = manifest
            .dump_formats
            .iter()
            .map(|format| format.as_str())
            .collect();
        let source_bytes: u64 = manifest.sources.iter().map(|source| source.bytes).sum();
        writeln!(out, "index     {}", self.dir.display())?;
        writeln!(out, "format    {} ({})", formats.join(", "), manifest.format)?;
        writeln!(
            out,
            "pages     {} ({} malformed records skipped)",
            thousands(manifest.pages),
            thousands(manifest.malformed)
        )?;
        writeln!(out, "snapshot  {}", manifest.snapshot)?;
        for (idx, source) in manifest.sources.iter().enumerate() {
            writeln!(
                out,
                "{}{} ({}, {})",
                if idx == 0 { "sources   " } else { "          " },
                source.path.display(),
                source.format.map_or("no pages", |format| format.as_str()),
                human_bytes(source.bytes)
            )?;
        }
        writeln!(
            out,
            "built     {} in {:.1} s by {}",
            manifest.built, manifest.build_seconds, manifest.tool
        )?;
        let ratio = if source_bytes == 0 {
            String::new()
        } else {
            format!(
                ", {:.2}× the sources",
                self.index_bytes as f64 / source_bytes as f64
            )
        };
        writeln!(out, "size      {} on disk{ratio}", human_bytes(self.index_bytes))
    }
}

/// `1234567` → `1,234,567`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (idx, digit) in digits.chars().enumerate() {
        if idx > 0 && (digits.len() - idx).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// `1536` → `1.5 KiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit < UNITS.len() - 1 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A size as `--memory` takes it: `512M`, `2G`, `1.5G`, `300000000` (bytes); K, M, G are binary.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let text = text.trim();
    let (number, multiplier) = match text.char_indices().last() {
        Some((idx, unit)) if unit.is_ascii_alphabetic() => {
            let multiplier: u64 = match unit.to_ascii_uppercase() {
                'K' => 1 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                _ => return Err(format!("`{text}`: expected a size such as 512M or 2G")),
            };
            (&text[..idx], multiplier)
        }
        _ => (text, 1),
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("`{text}`: expected a size such as 512M or 2G"))?;
    if !value.is_finite() || value <= 0.0 || value * multiplier as f64 > 64.0 * (1u64 << 30) as f64 {
        return Err(format!("`{text}`: expected a size between 1 byte and 64G"));
    }
    Ok((value * multiplier as f64) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("2g"), Ok(2 << 30));
        assert_eq!(parse_size("1.5K"), Ok(1536));
        assert_eq!(parse_size("300000000"), Ok(300_000_000));
        for bad in ["", "M", "12X", "-1G", "NaN", "1000G"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn figures_read_well() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
    }
}
