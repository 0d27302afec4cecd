//! The phone push, through ntfy: each new item is published to the
//! configured topic in ntfy's JSON publish format (a POST to the server's
//! root), with up to three `http` action buttons — a single-select
//! question's options (at most three; `detail = "full"` only, their labels
//! being the agent's text), or an approval's Allow and Deny — each calling
//! `POST <public_url>/api/push/<token>` with a one-time token bound to the
//! item and that choice (the store keeps its hash), so it is answered from
//! the lock screen. Tapping the notification opens the web surface on
//! that item (`<public_url>/#item/<id>`, through pairing if the browser
//! has no session).
//!
//! A push is replaced by a follow-up with the same `sequence_id` (ntfy
//! 2.16 replaces in place; an older server adds one more): when its item
//! parks, one saying so with the same buttons (their tokens then held until
//! it settles); when it settles, one saying how it ended, with no buttons.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::body::Bytes;
use axum::http::{Request, header};
use hark_core::config::{HttpUrl, Ntfy, Origin, PushDetail};
use hark_core::model::approval::Scope;
use hark_core::model::attribution::Attribution;
use hark_core::model::ids::ItemId;
use hark_core::model::item::{Item, Outcome, Surface};
use hark_core::model::resolve::{Pick, Picks};
use hark_core::pairing;
use hark_core::registry::{Event, Registry, Reply};
use hark_core::secrets::{PushSecrets, SecretsError};
use hark_core::store::Store;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::Serialize;
use tokio::sync::broadcast::error::RecvError;

/// The most buttons an ntfy notification shows.
pub const MAX_ACTIONS: usize = 3;
/// How long a button's token lasts for an item that may park (its agent
/// waits past its deadline) until it does: a day at least; otherwise until
/// the item's deadline. Once it parked, until it settles.
pub const PARKING_TTL: Duration = Duration::from_secs(24 * 60 * 60);
/// How long a publish may take.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(10);

/// The choice an approval's Allow stands for: this action alone, the
/// narrowest grant (from a lock screen, without the diff in front of you).
const ALLOW: &str = "allow";
const DENY: &str = "deny";
/// A question's option, by its label: `option:<label>`.
const OPTION: &str = "option:";

