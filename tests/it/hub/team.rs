//! A team on one machine: a nats-server whose users are the team's hosts,
//! and each host a sandbox of its own (its config's `[hub]`, its seed).

use std::collections::HashMap;
use std::process::Output;

use hark_harness::nats::{NatsCluster, NatsOptions, NatsServer, NatsUser, Permissions};
use hark_hub::Role;
use serde_json::{Value, json};

use crate::support::{Agent, Daemon, Sandbox, sandbox, serve_in};

/// The hosts every team test has: two operators' and one CI runner's.
const HOSTS: [(&str, Role); 3] = [
    ("alpha", Role::Operator),
    ("beta", Role::Operator),
    ("ci-runner", Role::Agent),
];

pub struct Team {
    servers: Servers,
    seeds: HashMap<&'static str, String>,
}

/// One server, or a cluster of them.
enum Servers {
    One(NatsServer),
    Cluster(NatsCluster),
}

/// An operator's daemon on the hub.
pub struct Operator {
    pub daemon: Daemon,
    pub sandbox: Sandbox,
}

/// A host with no daemon: its agents ask the hub directly.
pub struct AgentHost {
    pub sandbox: Sandbox,
}

impl Team {
    /// The server, its users the hosts' keys with their roles' permissions.
    pub fn start() -> Team {
        Team::on(|options| NatsServer::start(options).map(Servers::One))
    }

    /// A cluster of `size` servers instead, each bucket kept on all.
    pub fn start_cluster(size: usize) -> Team {
        Team::on(|options| NatsCluster::start(size, options).map(Servers::Cluster))
    }

    fn on(
        start: impl FnOnce(&NatsOptions) -> Result<Servers, hark_harness::nats::NatsError>,
    ) -> Team {
        let mut seeds = HashMap::new();
        let mut users = Vec::new();
        for (host, role) in HOSTS {
            let made = hark_hub::credential::make();
            users.push(NatsUser {
                nkey: made.public.clone(),
                permissions: permissions(role, host),
            });
            seeds.insert(host, made.seed);
        }
        let servers = start(&NatsOptions { users })
            .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
        Team { servers, seeds }
    }

    /// Every server's URL, as the config's `url` takes them.
    pub fn url(&self) -> String {
        match &self.servers {
            Servers::One(server) => server.url(),
            Servers::Cluster(cluster) => cluster.urls().join(","),
        }
    }

    pub fn server(&mut self) -> &mut NatsServer {
        match &mut self.servers {
            Servers::One(server) => server,
            Servers::Cluster(_) => panic!("a cluster, not one server"),
        }
    }

    pub fn cluster(&mut self) -> &mut NatsCluster {
        match &mut self.servers {
            Servers::Cluster(cluster) => cluster,
            Servers::One(_) => panic!("one server, not a cluster"),
        }
    }

    /// A sandbox for `host`, its config's `[hub]` naming the server.
    pub fn host(&self, host: &str, operator: &str) -> Sandbox {
        let sandbox = sandbox();
        let seed = sandbox.path("hub.nk");
        std::fs::write(&seed, &self.seeds[host]).unwrap();
        let replicas = match &self.servers {
            Servers::One(_) => 1,
            Servers::Cluster(cluster) => cluster.len(),
        };
        let config = format!(
            "[hub]\nurl = {:?}\nnkey = {:?}\nhost = {host:?}\noperator = {operator:?}\nreplicas = {replicas}\n",
            self.url(),
            seed.display().to_string(),
        );
        std::fs::write(sandbox.config(), config).unwrap();
        sandbox
    }

    /// `hark serve` on `host`, as `operator`, once it is on the hub.
    pub fn operator(&self, host: &str, operator: &str) -> Operator {
        let sandbox = self.host(host, operator);
        Operator::start(sandbox)
    }

    /// The same, its prompter answering as `script` says (a terminal
    /// operator who answers what is put before them).
    pub fn operator_answering(&self, host: &str, operator: &str, script: Value) -> Operator {
        let sandbox = self.host(host, operator);
        Operator::start_with(sandbox, script)
    }

    pub fn agent_host(&self, host: &str) -> AgentHost {
        AgentHost {
            sandbox: self.host(host, "ci"),
        }
    }

