//! The benchmarks' command lines: `--flag VALUE` or `--flag=VALUE`.

use std::path::PathBuf;

/// What is wrong with a command line, or with where the binaries are.
#[derive(Debug, thiserror::Error)]
pub enum ArgsError {
    #[error("{flag} needs a value")]
    MissingValue { flag: String },
    #[error("{flag} takes a whole number, got {value:?}")]
    NotANumber { flag: String, value: String },
    #[error("{flag} takes a positive number (a ratio such as 1.3), got {value:?}")]
    NotARatio { flag: String, value: String },
    #[error("unknown argument {flag:?}\n{usage}")]
    Unknown { flag: String, usage: &'static str },
    #[error("{flag} must be at least {min}, got {got}")]
    TooSmall {
        flag: &'static str,
        min: usize,
        got: usize,
    },
    #[error("cannot find this executable")]
    ThisExe(#[source] std::io::Error),
    #[error("this executable has no directory")]
    NoExeDir,
}

/// One flag, with the value written after `=` if there was one.
#[derive(Debug)]
pub struct Flag {
    pub name: String,
    pub inline: Option<String>,
}

impl Flag {
    /// The error for a flag nobody knows.
    pub fn unknown(self, usage: &'static str) -> ArgsError {
        ArgsError::Unknown {
            flag: self.name,
            usage,
        }
    }
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
    pub fn value(&mut self, flag: &Flag) -> Result<String, ArgsError> {
        flag.inline
            .clone()
            .or_else(|| self.rest.next())
            .ok_or_else(|| ArgsError::MissingValue {
                flag: flag.name.clone(),
            })
    }

    /// The flag's value as a whole number.
    pub fn number(&mut self, flag: &Flag) -> Result<usize, ArgsError> {
        let value = self.value(flag)?;
        value.parse::<usize>().map_err(|_| ArgsError::NotANumber {
            flag: flag.name.clone(),
            value,
        })
    }
}

impl Args {
    /// The flag's value as a positive ratio (`1.3`).
    pub fn ratio(&mut self, flag: &Flag) -> Result<f64, ArgsError> {
        let value = self.value(flag)?;
        match value.parse::<f64>() {
            Ok(ratio) if ratio.is_finite() && ratio > 0.0 => Ok(ratio),
            _ => Err(ArgsError::NotARatio {
                flag: flag.name.clone(),
                value,
            }),
        }
    }
}

/// `got`, the value of `flag`, when it is at least `min`.
pub fn at_least(flag: &'static str, min: usize, got: usize) -> Result<usize, ArgsError> {
    if got >= min {
        Ok(got)
    } else {
        Err(ArgsError::TooSmall { flag, min, got })
    }
}

/// `--bin-dir`, else the directory of this executable.
pub fn bin_dir(given: Option<PathBuf>) -> Result<PathBuf, ArgsError> {
    match given {
        Some(dir) => Ok(dir),
        None => Ok(std::env::current_exe()
            .map_err(ArgsError::ThisExe)?
            .parent()
            .ok_or(ArgsError::NoExeDir)?
            .to_owned()),
    }
}
