//! Resuming the parked runs whose `hark run` is gone (a reboot, a kill, a
//! closed terminal): their paused-run files ([`crate::store::paused`]) are
//! left unlocked, so when such a run's item settles the daemon resumes it
//! itself (`hark resume`, through the [`Dispatcher`]). A run whose `hark
//! run` still lives holds its file and resumes itself; the daemon leaves
//! it alone.
//!
//! At start the daemon goes through the paused runs once: one whose item
//! settled while nobody could resume it is resumed now; one whose agent
//! session is gone (its transcript deleted) can never be, and is reported
//! so, its item cancelled with the reason and its run recorded as failed,
//! never left to wait for an answer that would reach nobody.

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use tokio::sync::broadcast::error::RecvError;

use crate::daemon::dispatcher::Dispatcher;
use crate::model::ids::RunId;
use crate::model::item::Item;
use crate::registry::{Event, Found, Registry};
use crate::store::paused::{Paused, PausedRun, TakeError};

/// Resumes the paused runs nobody else will.
#[derive(Debug, Clone)]
pub struct Resumer {
    paused: Paused,
    registry: Registry,
    dispatcher: Dispatcher,
    /// The runs being resumed now (each once).
    resuming: Arc<Mutex<HashSet<RunId>>>,
}

impl Resumer {
    pub fn new(paused: Paused, registry: Registry, dispatcher: Dispatcher) -> Resumer {
        Resumer {
            paused,
            registry,
            dispatcher,
            resuming: Arc::default(),
        }
    }

    /// Goes through the paused runs now, then resumes each whose parked
    /// item settles (on the tokio runtime it is called from).
    pub fn start(self) {
        let mut events = self.registry.subscribe();
        tokio::spawn(async move {
            self.scan();
            loop {
                match events.recv().await {
                    Ok(Event::Settled { item, .. }) if item.parked_at().is_some() => {
                        if let Some(run_id) = item.run_id {
                            self.settled(&run_id, &item);
                        }
                    }
                    Ok(_) => {}
                    Err(RecvError::Lagged(_)) => self.scan(),
                    Err(RecvError::Closed) => return,
                }
            }
        });
    }

    /// Each paused run nobody holds: resumed if its item has settled,
    /// reported if it can never be.
    fn scan(&self) {
        for run_id in self.paused.list() {
            let Some(run) = self.unheld(&run_id) else {
                continue;
            };
            match self.registry.by_tool_use(&run.tool_use_id, &run.session) {
                Ok(Some(Found::Settled { .. })) => self.resume(run),
                Ok(Some(Found::Pending(item))) => {
                    if let Some(transcript) = gone_transcript(&item) {
                        self.unresumable(&run, &transcript);
                        self.registry.cancel(item.id, &transcript_gone(&transcript));
                    }
                }
                Ok(None) => {
                    self.forget(&run_id);
                    self.record_failed(
                        &run_id,
                        "hark cannot resume this run: its parked question is no longer in the store",
                    );
                }
                Err(e) => tracing::warn!(%run_id, "cannot look up the paused run's item: {e}"),
            }
        }
    }

    /// A parked item of `run_id` settled: resume the run if its `hark run`
    /// is gone.
    fn settled(&self, run_id: &RunId, item: &Item) {
        let Some(run) = self.unheld(run_id) else {
            return;
        };
        match gone_transcript(item) {
            Some(transcript) => self.unresumable(&run, &transcript),
            None => self.resume(run),
        }
    }

    /// The paused run, when no process holds it (nor is being started to).
    fn unheld(&self, run_id: &RunId) -> Option<PausedRun> {
        if self.lock().contains(run_id) {
            return None;
        }
        match self.paused.peek(run_id) {
            Ok(run) => Some(run),
            // Its `hark run` lives (it resumes itself), or it resumed.
            Err(TakeError::Held(_) | TakeError::NotPaused(_)) => None,
            Err(e) => {
                tracing::warn!(%run_id, "a paused run cannot be resumed: {e}");
                self.record_failed(run_id, &format!("hark cannot resume this run: {e}"));
                self.forget(run_id);
                None
            }
        }
    }

    fn resume(&self, run: PausedRun) {
        if !self.lock().insert(run.run_id) {
            return;
        }
        let this = self.clone();
        tokio::spawn(async move {
            if let Err(e) = this.dispatcher.resume(&run).await {
                tracing::warn!(run_id = %run.run_id, "cannot resume the paused run: {e}");
                this.record_failed(&run.run_id, &format!("hark cannot resume this run: {e}"));
            }
            this.lock().remove(&run.run_id);
        });
    }

    /// Reports a run that can never be resumed, and forgets it.
    fn unresumable(&self, run: &PausedRun, transcript: &Path) {
        tracing::warn!(
            run_id = %run.run_id,
            transcript = %transcript.display(),
            "a parked run cannot be resumed: its agent's session is gone"
        );
        self.forget(&run.run_id);
        self.record_failed(&run.run_id, &transcript_gone(transcript));
    }

    fn forget(&self, run_id: &RunId) {
        if let Err(e) = self.paused.forget(run_id) {
            tracing::debug!(%run_id, "the paused run was not removed: {e}");
        }
    }

    /// Records the run as failed with `why` (when it is recorded, running).
    fn record_failed(&self, run_id: &RunId, why: &str) {
        let Some(store) = self.registry.store() else {
            return;
        };
        match store.run_finished(run_id, 1, Some(why), None) {
            Ok(true) => self.registry.run_changed(),
            Ok(false) => {}
            Err(e) => tracing::warn!(%run_id, "the run's failure was not recorded: {e}"),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<RunId>> {
        self.resuming.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The item's agent session file, when it is known and gone.
fn gone_transcript(item: &Item) -> Option<std::path::PathBuf> {
    let transcript = item.parking.as_ref()?.transcript.as_ref()?;
    (!transcript.exists()).then(|| transcript.clone())
}

fn transcript_gone(transcript: &Path) -> String {
    format!(
        "the agent cannot be resumed: its saved session {} is gone",
        transcript.display()
    )
}
