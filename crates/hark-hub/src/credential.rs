//! Who may do what on the hub, enforced by the NATS server: each host
//! connects with an nkey (a key pair whose public half the server's config
//! lists), and the server's per-subject permissions say what that key may
//! publish. An agent's key may post its own host's items and write the
//! asker's side of their decisions, never the operator's: an agent cannot
//! answer itself, on any host, nor rewrite, withdraw or post in the name
//! of another host's items (every key starts with its host: [`crate::wire`]). hark makes the key pair and prints the server's user entry; it
//! keeps no users of its own.

use serde_json::{Value, json};

use crate::Role;
use crate::wire::{DECISIONS, ITEMS, host_token};

/// A new credential: the seed (secret: the host keeps it) and the public
/// key the server's config names.
#[derive(Debug)]
pub struct Credential {
    pub seed: String,
    pub public: String,
}

/// Makes a user key pair.
pub fn make() -> Credential {
    let pair = nkeys::KeyPair::new_user();
    Credential {
        // A freshly made user pair always has its seed.
        seed: pair.seed().unwrap_or_default(),
        public: pair.public_key(),
    }
}

/// What `role` on `host` may publish and subscribe to, in the server's
/// terms: the minimal lists measured against nats-server 2.15.1
/// (tests/it/nats_server, each subject shown needed by taking it away). An
/// operator's key is the team's and may write anything of the buckets.
///
/// An agent's key reads only its own host's decisions: through consumers
/// whose filter is in the request's subject (see [`crate::read`]), and
/// replies to its own inboxes ([`inbox_prefix`]). It may still ask for
/// the buckets' stream info, which can list their keys (hosts, item ids,
/// which side decided), never a value: `hark doctor` and binding the
/// buckets need it.
pub fn permissions(role: Role, host: &str) -> Value {
    let token = host_token(host);
    let inboxes = format!("{}.>", inbox_prefix(role, host));
    let publish = match role {
        Role::Operator => json!({
            "allow": ["$JS.API.>", "$JS.FC.>", format!("$KV.{ITEMS}.>"), format!("$KV.{DECISIONS}.>")],
        }),
        Role::Agent => json!({
            "allow": [
                format!("$KV.{ITEMS}.{token}.*"),
                format!("$KV.{DECISIONS}.{token}.*.asker"),
                format!("$JS.API.STREAM.INFO.KV_{ITEMS}"),
                format!("$JS.API.STREAM.INFO.KV_{DECISIONS}"),
                format!("$JS.API.CONSUMER.CREATE.KV_{DECISIONS}.*.$KV.{DECISIONS}.{token}.>"),
                format!("$JS.API.CONSUMER.DELETE.KV_{DECISIONS}.>"),
                format!("$JS.FC.KV_{DECISIONS}.>"),
            ],
            "deny": [format!("$KV.{DECISIONS}.*.*.operator")],
        }),
    };
    json!({ "publish": publish, "subscribe": { "allow": [inboxes] } })
}

/// The prefix of the inboxes `role` on `host` receives replies and a
/// watch's deliveries at: an agent host's are its own, so its key cannot
/// listen to another's replies (an operator's reads of every item).
pub fn inbox_prefix(role: Role, host: &str) -> String {
    match role {
        Role::Operator => "_INBOX".to_owned(),
        Role::Agent => format!("_INBOX.{}", host_token(host)),
    }
}

/// The entry for the server's `authorization { users = [ … ] }`.
pub fn server_user(public: &str, role: Role, host: &str) -> Value {
    json!({ "nkey": public, "permissions": permissions(role, host) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_may_write_its_own_hosts_askers_side_and_never_the_operators() {
        let agent = permissions(Role::Agent, "ci.7");
        let allowed: Vec<&str> = agent["publish"]["allow"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(allowed.contains(&"$KV.hark_decisions.ci=2e7.*.asker"));
        assert!(allowed.contains(&"$KV.hark_items.ci=2e7.*"));
        assert!(
            !allowed
                .iter()
                .any(|s| s.contains("operator") || *s == "$JS.API.>" || *s == "$KV.hark_items.>")
        );
        assert_eq!(
            agent["publish"]["deny"][0].as_str(),
            Some("$KV.hark_decisions.*.*.operator")
        );
        // Its reads name its host; its replies come to its own inboxes.
        assert!(
            allowed
                .iter()
                .filter(|s| s.contains("CONSUMER.CREATE") || s.contains("GET"))
                .all(|s| s.ends_with("$KV.hark_decisions.ci=2e7.>"))
        );
        assert_eq!(
            agent["subscribe"]["allow"][0].as_str(),
            Some("_INBOX.ci=2e7.>")
        );
    }

    #[test]
    fn a_made_credential_is_a_user_key() {
        let made = make();
        assert!(made.seed.starts_with("SU"));
        assert!(made.public.starts_with('U'));
        assert_eq!(
            nkeys::KeyPair::from_seed(&made.seed).unwrap().public_key(),
            made.public
        );
    }
}
