//! Python behaviours the `paper` profile reproduces byte for byte: `wikienv.py`'s `clean_str`,
//! `repr()` of a list of strings (the `Similar: [...]` list), and `html.unescape` with HTML5's
//! named character references (which BeautifulSoup's `html.parser` builder relies on).

use std::borrow::Cow;

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

/// The expansion of an HTML5 named character reference, looked up by its exact name with or
/// without its `;` (BeautifulSoup's `HTML_ENTITY_TO_CHARACTER`): all 2,231 of HTML5's names,
/// from htmlize's copy of the WHATWG table.
pub fn html5_entity(name: &str) -> Option<&'static str> {
    entity_named(&format!("{name};")).or_else(|| entity_named(name))
}

/// Python's `html.unescape`: every `&#digits;`, `&#xhex;` and named reference (semicolon
/// optional) decoded as CPython does — numeric references 0x80–0x9F through Windows-1252, NUL,
/// surrogates and values past U+10FFFF as U+FFFD, control characters and non-characters
/// removed; a named reference by its exact HTML5 name, else by the longest name that prefixes
/// it (`&ampx` → `&x`, `&notit;` → `¬it;`); anything else kept as written.
pub fn html_unescape(text: &str) -> Cow<'_, str> {
    if !text.contains('&') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        let after = &rest[amp + 1..];
        match unescape_reference(after) {
            Some((expansion, consumed)) => {
                out.push_str(&expansion);
                rest = &after[consumed..];
            }
            None => {
                out.push('&');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

/// The reference at the start of `after` (the text after a `&`), as `html.unescape`'s
/// `_charref` pattern reads it: its expansion and the bytes it spans.
fn unescape_reference(after: &str) -> Option<(Cow<'static, str>, usize)> {
    if let Some(numeric) = after.strip_prefix('#') {
        let (number, consumed) = numeric_reference(numeric)?;
        return Some((Cow::Owned(python_charref(number)), 1 + consumed));
    }
    let bytes = after.as_bytes();
    // `[^\t\n\f <&#;]{1,32};?`: at most 32 characters.
    let limit = after.char_indices().nth(32).map_or(after.len(), |(idx, _)| idx);
    let name_end = after[..limit]
        .find(['\t', '\n', '\x0c', ' ', '<', '&', '#', ';'])
        .unwrap_or(limit);
    if name_end == 0 {
        return None;
    }
    let span = if bytes.get(name_end) == Some(&b';') {
        name_end + 1
    } else {
        name_end
    };
    let reference = &after[..span];
    if let Some(expansion) = entity_named(reference) {
        return Some((Cow::Borrowed(expansion), span));
    }
    // The longest name (at least two characters) that prefixes the reference.
    for cut in (2..reference.len()).rev() {
        if let Some(prefix) = reference.get(..cut)
            && let Some(expansion) = entity_named(prefix)
        {
            return Some((Cow::Owned(format!("{expansion}{}", &reference[cut..])), span));
        }
    }
    None
}

/// A numeric character reference after its `&#`: decimal digits, or `x`/`X` and hex digits,
/// then an optional `;`. Its value (saturated: too many digits read as `u32::MAX`, past any
/// character) and the bytes it spans; `None` without a digit.
pub fn numeric_reference(rest: &str) -> Option<(u32, usize)> {
    let bytes = rest.as_bytes();
    let (digits_start, radix) = match bytes.first() {
        Some(b'x' | b'X') => (1, 16),
        _ => (0, 10),
    };
    let digits = bytes[digits_start..]
        .iter()
        .take_while(|b| {
            if radix == 16 {
                b.is_ascii_hexdigit()
            } else {
                b.is_ascii_digit()
            }
        })
        .count();
    if digits == 0 {
        return None;
    }
    let value = u32::from_str_radix(&rest[digits_start..digits_start + digits], radix).unwrap_or(u32::MAX);
    let mut consumed = digits_start + digits;
    if bytes.get(consumed) == Some(&b';') {
        consumed += 1;
    }
    Some((value, consumed))
}

/// An HTML5 name exactly as written (`amp;`, or the legacy `amp` without its `;`).
fn entity_named(name: &str) -> Option<&'static str> {
    let mut key = String::with_capacity(name.len() + 1);
    key.push('&');
    key.push_str(name);
    htmlize::ENTITIES
        .get(key.as_bytes())
        .and_then(|found| std::str::from_utf8(found).ok())
}

/// A numeric reference in 0x80–0x9F read as the Windows-1252 byte it names (as browsers, Python's
/// `html.unescape` and BeautifulSoup do); the five bytes Windows-1252 leaves undefined stay the
/// C1 control they are.
pub fn windows_1252(number: u32) -> char {
    const C1: [char; 32] = [
        '\u{20ac}', '\u{81}', '\u{201a}', '\u{192}', '\u{201e}', '\u{2026}', '\u{2020}', '\u{2021}',
        '\u{2c6}', '\u{2030}', '\u{160}', '\u{2039}', '\u{152}', '\u{8d}', '\u{17d}', '\u{8f}', '\u{90}',
        '\u{2018}', '\u{2019}', '\u{201c}', '\u{201d}', '\u{2022}', '\u{2013}', '\u{2014}', '\u{2dc}',
        '\u{2122}', '\u{161}', '\u{203a}', '\u{153}', '\u{9d}', '\u{17e}', '\u{178}',
    ];
    number
        .checked_sub(0x80)
        .and_then(|idx| C1.get(idx as usize))
        .copied()
        .or_else(|| char::from_u32(number))
        .unwrap_or('\u{fffd}')
}

/// `html.unescape`'s numeric reference: `_invalid_charrefs`, then the invalid ranges, then `chr`.
fn python_charref(number: u32) -> String {
    let removed = matches!(number, 0x1..=0x8 | 0xb | 0xe..=0x1f | 0x7f..=0x9f | 0xfdd0..=0xfdef)
        || (number <= 0x10ffff && (number & 0xfffe) == 0xfffe);
    match number {
        0 => "\u{fffd}".to_owned(),
        0x0d => "\r".to_owned(),
        0x80..=0x9f => windows_1252(number).to_string(),
        0xd800..=0xdfff | 0x110000.. => "\u{fffd}".to_owned(),
        _ if removed => String::new(),
        _ => char::from_u32(number).map_or_else(|| "\u{fffd}".to_owned(), String::from),
    }
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
