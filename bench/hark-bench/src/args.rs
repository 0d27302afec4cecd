//! The benchmarks' command lines: `--flag VALUE` or `--flag=VALUE`.

use std::path::PathBuf;

/// One flag, with the value written after `=` if there was one.
#[derive(Debug)]
pub struct Flag {
    pub name: String,
    pub inline: Option<String>,
}

/// The process's arguments, read flag by flag.
#[derive(Debug)]
pub struct Args {
    rest: std::iter::Skip<std::env::Args>,
}

impl Args {
    pub fn from_env() -> Args {
        Args {
            rest: std::env::args().skip(1),
        }
    }

    pub fn next_flag(&mut self) -> Option<Flag> {
        let arg = self.rest.next()?;
        Some(match arg.split_once('=') {
            Some((name, value)) => Flag {
                name: name.to_owned(),
                inline: Some(value.to_owned()),
            },
            None => Flag {
                name: arg,
                inline: None,
            },
        })
    }

    /// The flag's value: after `=`, else the next argument.
    pub fn value(&mut self, flag: &Flag) -> Result<String, String> {
        flag.inline
            .clone()
            .or_else(|| self.rest.next())
            .ok_or(format!("{} needs a value", flag.name))
    }

    /// The flag's value as a whole number.
    pub fn number(&mut self, flag: &Flag) -> Result<usize, String> {
        let v = self.value(flag)?;
        v.parse::<usize>()
            .map_err(|_| format!("{} takes a whole number, got {v:?}", flag.name))
    }
}

/// `--bin-dir`, else the directory of this executable.
pub fn bin_dir(given: Option<PathBuf>) -> Result<PathBuf, String> {
    match given {
        Some(dir) => Ok(dir),
        None => Ok(std::env::current_exe()
            .map_err(|e| format!("cannot find this executable: {e}"))?
            .parent()
            .ok_or("this executable has no directory")?
            .to_owned()),
    }
}
