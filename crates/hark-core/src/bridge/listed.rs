//! Listing copies of the views: every long text an agent or an operator
//! wrote is clipped to [`LISTED_CHARS`] with a visible marker
//! (`…[clipped, 600 KB]`), and every list to the length a valid ask has, so
//! a listing stays readable and any one entry weighs a bounded amount
//! whatever was stored. The entry says it was clipped (`clipped: true`);
//! `get` fetches an item whole.

use std::collections::BTreeMap;

use crate::bridge::views::{ItemView, RunView, SessionView};
use crate::model::ids::SessionId;
use crate::model::item::Outcome;
use crate::model::schema::{AnswerValue, Answers, MAX_OPTIONS, MAX_QUESTIONS};
use crate::text::clip_marked;

/// The characters a listing keeps of any one text.
pub const LISTED_CHARS: usize = 1000;

/// Clips texts and lists, remembering whether it cut anything.
#[derive(Debug, Default)]
struct Clipper {
    clipped: bool,
}

impl Clipper {
    fn text(&mut self, text: &mut String) {
        if let Some(short) = clip_marked(text, LISTED_CHARS) {
            *text = short;
            self.clipped = true;
        }
    }

    fn optional(&mut self, text: &mut Option<String>) {
        if let Some(text) = text {
            self.text(text);
        }
    }

    fn session(&mut self, id: &mut SessionId) {
        let mut text = id.as_str().to_owned();
        self.text(&mut text);
        *id = SessionId::from(text);
    }

    fn list<T>(&mut self, list: &mut Vec<T>, max: usize) {
        if list.len() > max {
            list.truncate(max);
            self.clipped = true;
        }
    }

    fn texts(&mut self, texts: &mut Vec<String>, max: usize) {
        self.list(texts, max);
        texts.iter_mut().for_each(|t| self.text(t));
    }

    fn value(&mut self, value: &mut AnswerValue) {
        match value {
            AnswerValue::One(text) => self.text(text),
            AnswerValue::Many(labels) => self.texts(labels, MAX_OPTIONS),
        }
    }

    /// Answers keyed by clipped question texts. Two questions that differ
    /// only past the cut would share a key: the first is kept.
    fn answers(&mut self, answers: &mut Answers) {
        let mut listed = BTreeMap::new();
        for (mut question, mut value) in std::mem::take(answers) {
            if listed.len() == MAX_QUESTIONS {
                self.clipped = true;
                break;
            }
            self.text(&mut question);
            self.value(&mut value);
            listed.entry(question).or_insert(value);
        }
        *answers = listed;
    }
}

impl ItemView {
    /// This item as a listing shows it: long texts clipped and marked.
    pub fn listed(mut self) -> ItemView {
        let mut c = Clipper::default();
        c.session(&mut self.session_id);
        c.optional(&mut self.asker.cwd);
        c.optional(&mut self.asker.command);
        c.optional(&mut self.asker.client);
        c.list(&mut self.request.questions, MAX_QUESTIONS);
        for q in &mut self.request.questions {
            c.text(&mut q.question);
            c.text(&mut q.header);
            c.list(&mut q.options, MAX_OPTIONS);
            for option in &mut q.options {
                c.text(&mut option.label);
                c.text(&mut option.description);
            }
            if let Some(default) = &mut q.default {
                c.value(default);
            }
        }
        if let Some(approval) = &mut self.approval {
            c.text(&mut approval.tool);
            c.text(&mut approval.target);
            c.text(&mut approval.preview);
        }
        match &mut self.outcome {
            Some(Outcome::Answered(resolution)) => {
                c.answers(&mut resolution.answers);
                c.texts(&mut resolution.defaulted, MAX_QUESTIONS);
            }
            Some(Outcome::Skipped {
                unconfirmed_defaults,
            }) => c.answers(unconfirmed_defaults),
            Some(Outcome::Cancelled { reason }) => c.text(reason),
            _ => {}
        }
        self.clipped |= c.clipped;
        self
    }
}

impl RunView {
    /// This run as a listing shows it: its command line (the prompt in
    /// it) and its result clipped and marked.
    pub fn listed(mut self) -> RunView {
        let mut c = Clipper::default();
        c.session(&mut self.session_id);
        c.text(&mut self.command);
        c.optional(&mut self.cwd);
        c.optional(&mut self.result);
        self.clipped |= c.clipped;
        self
    }
}

impl SessionView {
    /// This session as a listing shows it: its id and its agent clipped.
    pub fn listed(mut self) -> SessionView {
        let mut c = Clipper::default();
        c.session(&mut self.session_id);
        c.optional(&mut self.asker.cwd);
        c.optional(&mut self.asker.command);
        c.optional(&mut self.asker.client);
        c.optional(&mut self.last_outcome);
        self.clipped |= c.clipped;
        self
    }
}
