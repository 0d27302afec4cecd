//! `hark ssh`: logs in to another host with this operator reachable from
//! it. The daemon opens that host's own socket (which takes agents' frames
//! only, and names the host on their items); `ssh -R` forwards a socket on
//! the remote host to it.

use std::process::Stdio;

use hark_core::bridge::wire::{ClientFrame, ServerFrame};
use hark_core::daemon::hosts::HostName;
use tokio::process::Command;

use crate::cli::SshArgs;
use crate::commands::query::{query, refused};
use crate::exit::ExitStatus;

/// Where the socket goes on the remote host when none is given: where hark
/// looks by itself (`$XDG_RUNTIME_DIR/hark/hark.sock`), else under `$HOME`,
/// its directory made owner-only; prints the socket's path.
const PROBE: &str = r#"if [ -n "${XDG_RUNTIME_DIR:-}" ]; then d="$XDG_RUNTIME_DIR/hark"; else d="$HOME/.hark"; fi; mkdir -p "$d" && chmod 700 "$d" && printf '%s\n' "$d/hark.sock""#;

pub async fn run(args: SshArgs) -> ExitStatus {
    let name = match HostName::parse(args.name.as_deref().unwrap_or(&host_of(&args.destination))) {
        Ok(name) => name,
        Err(e) => {
            eprintln!("hark: {e}");
            eprintln!("hint: name it with --name");
            return ExitStatus::Refused;
        }
    };
    let local = match query(&ClientFrame::HostSocket {
        host: name.to_string(),
    })
    .await
    {
        Ok(ServerFrame::HostSocket { path }) => path,
        Ok(other) => return refused(other),
        Err(status) => return status,
    };
    let remote = match args.remote_socket.clone() {
        Some(path) if path.starts_with('/') => path,
        Some(path) => {
            eprintln!(
                "hark: the remote socket must be an absolute path (sshd binds a relative one from /): {path}"
            );
            return ExitStatus::Refused;
        }
        None => match probe(&args).await {
            Some(path) => path,
            None => return ExitStatus::Failure,
        },
    };
    eprintln!(
        "hark: agents on {name} ask this operator through {remote}; their items say \"on {name}\""
    );
    if !remote.ends_with("/hark/hark.sock") {
        eprintln!("hint: there, set HARK_SOCKET={remote} (or pass --socket) for hark to find it");
    }
    let status = Command::new("ssh")
        .arg("-o")
        .arg("ExitOnForwardFailure=yes")
        .arg("-R")
        .arg(format!("{remote}:{}", local.display()))
        .args(&args.ssh_args)
        .arg(&args.destination)
        .args(&args.command)
        .status()
        .await;
    match status {
        Ok(status) => {
            let code = status.code().unwrap_or(1);
            if code == 255 {
                eprintln!(
                    "hint: if ssh said \"remote port forwarding failed\", a socket is left at {remote} from an earlier login: remove it there, or set `StreamLocalBindUnlink yes` in the remote's sshd_config"
                );
            }
            ExitStatus::Agent(code)
        }
        Err(e) => {
            eprintln!("hark: cannot start ssh: {e}");
            eprintln!("hint: install OpenSSH's client (`apt install openssh-client`)");
            ExitStatus::Failure
        }
    }
}

/// The host part of an ssh destination: `me@devbox` and
/// `ssh://me@devbox:2222` name `devbox`.
fn host_of(destination: &str) -> String {
    let rest = destination.strip_prefix("ssh://").unwrap_or(destination);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let host = if destination.starts_with("ssh://") {
        rest.split([':', '/']).next().unwrap_or(rest)
    } else {
        rest
    };
    host.to_owned()
}

/// Asks the remote host where its socket goes (see [`PROBE`]).
async fn probe(args: &SshArgs) -> Option<String> {
    let output = Command::new("ssh")
        .args(&args.ssh_args)
        .arg(&args.destination)
        .arg(PROBE)
        .stdin(Stdio::inherit())
        .stderr(Stdio::inherit())
        .output()
        .await;
    let found = match output {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .map(str::to_owned)
            .filter(|path| path.starts_with('/')),
        Ok(_) => None,
        Err(e) => {
            eprintln!("hark: cannot start ssh: {e}");
            return None;
        }
    };
    if found.is_none() {
        eprintln!(
            "hark: could not ask {} where its socket goes; give it with --remote-socket PATH",
            args.destination
        );
    }
    found
}

#[cfg(test)]
mod tests {
    use super::host_of;

    #[test]
    fn the_host_of_a_destination_leaves_out_its_user_and_port() {
        for (destination, host) in [
            ("devbox", "devbox"),
            ("me@devbox", "devbox"),
            ("ssh://me@build.example.com:2222", "build.example.com"),
            ("ssh://devbox", "devbox"),
        ] {
            assert_eq!(host_of(destination), host, "{destination}");
        }
    }
}
