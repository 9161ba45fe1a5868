//! `digest`: the SHA-256 fingerprints run and results files record (`sha256:` and 64 hex digits)
//! — of few-shot prompts, question files, drawn examples, secret option values — and the one way
//! a cache names its files ([`file_key`]: the reply cache, the page cache, the WebSearch cache).

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes`, as runs record it: `sha256:` and 64 hex digits.
pub fn digest(bytes: &[u8]) -> String {
    hex_digest(Sha256::digest(bytes).as_slice())
}

/// The SHA-256 of a file's bytes, read in pieces (a question file may be large).
pub fn file_digest(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 16];
    loop {
        let n_read = file.read(&mut buffer)?;
        if n_read == 0 {
            break;
        }
        hasher.update(&buffer[..n_read]);
    }
    Ok(hex_digest(hasher.finalize().as_slice()))
}

/// The name every cache gives the file of an entry keyed by `key`: the key's SHA-256 in 64
/// lowercase hex digits (the same on every platform and release; a reader checks the key the
/// entry holds, so a file copied under another name is no hit).
pub fn file_key(key: &[u8]) -> String {
    let mut named = digest(key);
    named.drain(.."sha256:".len());
    named
}

/// `sha256:` and `hash` in hex.
pub(crate) fn hex_digest(hash: &[u8]) -> String {
    use std::fmt::Write;
    let mut text = String::with_capacity(7 + 2 * hash.len());
    text.push_str("sha256:");
    for byte in hash {
        // invariant: writing to a String never fails
        write!(text, "{byte:02x}").expect("a String takes any text");
    }
    text
}
