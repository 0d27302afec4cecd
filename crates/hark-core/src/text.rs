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
}
