//! The operator's secrets that are not configuration: the ntfy topic (on a
//! public server the topic is itself the secret: whoever knows it reads the
//! pushes and can press their buttons) and its access token, kept in the
//! data directory (`push.toml`, owner-only), which a confined agent does
//! not see, rather than in the config, which people share, paste and keep
//! in dotfiles repositories. `hark push setup` writes it; the config's
//! `[push]` names only the server.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The file's name in the data directory.
pub const PUSH_FILE: &str = "push.toml";

/// What `push.toml` holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PushSecrets {
    pub topic: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum SecretsError {
    #[error(transparent)]
    NoHome(#[from] crate::files::NoHomeError),
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not valid: {source}", path.display())]
    Parse {
        path: PathBuf,
        source: toml::de::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl PushSecrets {
    /// Where they are kept: beside the store.
    pub fn path() -> Result<PathBuf, SecretsError> {
        Ok(crate::store::Store::default_path()?.with_file_name(PUSH_FILE))
    }

    /// The kept ones; `None` when none are.
    pub fn load() -> Result<Option<PushSecrets>, SecretsError> {
        let path = PushSecrets::path()?;
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(SecretsError::Read { path, source }),
        };
        toml::from_str(&text)
            .map(Some)
            .map_err(|source| SecretsError::Parse { path, source })
    }

    /// Keeps them, owner-only, replacing what was kept (written beside,
    /// then renamed over: never half a file).
    pub fn save(&self) -> Result<PathBuf, SecretsError> {
        use std::io::Write;
        let path = PushSecrets::path()?;
        let write = |source| SecretsError::Write {
            path: path.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            crate::files::ensure_private_dir(dir).map_err(|e| write(std::io::Error::other(e)))?;
        }
        let text = toml::to_string(self).map_err(|e| write(std::io::Error::other(e)))?;
        let staged = path.with_extension(format!("toml.{}", uuid::Uuid::new_v4().simple()));
        let mut file =
            crate::platform::private_file(std::fs::OpenOptions::new().write(true).create_new(true))
                .open(&staged)
                .map_err(write)?;
        file.write_all(text.as_bytes()).map_err(write)?;
        file.sync_all().map_err(write)?;
        std::fs::rename(&staged, &path).map_err(write)?;
        Ok(path)
    }

    /// A topic nobody guesses: 122 random bits (ntfy's topics are up to 64
    /// of `[-_A-Za-z0-9]`).
    pub fn new_topic() -> String {
        format!("hark-{}", uuid::Uuid::new_v4().simple())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_topic_is_long_random_and_ntfys_alphabet() {
        let (a, b) = (PushSecrets::new_topic(), PushSecrets::new_topic());
        assert_ne!(a, b);
        assert!(a.len() >= 37 && a.len() <= 64, "{a}");
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_')
        );
    }

    #[test]
    fn the_file_is_refused_with_a_field_it_does_not_know() {
        assert!(toml::from_str::<PushSecrets>("topic = \"t\"\nserver = \"x\"").is_err());
        let kept: PushSecrets = toml::from_str("topic = \"t\"\ntoken = \"k\"").unwrap();
        assert_eq!(kept.token.as_deref(), Some("k"));
    }
}
