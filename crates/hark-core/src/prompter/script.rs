//! The scripted prompter (`hark serve --prompter script:PATH`), for tests and
//! demos: a JSON object mapping question text to what the "operator" does.
//!
//! ```json
//! { "Which database?": "SQLite",
//!   "Which features?": ["Auth", "Search"],
//!   "Project name?": {"text": "falcon"},
//!   "Deploy now?": {"skip": true},
//!   "Slow one?": {"delay_ms": 500, "answer": "Yes"},
//!   "approval:Edit": "turn",
//!   "approval:Bash": "deny" }
//! ```
//!
//! Approvals are keyed by `approval:<tool name>`, with `turn`, `action`,
//! `session` or `deny`; intake questions by their prompt text, like questions.
//!
//! A question the script does not list is left unanswered (it takes its
//! default when another question of the same call is answered, and the call
//! times out when none is).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::model::approval::{Approval, Scope, Verdict};
use crate::model::ids::SessionId;
use crate::model::item::{Item, Surface};
use crate::model::resolve::{Pick, Picks};
use crate::prompter::{OperatorPrompter, PromptFuture, Unanswered};

/// One scripted reaction.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Scripted {
    Delayed {
        delay_ms: u64,
        answer: Box<Scripted>,
    },
    Skip {
        skip: bool,
    },
    Pick(Pick),
}

#[derive(Debug, thiserror::Error)]
pub enum ScriptError {
    #[error("cannot read the script {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("the script {path} is not a JSON object of question → answer: {source}")]
    Parse {
        path: String,
        source: serde_json::Error,
    },
}

/// Answers from a script.
#[derive(Debug, Clone, Default)]
pub struct ScriptedPrompter {
    script: Arc<HashMap<String, Scripted>>,
}

impl ScriptedPrompter {
    pub fn new(script: HashMap<String, Scripted>) -> ScriptedPrompter {
        ScriptedPrompter {
            script: Arc::new(script),
        }
    }

    pub fn load(path: &Path) -> Result<ScriptedPrompter, ScriptError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ScriptError::Read {
            path: shown.clone(),
            source,
        })?;
        let script = serde_json::from_str(&text).map_err(|source| ScriptError::Parse {
            path: shown,
            source,
        })?;
        Ok(ScriptedPrompter::new(script))
    }

    /// What the script says for this item, and after how long.
    fn react(&self, item: &Item) -> Option<(Duration, Result<Picks, Unanswered>)> {
        if let Some(approval) = &item.approval {
            return self.verdict(item, &approval.tool);
        }
        let mut delay = Duration::ZERO;
        let mut picks = Picks::new();
        let mut skipped = false;
        let mut listed = false;
        for q in &item.request.questions {
            let Some(mut entry) = self.script.get(&q.question) else {
                continue;
            };
            listed = true;
            while let Scripted::Delayed { delay_ms, answer } = entry {
                delay = delay.max(Duration::from_millis(*delay_ms));
                entry = answer;
            }
            match entry {
                Scripted::Skip { skip } => skipped |= *skip,
                Scripted::Pick(pick) => {
                    picks.insert(q.question.clone(), pick.clone());
                }
                Scripted::Delayed { .. } => unreachable!("unwrapped above"),
            }
        }
        let result = if skipped {
            Err(Unanswered::Skipped)
        } else {
            Ok(picks)
        };
        listed.then_some((delay, result))
    }
}

impl ScriptedPrompter {
    /// The scripted verdict on an approval, as a pick of its question's option.
    fn verdict(&self, item: &Item, tool: &str) -> Option<(Duration, Result<Picks, Unanswered>)> {
        let mut entry = self.script.get(&format!("approval:{tool}"))?;
        let mut delay = Duration::ZERO;
        while let Scripted::Delayed { delay_ms, answer } = entry {
            delay = delay.max(Duration::from_millis(*delay_ms));
            entry = answer;
        }
        let Scripted::Pick(Pick::Label(word)) = entry else {
            tracing::warn!(
                tool,
                "approval:{tool} in the script must be turn, action, session or deny"
            );
            return None;
        };
        let verdict = match word.as_str() {
            "deny" => Verdict::Deny,
            scope => Verdict::Allow(Scope::parse(scope)?),
        };
        let question = item.request.questions.first()?.question.clone();
        let label = Approval::label_of(verdict).to_owned();
        Some((delay, Ok(Picks::from([(question, Pick::Label(label))]))))
    }
}

impl OperatorPrompter for ScriptedPrompter {
    fn surface(&self) -> Surface {
        Surface::Script
    }

    fn ask(&self, _session_id: &SessionId, item: Arc<Item>) -> PromptFuture {
        let reaction = self.react(&item);
        Box::pin(async move {
            match reaction {
                Some((delay, result)) => {
                    if !delay.is_zero() {
                        tokio::time::sleep(delay).await; // the script's own pacing
                    }
                    result
                }
                // Not in the script: nobody answers; the item times out.
                None => std::future::pending().await,
            }
        })
    }
}
