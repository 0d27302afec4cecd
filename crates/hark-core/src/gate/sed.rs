//! `sed` scripts: [`read_only`] says whether a script can only print what
//! it reads. It is a reader of the part of the language that cannot write,
//! not a sed: addresses (`3`, `$`, `/re/`, `\%re%`, `1~2`, `a,b`, `a,+N`,
//! `!`), blocks, comments, and the commands `s` (without the `w` and `e`
//! flags), `y`, `p P d D n N g G h H x l = q Q z F`, `:`, `b t T`, `r R`.
//! Anything else — `w`, `W`, `e`, a `w` or `e` flag, the text commands
//! `a i c`, `v`, a construct it does not know — and the script is not
//! read-only.
//!
//! Where GNU and BSD sed read a script differently, it takes whichever
//! reading sees more commands (GNU ends a label at `;`, BSD at the end of
//! the line), or refuses the script: GNU ends a regex at its delimiter
//! even inside a bracket expression, BSD does not, so a delimiter inside
//! brackets (`/[/]/`) is refused.
//!
//! No crate was used: the one sed parser on crates.io (sed-rs 2.0, an
//! implementation) reads `a foo\\` followed by a line `w x` as text on two
//! lines, where GNU sed ends the text and writes `x`; a gate needs a reader
//! that refuses what it is unsure of, not one that accepts what it can.

/// Whether `script` neither writes a file nor runs a command.
pub fn read_only(script: &str) -> bool {
    let chars: Vec<char> = script.chars().collect();
    Reader { chars, at: 0 }.script().is_some()
}

/// A script's characters and the position read up to.
struct Reader {
    chars: Vec<char>,
    at: usize,
}

impl Reader {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    fn next(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += 1;
        Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        let eaten = self.peek() == Some(c);
        self.at += usize::from(eaten);
        eaten
    }

