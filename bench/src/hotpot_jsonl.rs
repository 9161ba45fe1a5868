//! A page in the HotpotQA processed-abstracts JSON Lines format (`id`, `url`, `title`, `text`,
//! `charoffset`, `text_with_links`, `charoffset_with_links`), written by the synthetic-Wikipedia
//! generators (`gen_wiki`, `gen_wiki_names`).

/// One sentence in both renderings, with its token offsets (relative to the sentence).
#[derive(Default)]
pub struct Sentence {
    plain: String,
    linked: String,
    plain_tokens: Vec<(usize, usize)>,
    linked_tokens: Vec<(usize, usize)>,
}

fn push_token(text: &mut String, tokens: &mut Vec<(usize, usize)>, token: &str) {
    let start = text.len();
    text.push_str(token);
    tokens.push((start, text.len()));
}

impl Sentence {
    pub fn clear(&mut self) {
        self.plain.clear();
        self.linked.clear();
        self.plain_tokens.clear();
        self.linked_tokens.clear();
    }

    pub fn space(&mut self) {
        self.plain.push(' ');
        self.linked.push(' ');
    }

    pub fn token(&mut self, token: &str) {
        push_token(&mut self.plain, &mut self.plain_tokens, token);
        push_token(&mut self.linked, &mut self.linked_tokens, token);
    }

    /// The words of `title`, linked to it in the linked rendering.
    pub fn link(&mut self, title: &str) {
        let start = self.linked.len();
        self.linked.push_str("<a href=\"");
        for (i, part) in title.split(' ').enumerate() {
            if i > 0 {
                self.linked.push_str("%20");
            }
            self.linked.push_str(part);
        }
        self.linked.push_str("\">");
        self.linked_tokens.push((start, self.linked.len()));
        for (i, word) in title.split(' ').enumerate() {
            if i > 0 {
                self.space();
            }
            self.token(word);
        }
        let start = self.linked.len();
        self.linked.push_str("</a>");
        self.linked_tokens.push((start, self.linked.len()));
    }
}

fn push_usize(buf: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

fn push_json_string(buf: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    buf.push(b'"');
    for &b in s.as_bytes() {
        match b {
            b'"' => buf.extend_from_slice(b"\\\""),
            b'\\' => buf.extend_from_slice(b"\\\\"),
            0x00..=0x1f => {
                buf.extend_from_slice(b"\\u00");
                buf.push(HEX[usize::from(b >> 4)]);
                buf.push(HEX[usize::from(b & 0x0f)]);
            }
            _ => buf.push(b),
        }
    }
    buf.push(b'"');
}

fn push_texts(buf: &mut Vec<u8>, sentences: &[Sentence], linked: bool) {
    buf.push(b'[');
    for (k, s) in sentences.iter().enumerate() {
        if k > 0 {
            buf.extend_from_slice(b", ");
        }
        push_json_string(buf, if linked { &s.linked } else { &s.plain });
    }
    buf.push(b']');
}

fn push_offsets(buf: &mut Vec<u8>, sentences: &[Sentence], linked: bool) {
    buf.push(b'[');
    for (k, s) in sentences.iter().enumerate() {
        if k > 0 {
            buf.extend_from_slice(b", ");
        }
        buf.push(b'[');
        let tokens = if linked { &s.linked_tokens } else { &s.plain_tokens };
        for (t, &(start, end)) in tokens.iter().enumerate() {
            if t > 0 {
                buf.extend_from_slice(b", ");
            }
            buf.push(b'[');
            push_usize(buf, start);
            buf.extend_from_slice(b", ");
            push_usize(buf, end);
            buf.push(b']');
        }
        buf.push(b']');
    }
    buf.push(b']');
}

/// One JSON line, keys in the real dump's order, separators as Python's `json.dumps`.
pub fn write_page(buf: &mut Vec<u8>, id: usize, title: &str, sentences: &[Sentence]) {
    buf.extend_from_slice(b"{\"id\": \"");
    push_usize(buf, id);
    buf.extend_from_slice(b"\", \"url\": \"https://en.wikipedia.org/wiki?curid=");
    push_usize(buf, id);
    buf.extend_from_slice(b"\", \"title\": ");
    push_json_string(buf, title);
    buf.extend_from_slice(b", \"text\": ");
    push_texts(buf, sentences, false);
    buf.extend_from_slice(b", \"charoffset\": ");
    push_offsets(buf, sentences, false);
    buf.extend_from_slice(b", \"text_with_links\": ");
    push_texts(buf, sentences, true);
    buf.extend_from_slice(b", \"charoffset_with_links\": ");
    push_offsets(buf, sentences, true);
    buf.extend_from_slice(b"}\n");
}