    /// With `host`'s agent credential, writes an operator's answer to `id`
    /// on the hub directly (not through hark's rules): what a hostile
    /// agent would try.
    pub async fn forge_answer(&self, host: &AgentHost, id: &str) -> Result<(), String> {
        let options = hark_hub::HubOptions {
            url: self.url().parse().unwrap(),
            nkey: Some(host.sandbox.path("hub.nk")),
            creds: None,
            ca: None,
            host: "ci-runner".into(),
            operator: "mallory".into(),
            role: Role::Agent,
            timeout: std::time::Duration::from_secs(2),
            replicas: 1,
        };
        let hub = hark_hub::Hub::connect(options)
            .await
            .map_err(|e| e.to_string())?;
        let id = hark_core::model::ids::ItemId(id.parse().unwrap());
        let forged = answered("SQLite", "mallory", "ci-runner");
        let place = hark_hub::wire::Place::new("ci-runner", id);
        match hub
            .decide(&place, hark_hub::wire::Side::Operator, &forged)
            .await
        {
            Ok((_, true)) => Ok(()),
            Ok((winner, false)) => Err(format!("lost to {winner:?}")),
            Err(e) => Err(e.to_string()),
        }
    }

    /// With `host`'s operator credential, puts an answer `pick` over
    /// whatever the operator key of `asker`'s item `id` holds, unguarded:
    /// the later write a cluster's leader change can let in after a
    /// decision was taken.
    pub async fn late_write(&self, host: &str, asker: &str, id: &str, pick: &str) {
        let decisions = self
            .jetstream(host)
            .await
            .get_key_value(hark_hub::wire::DECISIONS)
            .await
            .unwrap();
        let late = answered(pick, "mallory", host);
        decisions
            .put(
                hark_hub::wire::Side::Operator.key(&hark_hub::wire::Place::new(
                    asker,
                    hark_core::model::ids::ItemId(id.parse().unwrap()),
                )),
                serde_json::to_vec(&late).unwrap().into(),
            )
            .await
            .unwrap();
    }

    /// With agent host `agent`'s credential, tries what a hostile agent
    /// would against `owner`'s item `id`: read it, rewrite its question in place,
    /// withdraw it, and post a copy in `owner`'s name under a key of its
    /// own. What the server said to each (`Err` when it refused), and the
    /// copy's id.
    pub async fn speak_for(&self, agent: &str, owner: &str, id: &str) -> SpokeFor {
        use hark_hub::wire::{Place, Side};
        let mut js = self.jetstream(agent).await;
        // A refused publish is never acknowledged.
        js.set_timeout(std::time::Duration::from_secs(2));
        let items = js.get_key_value(hark_hub::wire::ITEMS).await.unwrap();
        let decisions = js.get_key_value(hark_hub::wire::DECISIONS).await.unwrap();
        let item_id = hark_core::model::ids::ItemId(id.parse().unwrap());
        let theirs = Place::new(owner, item_id);
        let read = match items.get(theirs.item_key()).await {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err("not there".to_owned()),
            Err(e) => Err(e.to_string()),
        };
        // The item as it stands, read with an operator's key: the agent's
        // own cannot read it (`read`), but may have seen it elsewhere.
        let operators = self.jetstream("beta").await;
        let mut posted: Value = serde_json::from_slice(
            &operators
                .get_key_value(hark_hub::wire::ITEMS)
                .await
                .unwrap()
                .get(theirs.item_key())
                .await
                .unwrap()
                .expect("the item is on the hub"),
        )
        .unwrap();
        posted["item"]["request"]["questions"][0]["question"] = json!("Keep the database?");
        let rewrite = items
            .put(
                theirs.item_key(),
                serde_json::to_vec(&posted).unwrap().into(),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string());
        let withdrawn = answered("SQLite", "mallory", agent);
        let withdraw = decisions
            .put(
                Side::Asker.key(&theirs),
                serde_json::to_vec(&withdrawn).unwrap().into(),
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string());
        let copy = uuid::Uuid::new_v4().to_string();
        posted["item"]["id"] = json!(copy);
        let ours = Place::new(agent, hark_core::model::ids::ItemId(copy.parse().unwrap()));
        let impersonate = items
            .put(ours.item_key(), serde_json::to_vec(&posted).unwrap().into())
            .await
            .map(|_| ())
            .map_err(|e| e.to_string());
        SpokeFor {
            read,
            rewrite,
            withdraw,
            impersonate,
            copy,
        }
    }

    /// A JetStream client with `host`'s credential.
    async fn jetstream(&self, host: &str) -> async_nats::jetstream::Context {
        let servers: Vec<async_nats::ServerAddr> =
            self.url().split(',').map(|u| u.parse().unwrap()).collect();
        let role = HOSTS.iter().find(|(h, _)| *h == host).unwrap().1;
        let client = async_nats::ConnectOptions::with_nkey(self.seeds[host].clone())
            .custom_inbox_prefix(hark_hub::credential::inbox_prefix(role, host))
            .connect(servers)
            .await
            .unwrap();
        async_nats::jetstream::new(client)
    }

