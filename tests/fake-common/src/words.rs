//! A command line read as the Node CLIs (OpenCode and Gemini CLI, on
//! yargs) read it: `--name=value` or `--name value`, and the error a flag
//! without its value gets.

/// A flag with no value after it, worded as yargs words it.
#[derive(Debug, thiserror::Error)]
#[error("Not enough arguments following: {name}")]
pub struct MissingValue {
    pub name: String,
}

/// One word of the command line: `--name=value` split at its `=`.
#[derive(Debug, Clone, Copy)]
pub struct Word<'a> {
    /// The word as given.
    pub arg: &'a str,
    /// The flag's name (the word itself unless it is `--name=value`).
    pub name: &'a str,
    inline: Option<&'a str>,
}

/// The words of a command line, a flag's value read on demand.
#[derive(Debug, Clone)]
pub struct Words<'a> {
    rest: std::slice::Iter<'a, String>,
}

impl<'a> Words<'a> {
    pub fn new(argv: &'a [String]) -> Self {
        Self { rest: argv.iter() }
    }

    /// The value of flag `word`: after its `=`, else the next word.
    pub fn value(&mut self, word: &Word<'a>) -> Result<String, MissingValue> {
        word.inline
            .or_else(|| self.rest.next().map(String::as_str))
            .map(str::to_owned)
            .ok_or_else(|| MissingValue {
                name: word.name.to_owned(),
            })
    }

    /// Every word not read yet, as given (after `--`).
    pub fn rest(&mut self) -> impl Iterator<Item = &'a String> + '_ {
        self.rest.by_ref()
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = Word<'a>;

    fn next(&mut self) -> Option<Word<'a>> {
        let arg = self.rest.next()?.as_str();
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (arg, None),
        };
        Some(Word { arg, name, inline })
    }
}