    fn spaces(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.at += 1;
        }
    }

    fn digits(&mut self) -> bool {
        let start = self.at;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.at += 1;
        }
        self.at > start
    }

    /// The whole script; `None` when any part of it is not read-only.
    fn script(&mut self) -> Option<()> {
        let mut depth = 0usize;
        loop {
            while matches!(self.peek(), Some(' ' | '\t' | '\n' | ';')) {
                self.at += 1;
            }
            let Some(c) = self.peek() else {
                return (depth == 0).then_some(());
            };
            if c == '#' {
                self.line();
                continue;
            }
            let addressed = self.address()?;
            match self.next()? {
                '{' => depth += 1,
                '}' if !addressed => {
                    depth = depth.checked_sub(1)?;
                    self.end()?;
                }
                'p' | 'P' | 'd' | 'D' | 'n' | 'N' | 'g' | 'G' | 'h' | 'H' | 'x' | '=' | 'z'
                | 'F' => self.end()?,
                // An exit code, a line length.
                'q' | 'Q' | 'l' => {
                    self.spaces();
                    self.digits();
                    self.end()?;
                }
                ':' if !addressed => {
                    self.label().filter(|l| *l > 0)?;
                }
                'b' | 't' | 'T' => {
                    self.label()?;
                }
                's' => self.substitute()?,
                'y' => self.transliterate()?,
                // Reads a file into the output; its name runs to the end
                // of the line, `;` included.
                'r' | 'R' => {
                    self.spaces();
                    (self.line() > 0).then_some(())?;
                }
                _ => return None,
            }
        }
    }

    /// Skips to the end of the line (the newline included); how many
    /// characters came before it.
    fn line(&mut self) -> usize {
        let start = self.at;
        while self.peek().is_some_and(|c| c != '\n') {
            self.at += 1;
        }
        let length = self.at - start;
        self.eat('\n');
        length
    }

    /// What may follow a command: spaces, then the end, a newline, `;`,
    /// or (left for the loop) `}` or a comment.
    fn end(&mut self) -> Option<()> {
        self.spaces();
        match self.peek() {
            None | Some('}' | '#') => Some(()),
            Some('\n' | ';') => {
                self.at += 1;
                Some(())
            }
            Some(_) => None,
        }
    }

    /// An optional address or range and `!`; whether there was one.
    fn address(&mut self) -> Option<bool> {
        if !self.one_address(false)? {
            return (!self.eat('!')).then_some(false);
        }
        self.spaces();
        if self.eat(',') {
            self.spaces();
            self.one_address(true)?.then_some(())?;
        }
        self.spaces();
        if self.eat('!') {
            self.spaces();
            (!self.eat('!')).then_some(())?;
        }
        Some(true)
    }

    /// One address; whether there was one. The second of a range may
    /// also be `+N` or `~N`.
    fn one_address(&mut self, second: bool) -> Option<bool> {
        match self.peek() {
            Some(c) if c.is_ascii_digit() => {
                self.digits();
                if self.eat('~') {
                    self.digits().then_some(())?;
                }
            }
            Some('+' | '~') if second => {
                self.at += 1;
                self.digits().then_some(())?;
            }
            Some('$') => self.at += 1,
            Some('/') => {
                self.at += 1;
                self.regex('/')?;
                self.regex_flags();
            }
            Some('\\') => {
                self.at += 1;
                let delimiter = self.delimiter()?;
                self.regex(delimiter)?;
                self.regex_flags();
            }
            _ => return Some(false),
        }
        Some(true)
    }

    fn regex_flags(&mut self) {
        while matches!(self.peek(), Some('I' | 'M')) {
            self.at += 1;
        }
    }

    /// A delimiter of a regex or `s`/`y`: ASCII punctuation, not `\`.
    fn delimiter(&mut self) -> Option<char> {
        self.next()
            .filter(|c| c.is_ascii_punctuation() && *c != '\\')
    }

    /// A regex up to its `delimiter` (consumed). A backslash escapes the
    /// next character; a newline, or the delimiter or a backslash inside
    /// a bracket expression, is refused.
    fn regex(&mut self, delimiter: char) -> Option<()> {
        loop {
            match self.next()? {
                c if c == delimiter => return Some(()),
                '\n' => return None,
                '\\' => {
                    self.next().filter(|c| *c != '\n')?;
                }
                '[' => self.bracket(delimiter)?,
                _ => {}
            }
        }
    }

    /// A bracket expression after its `[`, up to its `]` (consumed).
    fn bracket(&mut self, delimiter: char) -> Option<()> {
        self.eat('^');
        self.eat(']');
        loop {
            match self.next()? {
                c if c == delimiter || c == '\n' || c == '\\' => return None,
                ']' => return Some(()),
                '[' if matches!(self.peek(), Some(':' | '.' | '=')) => {
                    let kind = self.next()?;
                    loop {
                        match self.next()? {
                            c if c == delimiter || c == '\n' || c == '\\' => return None,
                            c if c == kind && self.eat(']') => break,
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// The text of a replacement or of `y` up to `delimiter` (consumed):
    /// no brackets, a backslash escaping the next character (a newline
    /// too), no bare newline. `y` refuses `[` besides: BSD sed reads a
    /// bracket expression in it.
    fn text(&mut self, delimiter: char, brackets: bool) -> Option<()> {
        loop {
            match self.next()? {
                c if c == delimiter => return Some(()),
                '\n' => return None,
                '[' if !brackets => return None,
                '\\' => {
                    self.next()?;
                }
                _ => {}
            }
        }
    }

    /// `s/re/replacement/flags` after the `s`: any flag but `w` (writes a
    /// file) and `e` (runs the pattern space as a command).
    fn substitute(&mut self) -> Option<()> {
        let delimiter = self.delimiter()?;
        self.regex(delimiter)?;
        self.text(delimiter, true)?;
        while let Some(c) = self.peek() {
            match c {
                'g' | 'p' | 'i' | 'I' | 'm' | 'M' => self.at += 1,
                c if c.is_ascii_digit() => self.at += 1,
                _ => break,
            }
        }
        self.end()
    }

    /// `y/abc/xyz/` after the `y`.
    fn transliterate(&mut self) -> Option<()> {
        let delimiter = self.delimiter()?;
        self.text(delimiter, false)?;
        self.text(delimiter, false)?;
        self.end()
    }

    /// A label after `:`, `b`, `t` or `T`: letters, digits and `_`, then
    /// the end, a newline or `;` (GNU ends it there; BSD reads on to the
    /// end of the line, seeing fewer commands). Its length.
    fn label(&mut self) -> Option<usize> {
        self.spaces();
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            self.at += 1;
        }
        let length = self.at - start;
        match self.peek() {
            None => Some(length),
            Some('\n' | ';') => {
                self.at += 1;
                Some(length)
            }
            Some(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::read_only;

    #[test]
    fn printing_scripts_are_read_only() {
        for script in [
            "",
            "1,10p",
            "-n",
            "$p",
            "5p;10p",
            "/start/,/end/p",
            "/^#/d",
            "s/a/b/",
            "s/a/b/g",
            "s|a/b|c|gp",
            "s/[/]x/y/ ",
            "s/x/\\n/2",
            "1~2d",
            "0,/re/d",
            "/a/,+3p",
            "/x/!d",
            "/x/I p",
            "\\%a%p",
            "/x/{p;d}",
            "/x/ { s/a/b/ ; p }",
            ":a;N;$!ba;s/\\n/ /g",
            "y/abc/xyz/",
            "=",
            "l",
            "q5",
            "p # comment w x",
            "#n\np",
            "r other.txt",
            "s/[[:space:]]*$//",
            "/[a-z]/p",
        ] {
            let expected = !script.starts_with("-n") && !script.starts_with("s/[/]");
            assert_eq!(read_only(script), expected, "{script:?}");
        }
    }

    #[test]
    fn writing_and_running_scripts_are_not() {
        for script in [
            "w x",
            "1w x",
            "W x",
            "s/a/b/w x",
            "s/a/b/gw x",
            "s/a/b/e",
            "e",
            "e rm x",
            "1e rm x",
            "p;w x",
            "p\nw x",
            "/x/{p;w x\n}",
            ":a;w x",
            "b end; w x",
            "a foo\\\\\nw x",
            "a text",
            "i\\\ntext",
            "c x",
            "v",
            "/[/]/w x",
            "s/[/]/w x/",
            "y/[/]/",
            "{p",
            "p}",
            "p w",
            "s/a/b/x",
            "/a",
            "s/a",
            "sxaxbx",
            "1,p",
            "!!p",
            "/x/!!p",
            ": ",
            "1:a",
            "b}",
        ] {
            assert!(!read_only(script), "{script:?}");
        }
    }
}