    /// Waits until the cluster's decisions stream has a leader again and
    /// every replica is current: the nodes that were away have caught up.
    pub async fn decisions_settled(&self) {
        let js = self.jetstream("alpha").await;
        crate::nats_server::cluster::settled_leader(&js).await;
    }
}

/// What the server said to each of [`Team::speak_for`]'s writes.
#[derive(Debug)]
pub struct SpokeFor {
    pub read: Result<(), String>,
    pub rewrite: Result<(), String>,
    pub withdraw: Result<(), String>,
    pub impersonate: Result<(), String>,
    pub copy: String,
}

/// An operator's answer `pick` to the db question, as the hub records it.
fn answered(pick: &str, operator: &str, host: &str) -> hark_hub::wire::Decided {
    hark_hub::wire::Decided {
        v: hark_hub::wire::VERSION,
        outcome: serde_json::from_value(json!({"outcome": "answered",
            "answers": {"Which database?": pick}, "defaulted": []}))
        .unwrap(),
        by: Some(hark_core::model::item::Remote {
            operator: operator.into(),
            host: host.into(),
            surface: None,
        }),
        nonce: format!("{operator}-{pick}"),
    }
}

impl Operator {
    /// Starts `hark serve` in `sandbox` and waits until it is on the hub.
    pub fn start(sandbox: Sandbox) -> Operator {
        Operator::start_with(sandbox, json!({}))
    }

    /// Starts it with a prompter answering as `script` says.
    pub fn start_with(sandbox: Sandbox, script: Value) -> Operator {
        let daemon = serve_in(&sandbox, script, &[]);
        daemon
            .log
            .wait("on the team's hub", hark_harness::PATIENCE, |lines| {
                lines
                    .iter()
                    .any(|l| l.text.contains("on the team's hub"))
                    .then_some(())
            })
            .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
        Operator { daemon, sandbox }
    }

    /// The id of the first question asked here (its own, or filed from
    /// the hub).
    pub fn asked(&self) -> String {
        let asked = self.daemon.log.wait_event("operator.question.asked", &[]);
        asked["question_id"].as_str().unwrap().to_owned()
    }

    /// Waits until this daemon's hub client has connected again after
    /// losing the server (its second `hub.connected`).
    pub fn reconnected(&self) {
        self.daemon
            .log
            .wait_event_from(0, hark_hub::CONNECTED, hark_harness::PATIENCE, |e| {
                e["connections"].as_u64() >= Some(2)
            })
            .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
    }

    /// The item `id` once it settled here, as the inbox shows it.
    pub fn settled(&self, id: &str) -> Value {
        self.daemon
            .log
            .wait("the item settled", hark_harness::PATIENCE, |lines| {
                lines
                    .iter()
                    .any(|l| {
                        l.text.contains(id)
                            && (l.text.contains("operator.question.answered")
                                || l.text.contains("operator.question.unanswered"))
                    })
                    .then_some(())
            })
            .unwrap_or_else(|e| panic!("{}", hark_harness::Report(&e)));
        history(&self.sandbox, id)
    }

    /// An agent of this operator's own, asking through this daemon.
    pub async fn agent(&self) -> Agent {
        crate::support::agent(&self.sandbox, &[]).await
    }
}

impl AgentHost {
    /// `hark mcp-operator-ask --hub` as an agent host would spawn it.
    pub async fn agent(&self, env: &[(&str, &str)]) -> Agent {
        let mut cmd = self.sandbox.hark(["mcp-operator-ask", "--hub"]);
        for (k, v) in env {
            cmd.env(k, v);
        }
        crate::support::connect(cmd).await
    }
}

/// `hark answer ID --pick LABEL` on `sandbox`'s daemon.
pub fn answer_on(sandbox: &Sandbox, id: &str, label: &str) -> Output {
    sandbox
        .hark(["answer", id, "--pick", label])
        .output()
        .unwrap()
}

/// The item `id` as `sandbox`'s inbox lists it.
pub fn history(sandbox: &Sandbox, id: &str) -> Value {
    crate::support::inbox(sandbox)
        .into_iter()
        .find(|item| item["id"] == id)
        .unwrap_or_else(|| panic!("item {id} is not in the inbox"))
}

/// The server's terms for a role's permissions.
fn permissions(role: Role, host: &str) -> Permissions {
    Permissions::from_terms(&hark_hub::credential::permissions(role, host))
}
