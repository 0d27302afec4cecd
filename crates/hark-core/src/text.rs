//! Cutting text to a length, in characters (never inside one).

/// The first `max` characters of `text`, with "…" when some were cut.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
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
