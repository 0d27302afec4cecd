//! The grants given so far: "turn" (the rest of this run) and "session"
//! grants, checked before the operator is asked again.

use std::collections::HashSet;
use std::sync::Mutex;

use crate::model::approval::{Approval, Scope};

/// The grants given so far: by run ("turn") and by session.
#[derive(Debug, Default)]
pub struct Grants {
    inner: Mutex<GrantSets>,
}

#[derive(Debug, Default)]
struct GrantSets {
    runs: HashSet<String>,
    sessions: HashSet<String>,
}

impl Grants {
    fn sets(&self) -> std::sync::MutexGuard<'_, GrantSets> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The grant covering a write in `run` of `session`, if any. External
    /// effects are never covered.
    pub fn covering(&self, approval: &Approval, run: &str, session: &str) -> Option<Scope> {
        if approval.external {
            return None;
        }
        let sets = self.sets();
        if sets.sessions.contains(session) {
            Some(Scope::Session)
        } else if sets.runs.contains(run) {
            Some(Scope::Turn)
        } else {
            None
        }
    }

    /// Remembers a grant (an action grant is not remembered).
    pub fn grant(&self, scope: Scope, run: &str, session: &str) {
        let mut sets = self.sets();
        match scope {
            Scope::Turn => {
                sets.runs.insert(run.to_owned());
            }
            Scope::Session => {
                sets.sessions.insert(session.to_owned());
            }
            Scope::Action => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grants_cover_their_scope_and_never_an_external_effect() {
        let grants = Grants::default();
        let edit = Approval {
            tool: "Write".into(),
            target: "a".into(),
            preview: "x".into(),
            external: false,
        };
        assert_eq!(grants.covering(&edit, "run-1", "s"), None);
        grants.grant(Scope::Action, "run-1", "s");
        assert_eq!(grants.covering(&edit, "run-1", "s"), None);
        grants.grant(Scope::Turn, "run-1", "s");
        assert_eq!(grants.covering(&edit, "run-1", "s"), Some(Scope::Turn));
        assert_eq!(grants.covering(&edit, "run-2", "s"), None);
        grants.grant(Scope::Session, "run-2", "s");
        assert_eq!(grants.covering(&edit, "run-3", "s"), Some(Scope::Session));
        let push = Approval {
            external: true,
            ..edit
        };
        assert_eq!(grants.covering(&push, "run-3", "s"), None);
    }
}
