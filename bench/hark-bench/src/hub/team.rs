//! The team on one machine: a nats-server whose users are the operators'
//! and the idle agents' nkeys, each with its role's permissions, and the
//! operators' daemons, each a sandbox of its own as separate machines
//! would be.

use std::path::Path;

use hark_harness::nats::{NatsOptions, NatsServer, NatsUser, Permissions};
use hark_harness::{Daemon, Lines, PATIENCE, Sandbox};
use hark_hub::Role;
use serde_json::json;

use super::HubError;

/// How many operators' daemons the team has.
pub const OPERATORS: usize = 3;
/// Every daemon's arguments: events on stderr, and asks that outlast the
/// bench.
const DAEMON_ARGS: [&str; 4] = ["--log-format", "json", "--ask-timeout", "600"];
/// What `hark serve` says once it is on the hub.
const ON_THE_HUB: &str = "on the team's hub";

/// A host with a daemon: an operator's (on the hub) or the baseline's.
#[derive(Debug)]
pub struct Host {
    pub name: String,
    pub sandbox: Sandbox,
    pub daemon: Daemon,
}

impl Host {
    /// The baseline's daemon: no hub.
    pub fn solo(bin_dir: &Path) -> Result<Host, HubError> {
        let sandbox = Sandbox::new("hark-bench-solo-", bin_dir)?;
        let daemon = Daemon::start(&sandbox, &json!({}), &DAEMON_ARGS)?;
        Ok(Host {
            name: "solo".into(),
            sandbox,
            daemon,
        })
    }

    pub fn log(&self) -> &Lines {
        &self.daemon.log
    }

    /// Stops the daemon (SIGTERM); whether it exited cleanly.
    pub fn stop(self) -> Result<bool, HubError> {
        let host = self.name;
        self.daemon
            .stop()
            .map_err(|source| HubError::Stop { host, source })
    }
}

/// The server and the operators' daemons.
#[derive(Debug)]
pub struct Team {
    pub server: NatsServer,
    pub operators: Vec<Host>,
    /// The idle agents' seeds, one each.
    pub agent_seeds: Vec<String>,
}

/// Resident memory, in KiB, of the server and each daemon.
#[derive(Debug, Clone, Default)]
pub struct Memory {
    pub server_kib: Option<u64>,
    pub daemons_kib: Vec<Option<u64>>,
}

impl Team {
    /// Starts the server with the operators and `agents` agent users, and
    /// the operators' daemons, `op-1`…, each once it is on the hub.
    pub fn start(bin_dir: &Path, agents: usize) -> Result<Team, HubError> {
        let mut users = Vec::new();
        let mut user = |role, host: String| {
            let made = hark_hub::credential::make();
            users.push(NatsUser {
                nkey: made.public,
                permissions: permissions(role, &host),
            });
            made.seed
        };
        let operator_seeds: Vec<String> = (0..OPERATORS)
            .map(|i| user(Role::Operator, format!("op-{}", i + 1)))
            .collect();
        let agent_seeds: Vec<String> = (0..agents)
            .map(|i| user(Role::Agent, super::idle::host(i)))
            .collect();
        let server = NatsServer::start(&NatsOptions { users })?;
        let mut operators = Vec::new();
        for (i, seed) in operator_seeds.iter().enumerate() {
            let name = format!("op-{}", i + 1);
            let sandbox = Sandbox::new(&format!("hark-bench-{name}-"), bin_dir)?;
            let config = hub_config(
                &sandbox,
                &server.url(),
                seed,
                &name,
                &format!("operator-{}", i + 1),
                "hub.nk",
            )?;
            write(&sandbox.config(), &config)?;
            let daemon = Daemon::start(&sandbox, &json!({}), &DAEMON_ARGS)?;
            daemon
                .log
                .wait(ON_THE_HUB, PATIENCE, |lines| {
                    lines
                        .iter()
                        .any(|l| l.text.contains(ON_THE_HUB))
                        .then_some(())
                })
                .map_err(|source| HubError::NotOnHub {
                    host: name.clone(),
                    source,
                })?;
            operators.push(Host {
                name,
                sandbox,
                daemon,
            });
        }
        Ok(Team {
            server,
            operators,
            agent_seeds,
        })
    }

    /// Everyone's resident memory now (`VmRSS`).
    pub fn memory(&self) -> Memory {
        self.read("VmRSS:")
    }

    /// Everyone's peak resident memory so far (`VmHWM`).
    pub fn peak(&self) -> Memory {
        self.read("VmHWM:")
    }

    fn read(&self, field: &str) -> Memory {
        Memory {
            server_kib: self.server.pid().and_then(|pid| status_kib(pid, field)),
            daemons_kib: self
                .operators
                .iter()
                .map(|h| status_kib(h.daemon.pid(), field))
                .collect(),
        }
    }

    /// Stops every daemon; whether all exited cleanly. The server goes
    /// when the team drops.
    pub fn stop(self) -> Result<bool, HubError> {
        let mut clean = true;
        for host in self.operators {
            clean &= host.stop()?;
        }
        Ok(clean)
    }
}

/// Writes `seed` into `sandbox` as `seed_file` and returns a config whose
/// `[hub]` names the server, the seed, `host` and `operator`.
pub fn hub_config(
    sandbox: &Sandbox,
    url: &str,
    seed: &str,
    host: &str,
    operator: &str,
    seed_file: &str,
) -> Result<String, HubError> {
    let seed_path = sandbox.path(seed_file);
    write(&seed_path, seed)?;
    Ok(format!(
        "[hub]\nurl = {url:?}\nnkey = {:?}\nhost = {host:?}\noperator = {operator:?}\nreplicas = 1\n",
        seed_path.display().to_string(),
    ))
}

pub fn write(path: &Path, text: &str) -> Result<(), HubError> {
    std::fs::write(path, text).map_err(|source| HubError::Write {
        path: path.to_owned(),
        source,
    })
}

/// A `/proc/PID/status` field in kB (`VmRSS:`, `VmHWM:`).
pub fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}

/// The server's terms for a role's permissions, as `hark hub credential`
/// prints them.
fn permissions(role: Role, host: &str) -> Permissions {
    Permissions::from_terms(&hark_hub::credential::permissions(role, host))
}
