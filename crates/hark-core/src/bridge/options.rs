//! The options of one `hark run`, in one struct for every surface that
//! starts a run: the command line flattens it (`hark run --verb …`, with
//! the `clap` feature), `hark run --detach` and the desktop's dispatch form
//! send it in a `dispatch` frame ([`DispatchRequest`](super::wire::DispatchRequest)),
//! the daemon's dispatcher and the studio hand it to the run they start as
//! one JSON argument (`hark run --options-json`), and the studio's `run`
//! tool takes it, its JSON Schema generated from this type. A new option
//! is a new field here, and every place that takes a run apart destructures
//! it whole: it does not compile until each has handled the field.

use std::path::PathBuf;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::{AgentKind, Verb};
use crate::config::OnTimeout;

/// How one `hark run` is to go.
#[cfg_attr(feature = "clap", derive(clap::Args))]
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunOptions {
    /// What kind of run: task, ask, decide, or converse (turn after turn).
    #[cfg_attr(feature = "clap", arg(long, default_value = "task"))]
    #[serde(default)]
    pub verb: Verb,
    /// The agent's working directory.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "string"))]
    pub cwd: Option<PathBuf>,
    /// The session its questions are filed under.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub session: Option<String>,
    /// Seconds the operator has for each of its questions.
    #[cfg_attr(feature = "clap", arg(long = "timeout", value_name = "SECS", value_parser = seconds))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub timeout_secs: Option<f64>,
    /// A question nobody answers within that time: `park` pauses the agent
    /// until you answer, however late, then resumes it with the answer;
    /// `proceed` gives it the not-answered error (default: the config's
    /// `on_timeout`, else park).
    #[cfg_attr(feature = "clap", arg(long, value_name = "WHAT", value_parser = on_timeout()))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub on_timeout: Option<OnTimeout>,
    /// The agent command (default: the config's `agent_command`, else
    /// `claude`, or `codex`/`opencode`/`gemini` with `--agent-kind
    /// codex|opencode|gemini`).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PATH"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "string"))]
    pub agent: Option<PathBuf>,
    /// Which CLI the agent is, `claude`, `codex`, `opencode` or `gemini`
    /// (default: the config's `agent_kind`, else what the command's name
    /// says: `--agent codex` is Codex, `--agent opencode` OpenCode,
    /// `--agent gemini` Gemini CLI).
    #[cfg_attr(feature = "clap", arg(long, value_name = "KIND"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional))]
    pub agent_kind: Option<AgentKind>,
    /// Attach the bridge to your own agent command line (after --).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub wrap: bool,
    /// Run the agent read-only: each write (Edit, Write, Bash outside a
    /// read-only allowlist, …) asks the operator, who may allow it once,
    /// for the run or for the session; with nobody attached it is denied.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default)]
    pub read_only: bool,
    /// Start the agent unconfined: hark's socket, store and config, the
    /// display and the session bus are then within its reach, and the run
    /// is labelled "not confined" everywhere (`[confine] enabled = false`
    /// does the same for every run).
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(as = "Option<bool>", optional))]
    pub no_confine: bool,
    /// Authored questions to ask before the agent starts (JSON:
    /// {preamble, questions:[{id, prompt, options:[{value,label}],
    /// defaults, multi}], when: "thread-start"|"every-turn"}); their
    /// answers go into the prompt. Unanswered, the agent does not start.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(optional, type = "unknown"))]
    pub intake: Option<IntakeSource>,
    /// An intake answer given here instead of asked (repeat it).
    #[cfg_attr(feature = "clap", arg(long = "answer", value_name = "ID=VALUE"))]
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub answers: Vec<String>,
    /// Hand the run to the app (or `hark serve`): it goes on when this
    /// terminal closes, its output goes to a log, `hark runs` follows
    /// it. Prints the run id.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub detach: bool,
    /// Ask the team's hub directly, on a host with no daemon (a CI
    /// runner): at URL, or the config's `[hub] url` when none is given,
    /// with the config's credential (an agent's). A question nobody
    /// answers in its wait ends not answered: nothing parks, since no
    /// daemon lives on here to resume the agent.
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "URL", num_args = 0..=1, default_missing_value = "", conflicts_with = "detach")
    )]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ts", ts(skip))]
    pub hub: Option<String>,
    /// The prompt, or with --wrap the agent command line.
    #[cfg_attr(
        feature = "clap",
        arg(last = true, required = true, value_name = "PROMPT…")
    )]
    #[serde(rename = "prompt", with = "words")]
    #[schemars(with = "words::Words")]
    #[cfg_attr(feature = "ts", ts(rename = "prompt", type = "string | Array<string>"))]
    pub words: Vec<String>,
}

impl RunOptions {
    /// The prompt: the words, one space between each.
    pub fn prompt(&self) -> String {
        self.words.join(" ")
    }
}

/// An intake: a file (`--intake FILE`), or its JSON, as the daemon and the
/// studio are sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IntakeSource {
    /// The intake's file (relative to where `hark run` starts).
    File(PathBuf),
    /// The intake itself.
    Inline(Value),
}

impl From<PathBuf> for IntakeSource {
    fn from(path: PathBuf) -> IntakeSource {
        IntakeSource::File(path)
    }
}

impl std::str::FromStr for IntakeSource {
    type Err = std::convert::Infallible;

