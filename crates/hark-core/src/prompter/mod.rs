//! The one deliberate seam: whoever answers the operator's questions.
//!
//! Implementations: the desktop app (the product), [`crate::prompter::script`] (tests
//! and demos), [`crate::prompter::terminal`] (SSH users). Headless means no prompter at
//! all: the tool is not attached.

pub mod script;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use crate::model::ids::SessionId;
use crate::model::item::{Item, Surface};
use crate::model::resolve::Picks;

/// Why a prompter returned without picks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    /// The operator chose Skip.
    #[error("the operator skipped the question")]
    Skipped,
    /// The prompter cannot ask (it is shutting down, its terminal closed, …).
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// No operator surface is attached.
    #[error("no operator is attached")]
    NoOperator,
}

/// What a prompter's `ask` returns.
pub type PromptFuture = Pin<Box<dyn Future<Output = Result<Picks, Unanswered>> + Send>>;

/// Puts an item in front of the operator and returns what they picked.
///
/// The returned future may be dropped at any time: the item was settled
/// elsewhere (timed out, cancelled, answered from another surface), and the
/// prompter should move on. Picks are resolved (defaults filled, labels
/// checked) by the core, not here.
pub trait OperatorPrompter: Send + Sync + 'static {
    fn ask(&self, session_id: &SessionId, item: Arc<Item>) -> PromptFuture;

    /// The surface's name, recorded as who replied (`desktop`, `terminal`, `script`).
    fn surface(&self) -> Surface;
}