/// Where and how to push.
#[derive(Debug, Clone)]
pub struct PushOptions {
    pub ntfy: Ntfy,
    pub detail: PushDetail,
    /// The web surface as a phone reaches it.
    pub public_url: HttpUrl,
}

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(
        "`[push]` needs the web surface: its buttons call it. Add `[web]` to the config \
         (or serve with `--web ADDR`) and set `[web] public_url`"
    )]
    NoWeb,
    #[error(
        "`[push]` needs `[web] public_url`: the address a phone reaches the web surface at \
         (`https://box.tailnet.ts.net` through `tailscale serve`, or a TLS reverse proxy's), \
         which its buttons and click open"
    )]
    NoPublicUrl,
    #[error("no ntfy topic: `hark push setup` makes one")]
    NoTopic,
    #[error("the push's topic and token: {0}")]
    Secrets(#[from] SecretsError),
    #[error("the push's HTTPS client: {0}")]
    Client(#[from] std::io::Error),
}

impl PushOptions {
    /// The config's `[push]`, checked against its `[web]`, with the topic
    /// and token `kept` apart (`PushSecrets::load`) where the config does
    /// not give them; `None` without `[push]`. `web_on`: the web surface
    /// serves (`[web]` or `--web`).
    pub fn from_config(
        push: Option<&hark_core::config::Push>,
        web: Option<&hark_core::config::Web>,
        web_on: bool,
        kept: impl FnOnce() -> Result<Option<PushSecrets>, SecretsError>,
    ) -> Result<Option<PushOptions>, PushError> {
        let Some(push) = push else {
            return Ok(None);
        };
        if !web_on {
            return Err(PushError::NoWeb);
        }
        // Both are http(s) URLs: the config was refused otherwise.
        let public_url = web
            .and_then(|w| w.public_url.clone())
            .ok_or(PushError::NoPublicUrl)?;
        let ntfy = push.ntfy.with_kept(kept)?;
        if ntfy.topic.trim().is_empty() {
            return Err(PushError::NoTopic);
        }
        Ok(Some(PushOptions {
            ntfy,
            detail: push.detail,
            public_url,
        }))
    }

    /// The public URL's origin (`scheme://host[:port]`), which the web
    /// surface accepts as it accepts `[web] origins`.
    pub fn origin(&self) -> Origin {
        self.public_url.origin()
    }
}

/// One message in ntfy's JSON publish format.
#[derive(Debug, Serialize)]
pub struct Message {
    pub topic: String,
    pub title: String,
    pub message: String,
    pub priority: u8,
    pub tags: Vec<String>,
    pub click: String,
    pub actions: Vec<Action>,
    /// The item's id: a later message with it replaces this one (ntfy 2.16).
    pub sequence_id: String,
}

/// An ntfy `http` action button.
#[derive(Debug, Clone, Serialize)]
pub struct Action {
    pub action: &'static str,
    pub label: String,
    pub url: String,
    pub method: &'static str,
    pub headers: std::collections::BTreeMap<String, String>,
    pub body: String,
    pub clear: bool,
}

/// A button's choice, and its label.
fn choices(item: &Item, detail: PushDetail) -> Vec<(String, String)> {
    if item.approval.is_some() {
        return vec![
            (ALLOW.to_owned(), "Allow once".to_owned()),
            (DENY.to_owned(), "Deny".to_owned()),
        ];
    }
    let question = &item.request.questions[0];
    let quick = detail == PushDetail::Full
        && item.request.questions.len() == 1
        && !question.multi_select
        && question.options.len() <= MAX_ACTIONS;
    if !quick {
        return Vec::new();
    }
    question
        .options
        .iter()
        .map(|o| (format!("{OPTION}{}", o.label), o.label.clone()))
        .collect()
}

fn tags(item: &Item) -> Vec<String> {
    vec![
        "hark".to_owned(),
        if item.approval.is_some() {
            "approval"
        } else {
            "question"
        }
        .to_owned(),
    ]
}

/// The title and text of a new item's push.
fn texts(item: &Item, detail: PushDetail) -> (String, String) {
    let who = Attribution::of(&item.asker, &item.session_id, item.run_id.as_ref());
    match (detail, &item.approval) {
        (PushDetail::TitleOnly, Some(_)) => (
            format!("Approval — {}", who.line),
            "An agent asks to write. Allow once or deny here, or open hark to see what.".to_owned(),
        ),
        (PushDetail::TitleOnly, None) => (
            format!("Question — {}", who.line),
            "An agent asks you something. Open hark to see it.".to_owned(),
        ),
        (PushDetail::Full, _) => {
            let questions = &item.request.questions;
            let asked = match questions.len() {
                1 => questions[0].question.clone(),
                n => format!("{} (and {} more)", questions[0].question, n - 1),
            };
            (format!("{} — {}", questions[0].header, who.line), asked)
        }
    }
}

/// What a parked item's follow-up says, before what its push said.
const PARKED: &str = "Parked: the agent is paused until you answer.";

/// What a settled item's follow-up says.
fn ended(outcome: &Outcome, by: Option<Surface>) -> String {
    let how = match outcome {
        Outcome::Answered(_) => "Answered",
        Outcome::Skipped { .. } => "Skipped",
        Outcome::TimedOut { .. } => "Timed out",
        Outcome::Cancelled { .. } => "Cancelled",
        Outcome::NoOperator => "Not answered",
        Outcome::Approved { .. } => "Allowed",
        Outcome::Denied => "Denied",
    };
    match by {
        Some(Surface::Push) => format!("{how} from this notification."),
        Some(surface) => format!("{how} ({}).", surface.name()),
        None => format!("{how}."),
    }
}

/// The reply a taken token's choice stands for on `item`; `None` when
/// the choice does not fit it.
pub fn reply_of(item: &Item, choice: &str) -> Option<Reply> {
    match (item.approval.is_some(), choice) {
        (true, ALLOW) => Some(Reply::Approve(Some(Scope::Action))),
        (true, DENY) => Some(Reply::Deny),
        (false, choice) => {
            let label = choice.strip_prefix(OPTION)?;
            let question = item.request.questions.first()?;
            if !question.has_option(label) {
                return None;
            }
            let picks = Picks::from([(question.question.clone(), Pick::Label(label.to_owned()))]);
            Reply::from_picks(item, picks)
        }
        _ => None,
    }
}

/// Publishes pushes for `registry`'s items from now on, in a task of its own.
pub fn start(
    registry: &Registry,
    store: Arc<Store>,
    options: PushOptions,
) -> Result<(), PushError> {
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_platform_verifier(rustls::crypto::ring::default_provider())?
        .https_or_http()
        .enable_http1()
        .build();
    let http = Client::builder(TokioExecutor::new()).build(https);
    let mut events = registry.subscribe();
    let pusher = Pusher {
        http,
        store,
        options,
        pushed: HashMap::new(),
    };
    tokio::spawn(async move {
        let mut pusher = pusher;
        loop {
            match events.recv().await {
                Ok(Event::Added(item)) => pusher.added(&item).await,
                Ok(Event::Parked(item)) => pusher.parked(&item).await,
                Ok(Event::Settled {
                    item,
                    outcome,
                    replied_by,
                    ..
                }) => pusher.settled(&item, &outcome, replied_by).await,
                Ok(_) => {}
                Err(RecvError::Lagged(n)) => {
                    tracing::warn!(
                        missed = n,
                        "the push fell behind; some items were not pushed"
                    )
                }
                Err(RecvError::Closed) => return,
            }
        }
    });
    Ok(())
}

type Http = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

struct Pusher {
    http: Http,
    store: Arc<Store>,
    options: PushOptions,
    /// Items pushed and not yet settled, with their push's buttons.
    pushed: HashMap<ItemId, Vec<Action>>,
}

impl Pusher {
    /// When a new button's token expires; `None`: when its item settles.
    fn token_expiry(item: &Item) -> Option<SystemTime> {
        match &item.parking {
            Some(parking) if parking.parked_at.is_some() => None,
            Some(_) => Some(item.deadline().max(item.created_at + PARKING_TTL)),
            None => Some(item.deadline()),
        }
    }

    /// Where tapping `item`'s push leads: the web surface, on that item.
    fn click(&self, item: &Item) -> String {
        let item = format!("item/{}", item.id);
        self.options.public_url.at(&[""], Some(&item)).into()
    }

    /// New buttons for `item`, their tokens stored.
    fn buttons(
        &self,
        item: &Item,
    ) -> Result<Vec<Action>, Box<dyn std::error::Error + Send + Sync>> {
        let expires = Pusher::token_expiry(item);
        let mut actions = Vec::new();
        for (choice, label) in choices(item, self.options.detail) {
            let token = pairing::secret()?;
            self.store
                .add_push_token(&pairing::hash(&token), item.id, &choice, expires)?;
            actions.push(Action {
                action: "http",
                label,
                url: self
                    .options
                    .public_url
                    .at(&["api", "push", &token], None)
                    .into(),
                method: "POST",
                headers: Default::default(),
                body: String::new(),
                clear: true,
            });
        }
        Ok(actions)
    }

    /// The push of a pending item, with `actions`.
    fn message(&self, item: &Item, actions: Vec<Action>) -> Message {
        let (title, message) = texts(item, self.options.detail);
        Message {
            topic: self.options.ntfy.topic.clone(),
            title,
            message,
            priority: if item.approval.is_some() { 4 } else { 3 },
            tags: tags(item),
            click: self.click(item),
            actions,
            sequence_id: item.id.to_string(),
        }
    }

    /// Publishes `message`, `item`'s push, which keeps its buttons until
    /// the item settles.
    async fn push(&mut self, item: &Item, message: Message, what: &'static str) {
        if self.publish(&message).await {
            tracing::info!(question_id = %item.id, buttons = message.actions.len(), "{what}");
            self.pushed.insert(item.id, message.actions);
        }
    }

    async fn added(&mut self, item: &Item) {
        match self.buttons(item) {
            Ok(actions) => {
                let message = self.message(item, actions);
                self.push(item, message, "push published").await;
            }
            Err(e) => tracing::warn!(question_id = %item.id, "no push: {e}"),
        }
    }

    /// `item` parked: its buttons' tokens last until it settles, and its
    /// push is replaced by one that says so, with the same buttons (new
    /// ones if it was never pushed).
    async fn parked(&mut self, item: &Item) {
        if let Err(e) = self.store.hold_push_tokens(item.id) {
            tracing::warn!(question_id = %item.id, "the push's buttons may expire: {e}");
        }
        let actions = match self.pushed.get(&item.id) {
            Some(actions) => actions.clone(),
            None => match self.buttons(item) {
                Ok(actions) => actions,
                Err(e) => {
                    tracing::warn!(question_id = %item.id, "no push: {e}");
                    return;
                }
            },
        };
        let mut message = self.message(item, actions);
        message.message = format!("{PARKED}\n{}", message.message);
        message.tags.push("parked".to_owned());
        self.push(item, message, "push updated: parked").await;
    }

    async fn settled(&mut self, item: &Item, outcome: &Outcome, by: Option<Surface>) {
        if self.pushed.remove(&item.id).is_none() {
            return;
        }
        let (title, _) = texts(item, self.options.detail);
        let message = Message {
            topic: self.options.ntfy.topic.clone(),
            title,
            message: ended(outcome, by),
            priority: 2,
            tags: tags(item),
            click: self.click(item),
            actions: Vec::new(),
            sequence_id: item.id.to_string(),
        };
        if self.publish(&message).await {
            tracing::info!(question_id = %item.id, "push updated: settled");
        }
    }

    /// POSTs `message` to the server's root; false (and a warning) when
    /// it was not taken.
    async fn publish(&self, message: &Message) -> bool {
        let root = self.options.ntfy.server.at(&[""], None);
        let server = root.as_str();
        let body = match serde_json::to_vec(message) {
            Ok(body) => body,
            Err(e) => {
                tracing::warn!("no push: {e}");
                return false;
            }
        };
        let mut request = Request::post(server).header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = &self.options.ntfy.token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let request = match request.body(Full::new(Bytes::from(body))) {
            Ok(request) => request,
            Err(e) => {
                tracing::warn!(server, "no push: {e}");
                return false;
            }
        };
        match tokio::time::timeout(PUBLISH_TIMEOUT, self.http.request(request)).await {
            Ok(Ok(response)) if response.status().is_success() => {
                // Read to its end, so the connection is kept for the next.
                let _ = response.into_body().collect().await;
                true
            }
            Ok(Ok(response)) => {
                tracing::warn!(status = %response.status(), server, "ntfy refused the push");
                false
            }
            Ok(Err(e)) => {
                tracing::warn!(server, "the push did not reach ntfy: {e}");
                false
            }
            Err(_) => {
                tracing::warn!(server, "ntfy did not answer the push in time");
                false
            }
        }
    }
}

#[cfg(test)]
mod tests;