    fn from_str(path: &str) -> Result<Self, Self::Err> {
        Ok(IntakeSource::File(path.into()))
    }
}

/// A timeout that is not a positive number of seconds.
#[derive(Debug, thiserror::Error)]
#[error("a timeout must be a positive number of seconds, got {0}")]
pub struct NotSeconds(pub String);

/// A positive number of seconds.
pub fn seconds(text: &str) -> Result<f64, NotSeconds> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(NotSeconds(text.to_owned())),
    }
}

/// `--on-timeout`'s values, as clap lists them.
#[cfg(feature = "clap")]
fn on_timeout() -> impl clap::builder::TypedValueParser<Value = OnTimeout> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(["park", "proceed"]).map(|value| {
        match value.as_str() {
            "park" => OnTimeout::Park,
            _ => OnTimeout::Proceed,
        }
    })
}

/// The words on the wire: `prompt`, one string (the desktop's form, an
/// agent's `run` call) or the words as they were given (a `--wrap`
/// command line); sent as one string when there is one word.
mod words {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize, schemars::JsonSchema)]
    #[serde(untagged)]
    pub(super) enum Words {
        /// What the agent is to do.
        One(String),
        /// The words of the prompt, or with `wrap` the agent's command line.
        Many(Vec<String>),
    }

    pub(super) fn serialize<S: Serializer>(words: &[String], to: S) -> Result<S::Ok, S::Error> {
        match words {
            [one] => one.serialize(to),
            many => many.serialize(to),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<Vec<String>, D::Error> {
        Ok(match Words::deserialize(from)? {
            Words::One(one) => vec![one],
            Words::Many(many) => many,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    /// Every field set, none to its default.
    pub(crate) fn every_option() -> RunOptions {
        let options = RunOptions {
            verb: Verb::Converse,
            cwd: Some("/work/project".into()),
            session: Some("s1".into()),
            timeout_secs: Some(2.5),
            on_timeout: Some(OnTimeout::Proceed),
            agent: Some("/usr/bin/codex".into()),
            agent_kind: Some(AgentKind::Codex),
            wrap: true,
            read_only: true,
            no_confine: true,
            intake: Some(IntakeSource::Inline(json!({"questions": []}))),
            answers: vec!["db=postgres".into()],
            detach: true,
            hub: Some("nats://hub:4222".into()),
            words: vec!["codex".into(), "exec".into(), "do it".into()],
        };
        // A field added to RunOptions is added here too: this does not
        // compile until it is.
        let RunOptions {
            verb,
            cwd,
            session,
            timeout_secs,
            on_timeout,
            agent,
            agent_kind,
            wrap,
            read_only,
            no_confine,
            intake,
            answers,
            detach,
            hub,
            words,
        } = &options;
        let default = RunOptions::default();
        assert_ne!(*verb, default.verb);
        assert!(cwd.is_some() && session.is_some() && timeout_secs.is_some());
        assert!(on_timeout.is_some() && agent.is_some() && agent_kind.is_some());
        assert!(*wrap && *read_only && *no_confine && *detach);
        assert!(intake.is_some() && hub.is_some());
        assert!(!answers.is_empty() && words.len() > 1);
        options
    }

    #[test]
    fn every_option_survives_the_wire() {
        let options = every_option();
        let json = serde_json::to_value(&options).unwrap();
        assert_eq!(
            serde_json::from_value::<RunOptions>(json.clone()).unwrap(),
            options
        );
        assert_eq!(json["prompt"], json!(["codex", "exec", "do it"]));
        assert_eq!(json["on_timeout"], "proceed");
        assert_eq!(json["timeout_secs"], 2.5);
        // A file intake too.
        let file = RunOptions {
            intake: Some(IntakeSource::File("/tmp/intake.json".into())),
            ..options
        };
        let back: RunOptions =
            serde_json::from_value(serde_json::to_value(&file).unwrap()).unwrap();
        assert_eq!(back, file);
    }

    #[test]
    fn a_prompt_is_one_string_on_the_wire() {
        let options: RunOptions = serde_json::from_value(json!({"prompt": "fix it"})).unwrap();
        assert_eq!(options.words, ["fix it"]);
        assert_eq!(options.verb, Verb::Task);
        assert_eq!(
            serde_json::to_value(&options).unwrap(),
            json!({"prompt": "fix it", "verb": "task", "read_only": false})
        );
        // Without one it is refused.
        assert!(serde_json::from_value::<RunOptions>(json!({"verb": "ask"})).is_err());
    }

    #[test]
    fn the_schema_names_every_option() {
        let schema = serde_json::to_value(schemars::schema_for!(RunOptions)).unwrap();
        let properties = schema["properties"].as_object().unwrap();
        let named: Vec<&str> = properties.keys().map(String::as_str).collect();
        let sent = serde_json::to_value(every_option()).unwrap();
        let sent: Vec<&str> = sent
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(named.len(), sent.len(), "{named:?} vs {sent:?}");
        for key in sent {
            assert!(named.contains(&key), "the schema lacks {key}");
        }
        assert_eq!(schema["required"], json!(["prompt"]));
        // The enums are spelled out: an agent sees what it may send.
        let text = schema.to_string();
        for word in ["converse", "gemini", "proceed"] {
            assert!(text.contains(word), "{word}: {schema}");
        }
    }
}
