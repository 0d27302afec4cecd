//! An error and its causes, printed for a person.

use std::error::Error;
use std::fmt;

/// Shows an error and its sources: the first line of each message joined
/// with `: ` (`cannot start hark serve: No such file or directory (os error
/// 2)`), then the further lines of each (a child's last lines, say), in the
/// same order. Errors here keep their cause as a source rather than in their
/// message, so this is how a benchmark or a test shows the whole of one.
#[derive(Debug, Clone, Copy)]
pub struct Report<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut details = Vec::new();
        let mut headlines = 0;
        for error in std::iter::successors(Some(self.0), |e| (*e).source()) {
            let message = error.to_string();
            let (headline, rest) = match message.split_once('\n') {
                Some((headline, rest)) => (headline.to_owned(), Some(rest.to_owned())),
                None => (message, None),
            };
            if !headline.is_empty() {
                if headlines > 0 {
                    f.write_str(": ")?;
                }
                f.write_str(&headline)?;
                headlines += 1;
            }
            details.extend(rest);
        }
        for detail in details {
            write!(f, "\n{detail}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("the run failed\n  its stderr ended with:\n    boom")]
    struct Outer {
        source: Inner,
    }

    #[derive(Debug, thiserror::Error)]
    #[error("cannot write to the server")]
    struct Inner {
        source: std::io::Error,
    }

    #[test]
    fn headlines_first_then_the_details() {
        let error = Outer {
            source: Inner {
                source: std::io::Error::new(std::io::ErrorKind::BrokenPipe, "broken pipe"),
            },
        };
        assert_eq!(
            Report(&error).to_string(),
            "the run failed: cannot write to the server: broken pipe\n  its stderr ended with:\n    boom"
        );
    }
}
