//! Cutting text to a length, in characters (never inside one), and
//! measuring what it weighs as JSON.

/// The first `max` characters of `text`, with "…" when some were cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// `text` cut to its first `max` characters, with a marker that says it was
/// and how long it was whole (`…[clipped, 600 KB]`); `None` when it is no
/// longer than `max`.
pub fn clip_marked(text: &str, max: usize) -> Option<String> {
    let (at, _) = text.char_indices().nth(max)?;
    Some(format!("{}…[clipped, {}]", &text[..at], size(text.len())))
}

/// A number of bytes as a person reads it: `812 B`, `6 KB`, `1.0 MB`.
pub fn size(bytes: usize) -> String {
    const KB: usize = 1024;
    match bytes {
        0..KB => format!("{bytes} B"),
        KB..1_048_576 => format!("{} KB", bytes / KB),
        _ => format!("{:.1} MB", bytes as f64 / 1_048_576.0),
    }
}

/// The bytes `value` takes as JSON (as a frame carries it), counted
/// without writing them anywhere.
pub fn json_len<T: serde::Serialize + ?Sized>(value: &T) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, nor can serializing a view.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

/// The last `max` characters of `text`.
pub fn tail(text: &str, max: usize) -> &str {
    let Some(back) = max.checked_sub(1) else {
        return "";
    };
    let from = text.char_indices().rev().nth(back).map_or(0, |(at, _)| at);
    &text[from..]
}

/// An agent's text made safe to print on one line of the operator's
/// terminal: every control character (C0, DEL, C1, and so line breaks too)
/// and every bidi override is shown as a visible escape (`\e`, `\r`, `\n`,
/// `\t`, else `\u{…}`), so the text can neither drive the terminal (clear
/// it, hide or overwrite text, ring it) nor start a line of its own that
/// looks like one of hark's option lines.
pub fn visible(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\u{1b}' => shown.push_str("\\e"),
            '\r' => shown.push_str("\\r"),
            '\n' => shown.push_str("\\n"),
            '\t' => shown.push_str("\\t"),
            c if c.is_control() || is_bidi_control(c) => {
                shown.push_str(&c.escape_unicode().to_string());
            }
            c => shown.push(c),
        }
    }
    shown
}

/// Characters that reorder how the text around them is displayed
/// ("Trojan Source"): embeddings, overrides and isolates.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_the_first_characters_and_marks_the_cut() {
        assert_eq!(clip("héllo wörld", 5), "héllo…");
        assert_eq!(clip("short", 5), "short");
    }

    #[test]
    fn a_marked_clip_says_how_long_the_text_was() {
        let long = "é".repeat(300_000);
        let clipped = clip_marked(&long, 4).unwrap();
        assert_eq!(clipped, "éééé…[clipped, 585 KB]");
        assert_eq!(clip_marked("short", 5), None);
        assert_eq!(size(812), "812 B");
        assert_eq!(size(1 << 20), "1.0 MB");
    }

    #[test]
    fn tail_keeps_the_last_characters_on_a_char_boundary() {
        assert_eq!(tail("héllo wörld", 5), "wörld");
        assert_eq!(tail("short", 50), "short");
        assert_eq!(tail("", 3), "");
    }

    #[test]
    fn visible_text_cannot_drive_the_terminal() {
        assert_eq!(
            visible("ok\u{1b}[2J\r\n  2) Yes\u{7}\u{202e}"),
            "ok\\e[2J\\r\\n  2) Yes\\u{7}\\u{202e}"
        );
        assert_eq!(visible("héllo wörld"), "héllo wörld");
    }
}
