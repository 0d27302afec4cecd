//! What the daemon serves every call with ([`Daemon`]): the registry, the
//! operator's prompter, the rules a call is checked by, the write-mode gate
//! ([`Gate`]), the dispatcher and the agents it watches; and how a call
//! becomes a new item (`Daemon::new_item`) with its bounded wait.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use crate::bridge::wire::Caller;
use crate::config::Config;
use crate::daemon::dispatcher::Dispatcher;
use crate::daemon::hosts::Hosts;
use crate::daemon::peers::Agents;
use crate::gate::grants::Grants;
use crate::gate::policy::Policy;
use crate::model::approval::Approval;
use crate::model::ids::{Clock, Ids};
use crate::model::item::{Item, Parking};
use crate::model::schema::AskRequest;
use crate::model::validate::Rules;
use crate::prompter::OperatorPrompter;
use crate::registry::Registry;

/// The longest wait a call may ask for (a day).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(24 * 60 * 60);

/// What the listener needs to serve calls.
#[derive(Clone)]
pub struct Daemon {
    pub registry: Registry,
    pub prompter: Arc<dyn OperatorPrompter>,
    /// The wait when a call names none.
    pub default_timeout: Duration,
    pub rules: Rules,
    /// The write-mode gate's policy and the grants given so far.
    pub gate: Arc<Gate>,
    /// Starts the runs the operator dispatches through this daemon.
    pub dispatcher: Dispatcher,
    /// Where new items' ids come from.
    pub ids: Ids,
    /// What new items are stamped with.
    pub clock: Clock,
    /// The agents waiting on the operator and the runs it dispatched: no
    /// operator frame is taken from inside one (shared with the dispatcher).
    pub agents: Agents,
    /// The sockets other hosts' agents ask through.
    pub hosts: Hosts,
    /// The web surface's address once it serves (`hark serve --web`, the
    /// app with `[web]`), for the pairing URL `hark web pair` prints.
    pub web_url: Arc<std::sync::OnceLock<String>>,
}

/// The write-mode gate, as the daemon keeps it.
#[derive(Debug, Default)]
pub struct Gate {
    pub policy: Policy,
    pub grants: Grants,
}

impl Gate {
    pub fn new(policy: Policy) -> Gate {
        Gate {
            policy,
            grants: Grants::default(),
        }
    }
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("default_timeout", &self.default_timeout)
            .field("rules", &self.rules)
            .finish_non_exhaustive()
    }
}

impl Daemon {
    /// A daemon with `registry` that puts items to `prompter`, set as
    /// `config` says: its bounded wait, its rules, its write policy and how
    /// many run logs it keeps. The runs it dispatches report to `socket` and
    /// log under `logs`. New ids are random and items are stamped with the
    /// system clock.
    pub fn new(
        registry: Registry,
        prompter: Arc<dyn OperatorPrompter>,
        config: &Config,
        socket: PathBuf,
        logs: PathBuf,
    ) -> Daemon {
        let agents = Agents::default();
        let hosts = Hosts::beside(&socket);
        Daemon {
            dispatcher: Dispatcher {
                hark: Dispatcher::sibling_hark(),
                socket,
                logs,
                registry: registry.clone(),
                own_env: Vec::new(),
                log_limit: config.run_log_limit,
                ids: Ids::random(),
                agents: agents.clone(),
            },
            agents,
            hosts,
            registry,
            prompter,
            default_timeout: config.ask_timeout(),
            rules: config.rules(),
            gate: Arc::new(Gate::new(config.approvals.clone())),
            ids: Ids::random(),
            clock: Clock::system(),
            web_url: Arc::default(),
        }
    }

    /// A new pending item for `caller`'s request.
    pub(super) fn new_item(
        &self,
        caller: Caller,
        request: AskRequest,
        approval: Option<Approval>,
    ) -> Item {
        let session_id = caller.session();
        let mut asker = caller.asker;
        if let Some(tool_use_id) = &caller.tool_use_id {
            asker.sub_agent = self.registry.take_sub_agent(tool_use_id, &session_id);
        }
        Item {
            id: self.ids.item(),
            session_id,
            run_id: caller.run_id,
            asker,
            request,
            approval,
            created_at: self.clock.now(),
            timeout: effective_timeout(caller.timeout_secs, self.default_timeout),
            parking: caller
                .tool_use_id
                .map(|tool_use_id| Parking {
                    tool_use_id,
                    parked_at: None,
                    transcript: caller.transcript,
                })
                .filter(|_| caller.parks),
            mirrored: false,
        }
    }
}

/// The call's wait: its own when valid, else the default; never above [`MAX_TIMEOUT`].
pub(super) fn effective_timeout(requested: Option<f64>, default: Duration) -> Duration {
    requested
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(|s| Duration::from_secs_f64(s.min(MAX_TIMEOUT.as_secs_f64())))
        .unwrap_or(default)
}
