//! A real OpenSSH server on 127.0.0.1 for the tests of agents on a host
//! reached over SSH: its own host key, one authorized key (a fresh one it
//! makes), the user running the tests, and a client config (`ssh -F`) that
//! names it `devbox`. Whatever the tests run "there" runs on this machine
//! under sshd, as a remote login would.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::lines::{Lines, WaitError};

/// Why the server did not start.
#[derive(Debug, thiserror::Error)]
pub enum SshdError {
    #[error("cannot prepare {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("ssh-keygen failed: {0}")]
    Keygen(String),
    #[error("cannot start {program} (install openssh-server and openssh-client)")]
    Spawn {
        program: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("no free loopback port")]
    Port(#[source] std::io::Error),
    #[error(transparent)]
    NotListening(#[from] WaitError),
}

/// How long sshd may take to listen.
const START_PATIENCE: Duration = Duration::from_secs(20);

/// A running sshd, killed when dropped.
#[derive(Debug)]
pub struct Sshd {
    child: Child,
    /// The client config: `ssh -F <this> devbox` logs in.
    pub client_config: PathBuf,
    /// Its log (`-e`: on stderr).
    pub log: Lines,
}

impl Sshd {
    /// Starts sshd with its files in `dir`; `set_env` is set in every
    /// login's environment (sshd's `SetEnv`), as a login manager would.
    pub fn start(dir: &Path, set_env: &[(&str, &Path)]) -> Result<Sshd, SshdError> {
        std::fs::create_dir_all(dir).map_err(|source| write_error(dir, source))?;
        for key in ["host_key", "user_key"] {
            keygen(&dir.join(key))?;
        }
        let authorized = dir.join("authorized_keys");
        std::fs::copy(dir.join("user_key.pub"), &authorized)
            .map_err(|source| write_error(&authorized, source))?;
        // sshd separates privileges into a directory only root makes.
        if is_root() {
            let _ = std::fs::create_dir_all("/run/sshd");
        }
        let port = free_port()?;
        let mut config = format!(
            "ListenAddress 127.0.0.1:{port}\nHostKey {}\nAuthorizedKeysFile {}\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\n\
             PermitRootLogin prohibit-password\nStrictModes no\nPidFile none\n\
             AllowStreamLocalForwarding yes\nStreamLocalBindUnlink yes\n",
            dir.join("host_key").display(),
            authorized.display(),
        );
        if !set_env.is_empty() {
            let vars: Vec<String> = set_env
                .iter()
                .map(|(name, value)| format!("{name}={}", value.display()))
                .collect();
            config.push_str(&format!("SetEnv {}\n", vars.join(" ")));
        }
        let server_config = dir.join("sshd_config");
        write(&server_config, &config)?;
        let client_config = dir.join("ssh_config");
        write(
            &client_config,
            &format!(
                "Host devbox\n  HostName 127.0.0.1\n  Port {port}\n  User {}\n  IdentityFile {}\n  \
                 IdentitiesOnly yes\n  BatchMode yes\n  StrictHostKeyChecking no\n  \
                 UserKnownHostsFile /dev/null\n  LogLevel ERROR\n",
                user_name(),
                dir.join("user_key").display(),
            ),
        )?;
        let mut child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f"])
            .arg(&server_config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| SshdError::Spawn {
                program: "/usr/sbin/sshd",
                source,
            })?;
        let stderr = child.stderr.take().expect("piped stderr");
        let sshd = Sshd {
            child,
            client_config,
            log: Lines::follow("sshd", stderr),
        };
        sshd.log.wait("sshd listening", START_PATIENCE, |lines| {
            lines
                .iter()
                .any(|l| l.text.contains("Server listening on 127.0.0.1"))
                .then_some(())
        })?;
        Ok(sshd)
    }

    /// `ssh -F <client config>`, to which a destination (`devbox`) and the
    /// rest are added.
    pub fn ssh(&self) -> Command {
        let mut ssh = Command::new("ssh");
        ssh.arg("-F").arg(&self.client_config);
        ssh
    }

    /// The arguments `hark ssh` passes on to ssh for this server.
    pub fn hark_ssh_args(&self) -> Vec<String> {
        vec![
            "--ssh-arg=-F".to_owned(),
            format!("--ssh-arg={}", self.client_config.display()),
        ]
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn keygen(path: &Path) -> Result<(), SshdError> {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(path)
        .stdin(Stdio::null())
        .output()
        .map_err(|source| SshdError::Spawn {
            program: "ssh-keygen",
            source,
        })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(SshdError::Keygen(
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }
}

/// A loopback port nothing listens on now. sshd cannot be told to pick
/// one and say which, so the port is found first and given to it.
fn free_port() -> Result<u16, SshdError> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(SshdError::Port)?;
    Ok(listener.local_addr().map_err(SshdError::Port)?.port())
}

fn write(path: &Path, text: &str) -> Result<(), SshdError> {
    std::fs::write(path, text).map_err(|source| write_error(path, source))
}

fn write_error(path: &Path, source: std::io::Error) -> SshdError {
    SshdError::Write {
        path: path.to_owned(),
        source,
    }
}

fn is_root() -> bool {
    rustix::process::getuid().is_root()
}

/// The user running the tests, by name (`id -un`), whom sshd logs in.
fn user_name() -> String {
    Command::new("id")
        .arg("-un")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}
