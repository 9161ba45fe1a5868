//! Two Python behaviours the `paper` profile reproduces byte for byte: `wikienv.py`'s `clean_str`
//! and `repr()` of a list of strings (the `Similar: [...]` list).

/// `p.encode().decode("unicode-escape").encode("latin1").decode("utf-8")`.
///
/// Escape sequences in the text are decoded (`\t` becomes a TAB, `\n` a newline, `\xe9` a byte),
/// the result is read back as UTF-8. Where Python raises (a malformed `\x`, a `\u` above U+00FF,
/// bytes that are not UTF-8, a trailing backslash) the reference crashed; we keep the text as it
/// was, as the paper reproduction does. `\N{name}` is not resolved (it would need Unicode's name
/// table): such text is kept as it was too.
pub fn clean_str(text: &str) -> String {
    if !text.contains('\\') {
        // Without escapes the round trip is the identity: UTF-8 bytes read as Latin-1, then
        // encoded back to the same bytes and decoded as UTF-8.
        return text.to_owned();
    }
    decode_unicode_escape(text.as_bytes())
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_else(|| text.to_owned())
}

/// Python's `unicode-escape` decoder followed by the Latin-1 encoder: `None` where either raises.
fn decode_unicode_escape(input: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(input.len());
    let mut idx = 0;
    while idx < input.len() {
        let byte = input[idx];
        if byte != b'\\' {
            out.push(byte);
            idx += 1;
            continue;
        }
        let Some(&escape) = input.get(idx + 1) else {
            return None; // "\\ at end of string"
        };
        idx += 2;
        match escape {
            b'\n' => {}
            b'\\' => out.push(b'\\'),
            b'\'' => out.push(b'\''),
            b'"' => out.push(b'"'),
            b'a' => out.push(0x07),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b't' => out.push(b'\t'),
            b'v' => out.push(0x0b),
            b'0'..=b'7' => {
                let mut value = u32::from(escape - b'0');
                for _ in 0..2 {
                    match input.get(idx) {
                        Some(&digit @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(digit - b'0');
                            idx += 1;
                        }
                        _ => break,
                    }
                }
                out.push(latin1(value)?);
            }
            b'x' | b'u' | b'U' => {
                let digits = match escape {
                    b'x' => 2,
                    b'u' => 4,
                    _ => 8,
                };
                let hex = input.get(idx..idx + digits)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None; // "truncated \xXX escape"
                }
                let value = u32::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok()?;
                idx += digits;
                out.push(latin1(value)?);
            }
            b'N' => return None,
            other => {
                // An unknown escape stays as written, backslash included.
                out.push(b'\\');
                out.push(other);
            }
        }
    }
    Some(out)
}

/// The Latin-1 encoder: code points above U+00FF raise.
fn latin1(value: u32) -> Option<u8> {
    u8::try_from(value).ok()
}

/// Python's `repr()` of a list of strings: `['a', "b's"]`.
pub fn repr_list<S: AsRef<str>>(items: &[S]) -> String {
    let mut out = String::from("[");
    for (idx, item) in items.iter().enumerate() {
        if idx > 0 {
            out.push_str(", ");
        }
        out.push_str(&repr_str(item.as_ref()));
    }
    out.push(']');
    out
}

/// Python's `repr()` of a string: single quotes unless the text holds `'` and no `"`; backslash,
/// the quote, `\n`, `\r`, `\t` escaped; other non-printable characters as `\xhh`, `\uhhhh` or
/// `\Uhhhhhhhh`.
pub fn repr_str(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if !is_printable(c) => {
                let code = u32::from(c);
                if code < 0x100 {
                    out.push_str(&format!("\\x{code:02x}"));
                } else if code < 0x10000 {
                    out.push_str(&format!("\\u{code:04x}"));
                } else {
                    out.push_str(&format!("\\U{code:08x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// Python's `str.isprintable()` for one character: not in categories Cc, Cf, Cs, Co, Cn, Zl, Zp,
/// or Zs other than the space. Unassigned code points (Cn) are recognised only as the
/// noncharacters; real titles hold none of the others.
fn is_printable(c: char) -> bool {
    let code = u32::from(c);
    let separator = matches!(
        code,
        0xa0 | 0x1680 | 0x2000..=0x200a | 0x2028 | 0x2029 | 0x202f | 0x205f | 0x3000
    );
    let control = c.is_control();
    let format = matches!(
        code,
        0xad | 0x600..=0x605
            | 0x61c
            | 0x6dd
            | 0x70f
            | 0x890..=0x891
            | 0x8e2
            | 0x180e
            | 0x200b..=0x200f
            | 0x202a..=0x202e
            | 0x2060..=0x2064
            | 0x2066..=0x206f
            | 0xfeff
            | 0xfff9..=0xfffb
            | 0x110bd
            | 0x110cd
            | 0x13430..=0x1343f
            | 0x1bca0..=0x1bca3
            | 0x1d173..=0x1d17a
            | 0xe0001
            | 0xe0020..=0xe007f
    );
    let private = matches!(code, 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd);
    let nonchar = matches!(code, 0xfdd0..=0xfdef) || (code & 0xfffe) == 0xfffe;
    !(separator || control || format || private || nonchar)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_str_decodes_escapes_like_python() {
        // Expected values from CPython 3.11 running wikienv.py's clean_str (guarded).
        let cases: &[(&str, &str)] = &[
            ("plain text", "plain text"),
            ("Café – naïve", "Café – naïve"),
            (r"a\tb", "a\tb"),
            (r"x\ny", "x\ny"),
            (r"{\displaystyle \alpha }", "{\\displaystyle \x07lpha }"),
            (r"\frac{1}{2}", "\x0crac{1}{2}"),
            (r"C:\xyz", r"C:\xyz"),
            (r"\u00e9t\u00e9", r"\u00e9t\u00e9"),
            (r"\u4e2d", r"\u4e2d"),
            (r"\xc3\xa9", "é"),
            (r"\xe9", r"\xe9"),
            (r"end\", r"end\"),
            (r"\101\x42", "AB"),
            (r"\N{BULLET}", r"\N{BULLET}"),
            (r"keep \d and \\ and \q", "keep \\d and \\ and \\q"),
            ("Café \\t", "Café \t"),
        ];
        for (input, expected) in cases {
            assert_eq!(clean_str(input), *expected, "clean_str({input:?})");
        }
    }

    #[test]
    fn repr_follows_python_quoting() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "[]"),
            (
                &["Colorado orogeny", "Laramide orogeny"],
                "['Colorado orogeny', 'Laramide orogeny']",
            ),
            (&["Arthur's Magazine"], "[\"Arthur's Magazine\"]"),
            (&["He said \"hi\""], "['He said \"hi\"']"),
            (&["both ' and \""], "['both \\' and \"']"),
            (&["back\\slash"], "['back\\\\slash']"),
            (
                &["nb\u{a0}sp", "zero\u{200b}width", "tab\t"],
                "['nb\\xa0sp', 'zero\\u200bwidth', 'tab\\t']",
            ),
            (&["Ünïcödé – 東京"], "['Ünïcödé – 東京']"),
        ];
        for (items, expected) in cases {
            assert_eq!(repr_list(items), *expected);
        }
    }
}
