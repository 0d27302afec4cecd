//! What a reply settles an item with, when it fits the item.

use super::{CANCELLED_BY_OPERATOR, Reply, ReplyError};
use crate::model::item::{Item, Outcome};
use crate::model::resolve::{resolve_answer, unconfirmed_defaults};

/// What `reply` settles `item` with, when it fits.
pub(super) fn outcome_of(item: &Item, reply: Reply) -> Result<Outcome, ReplyError> {
    let id = item.id;
    Ok(match (&item.approval, reply) {
        (_, Reply::Cancel) => Outcome::Cancelled {
            reason: CANCELLED_BY_OPERATOR.into(),
        },
        (None, Reply::Answer(answer)) => {
            Outcome::Answered(resolve_answer(&item.request, &answer).map_err(ReplyError::Invalid)?)
        }
        (None, Reply::Skip) => Outcome::Skipped {
            unconfirmed_defaults: unconfirmed_defaults(&item.request),
        },
        (None, reply @ (Reply::Approve(_) | Reply::Deny)) => {
            return Err(ReplyError::HumanReplyMismatch {
                id,
                kind: "question set",
                takes: "answers or a skip",
                got: reply.name(),
            });
        }
        (Some(approval), Reply::Approve(scope)) => {
            let scope = scope.unwrap_or_else(|| approval.default_scope());
            if !approval.offered().contains(&scope) {
                return Err(ReplyError::NotOffered { id, scope });
            }
            Outcome::Approved { scope }
        }
        (Some(_), Reply::Deny) => Outcome::Denied,
        (Some(_), reply @ (Reply::Answer(_) | Reply::Skip)) => {
            return Err(ReplyError::HumanReplyMismatch {
                id,
                kind: "approval",
                takes: "approve or deny",
                got: reply.name(),
            });
        }
    })
}
