//! Putting a run's item to the driving client: which way its revision
//! allows, the elicitation request for the item, and what the client said
//! as the reply the daemon takes.
//!
//! - Before 2026-07-28 a server may send the client requests: the
//!   elicitation is nested in the open tool call ([`Way::Nested`]).
//! - 2026-07-28 forbids that: the tool call returns an input-required
//!   result carrying the same request, and the client retries the call
//!   with its response ([`Way::InputRequired`]). The `requestState` is the
//!   item's id, a handle only: a retry is taken only for an item a run of
//!   this studio waits on, so a forged one can at most answer what the
//!   client was asked.
//! - A client that advertises no elicitation, or negotiated a revision
//!   before it existed, is handed the item as `awaiting_operator`.

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest,
    InputRequests, InputRequiredResult, InputResponses, ProtocolVersion, Request,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{RoleServer, model::ClientCapabilities};
use serde_json::{Map, Value};

use hark_core::bridge::client::ClientError;
use hark_core::bridge::views::ItemView;
use hark_core::bridge::wire::{ErrorCode, ServerFrame, WireError, WireReply};
use hark_core::model::ids::ItemId;

use crate::elicitation::{self, Form};

/// The client a tool call came from, as that call names it (a 2026-07-28
/// client says who it is in every request's `_meta`; earlier ones in the
/// handshake).
#[derive(Debug, Clone)]
pub(super) struct Caller {
    pub peer: Peer<RoleServer>,
    version: Option<ProtocolVersion>,
    capabilities: Option<ClientCapabilities>,
}

/// How an item can be put to a caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Way {
    /// An elicitation request nested in the open tool call.
    Nested(Form),
    /// An input-required result the client retries the call with.
    InputRequired(Form),
}

impl Way {
    /// The form the revision allows, either way.
    pub fn form(self) -> Form {
        match self {
            Way::Nested(form) | Way::InputRequired(form) => form,
        }
    }
}

impl Caller {
    pub fn of(context: &RequestContext<RoleServer>) -> Caller {
        Caller {
            peer: context.peer.clone(),
            version: context.protocol_version(),
            capabilities: context.client_capabilities(),
        }
    }

    /// The way its revision and capabilities allow; `None`: hand the item
    /// over as `awaiting_operator`.
    pub fn way(&self) -> Option<Way> {
        let version = self.version.as_ref()?;
        self.capabilities.as_ref()?.elicitation.as_ref()?;
        let form = Form::for_version(version)?;
        Some(if version >= &ProtocolVersion::V_2026_07_28 {
            Way::InputRequired(form)
        } else {
            Way::Nested(form)
        })
    }
}

/// An item as an elicitation: the request, and how its result reads.
#[derive(Debug)]
pub(super) struct Prompt<'a> {
    item: &'a ItemView,
    form: Form,
    pub params: ElicitRequestParams,
}

impl<'a> Prompt<'a> {
    /// `None` when the item's questions do not fit a form.
    pub fn of(item: &'a ItemView, form: Form) -> Option<Prompt<'a>> {
        let questions = &item.request.questions;
        let mut schema = elicitation::schema_json(questions, form);
        // A write approval is its one question, with no free text.
        if item.approval.is_some()
            && let Some(properties) = schema["properties"].as_object_mut()
        {
            properties.retain(|key, _| !key.ends_with("_other"));
        }
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: elicitation::message(&item.attribution.line, questions),
            requested_schema: serde_json::from_value(schema).ok()?,
        };
        Some(Prompt { item, form, params })
    }

    pub fn item(&self) -> &'a ItemView {
        self.item
    }

    /// The input-required result that carries it, keyed by the item's id,
    /// which is also the request state the retry echoes.
    pub fn input_required(self) -> InputRequiredResult {
        let key = self.item.id.to_string();
        let request = InputRequest::Elicitation(ElicitRequest::new(self.params));
        let requests = InputRequests::from([(key.clone(), request)]);
        InputRequiredResult::new(Some(requests), Some(key))
    }

    /// What the client said, as the reply to send; `None` when it does not
    /// read as one (the item is then handed over as `awaiting_operator`).
    /// Declined or cancelled is a skip; for an approval, a denial, since
    /// silence is never consent.
    pub fn reply(&self, said: &ElicitResult) -> Option<WireReply> {
        let questions = &self.item.request.questions;
        let approval = self.item.approval.is_some();
        match said.action {
            ElicitationAction::Accept => {
                let content = match &said.content {
                    Some(Value::Object(content)) => content.clone(),
                    _ => Map::new(),
                };
                let answers = elicitation::picks(questions, self.form, &content).ok()?;
                if approval {
                    verdict(&answers)
                } else {
                    Some(WireReply::Answer {
                        answers,
                        notes: Default::default(),
                    })
                }
            }
            _ if approval => Some(WireReply::Deny),
            _ => Some(WireReply::Skip),
        }
    }
}

/// A retry's `requestState` that names no item: not one this server
/// issued.
#[derive(Debug, thiserror::Error)]
#[error("requestState {0:?} is not one this server issued")]
pub(super) struct UnknownState(String);

/// The item a retry's `requestState` names, and the client's response to
/// its elicitation (`None` when the retry carries none that reads as one).
pub(super) fn retried(
    state: &str,
    responses: Option<&InputResponses>,
) -> Result<(ItemId, Option<ElicitResult>), UnknownState> {
    let id = state
        .parse::<uuid::Uuid>()
        .map(ItemId)
        .map_err(|_| UnknownState(state.to_owned()))?;
    let said = responses
        .and_then(|r| r.get(state))
        .and_then(|said| serde_json::from_value(said.clone()).ok());
    Ok((id, said))
}

/// Why the daemon did not take the studio's reply.
#[derive(Debug, thiserror::Error)]
pub(super) enum Refused {
    #[error("{}", .0.message)]
    Daemon(WireError),
    #[error("the daemon answered {0:?}")]
    Unexpected(Box<ServerFrame>),
    #[error(transparent)]
    Unreachable(#[from] ClientError),
}

impl Refused {
    /// The item was settled by another reply first.
    pub fn answered_elsewhere(&self) -> bool {
        matches!(self, Refused::Daemon(e) if e.code == ErrorCode::NotPending)
    }
}

/// An approval's picked option as the verdict it stands for.
fn verdict(answers: &hark_core::model::resolve::Picks) -> Option<WireReply> {
    use hark_core::model::approval::{Approval, Verdict};
    let Some(hark_core::model::resolve::Pick::Label(label)) = answers.values().next() else {
        return None;
    };
    Some(match Approval::verdict_of(label)? {
        Verdict::Allow(scope) => WireReply::Approve { scope: Some(scope) },
        Verdict::Deny => WireReply::Deny,
    })
}

/// An elicitation request as a server sends it nested in a call.
pub(super) fn nested(params: ElicitRequestParams) -> rmcp::model::ServerRequest {
    rmcp::model::ServerRequest::ElicitRequest(Request::new(params))
}
