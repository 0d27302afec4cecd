//! Who asks, in one glance: the agent (claude, codex, a script), the
//! project (its directory's last component), the session and the run, for
//! every surface to show the same way instead of an agent's whole command
//! line (which can run to pages: its system prompt).

use serde::{Deserialize, Serialize};

use crate::model::ids::{RunId, SessionId};
use crate::model::item::{Asker, SubAgent};

/// Who asked an item, compactly.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attribution {
    /// The agent: `claude`, `codex`, or the asking program's name.
    pub agent: String,
    /// The last component of the directory it works in.
    pub project: Option<String>,
    /// The session, short: a name as given, an id's first 8 characters.
    pub session: String,
    /// The run's short id.
    pub run: Option<String>,
    /// `sub-agent general-purpose of run 1a2b3c4d`, for a sub-agent.
    pub sub_agent: Option<String>,
    /// The host it asked from, when that is not this machine.
    pub host: Option<String>,
    /// Whether the agent runs confined by `hark run`; the line says when
    /// it does not (`· not confined`).
    pub confined: bool,
    /// All of it in one line, as every surface shows it: `claude in hark ·
    /// session nested · run 1a2b3c4d` (a sub-agent's label takes the
    /// agent's and the run's place).
    pub line: String,
}

/// Agents known by name, as a word of their command line or their MCP
/// client's name contains it.
const KNOWN_AGENTS: &[(&str, &str)] = &[
    ("claude", "claude"),
    ("codex", "codex"),
    ("gemini", "gemini"),
    ("goose", "goose"),
    ("cursor", "cursor"),
    ("opencode", "opencode"),
];

impl Attribution {
    pub fn of(asker: &Asker, session: &SessionId, run: Option<&RunId>) -> Attribution {
        let mut who = Attribution {
            agent: agent_name(asker),
            project: asker.cwd.as_deref().and_then(project_name),
            session: short_session(session.as_str()),
            run: run.map(RunId::short),
            sub_agent: asker
                .sub_agent
                .as_ref()
                .map(|s: &SubAgent| s.label(run, session)),
            host: asker.host.clone(),
            confined: asker.confined,
            line: String::new(),
        };
        who.line = who.one_line();
        who
    }

    fn one_line(&self) -> String {
        let mut parts = Vec::new();
        let who = self.sub_agent.as_deref().unwrap_or(&self.agent);
        let mut first = match &self.project {
            Some(project) => format!("{who} in {project}"),
            None => who.to_owned(),
        };
        if let Some(host) = &self.host {
            first = format!("{first} on {host}");
        }
        parts.push(first);
        parts.push(format!("session {}", self.session));
        if let (Some(run), None) = (&self.run, &self.sub_agent) {
            parts.push(format!("run {run}"));
        }
        if !self.confined {
            parts.push("not confined".to_owned());
        }
        parts.join(" · ")
    }
}

/// The agent's name: a known agent its client or command line names, else
/// the command's program, else "an agent".
fn agent_name(asker: &Asker) -> String {
    // A permission dialog of a session someone started in a terminal: its
    // own name, which the inbox's filter finds.
    if asker.client.as_deref() == Some(crate::model::item::INTERACTIVE) {
        return crate::model::item::INTERACTIVE.to_owned();
    }
    let words = asker
        .client
        .iter()
        .flat_map(|c| c.split_whitespace().take(1))
        .chain(
            asker
                .command
                .iter()
                .flat_map(|c| c.split_whitespace().take(4)),
        );
    for word in words {
        // The whole word: `node …/claude-code/cli.js` names its agent in a
        // directory.
        let word = word.to_ascii_lowercase();
        if let Some((_, name)) = KNOWN_AGENTS.iter().find(|(key, _)| word.contains(key)) {
            return (*name).to_owned();
        }
    }
    asker
        .command
        .as_deref()
        .and_then(|c| c.split_whitespace().next())
        .map(|program| basename(program).to_owned())
        .unwrap_or_else(|| "an agent".to_owned())
}

fn basename(word: &str) -> &str {
    word.trim_end_matches('/')
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(word)
}

fn project_name(cwd: &str) -> Option<String> {
    let name = basename(cwd);
    (!name.is_empty()).then(|| name.to_owned())
}

/// A session as people read it: a name as given, an id (a UUID, a long
/// token) by its first 8 characters.
fn short_session(session: &str) -> String {
    let looks_like_id = session.len() > 20 && !session.contains(' ');
    if looks_like_id {
        session.chars().take(8).collect()
    } else {
        session.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asker(command: &str, cwd: &str, client: Option<&str>) -> Asker {
        Asker {
            command: Some(command.to_owned()),
            cwd: Some(cwd.to_owned()),
            client: client.map(str::to_owned),
            ..Asker::default()
        }
    }

    #[test]
    fn a_known_agent_its_project_and_a_short_session() {
        let node = asker(
            "node /usr/lib/node_modules/@anthropic-ai/claude-code/cli.js -p fix it --append-system-prompt …",
            "/home/me/src/hark/",
            None,
        );
        let run: RunId = "1a2b3c4d-0000-0000-0000-000000000000".parse().unwrap();
        let who = Attribution::of(
            &node,
            &"09a48a90-5e5b-4c3a-9d2e-1f2a3b4c5d6e".into(),
            Some(&run),
        );
        assert_eq!(
            who.line,
            "claude in hark · session 09a48a90 · run 1a2b3c4d · not confined"
        );
        let confined = Asker {
            confined: true,
            ..node.clone()
        };
        assert_eq!(
            Attribution::of(&confined, &"s".into(), Some(&run)).line,
            "claude in hark · session s · run 1a2b3c4d"
        );
        let codex = asker(
            "/opt/bin/codex exec",
            "/w/app",
            Some("codex-mcp-client 0.171.0"),
        );
        assert_eq!(
            Attribution::of(&codex, &"nightly".into(), None).line,
            "codex in app · session nightly · not confined"
        );
        let remote = Asker {
            host: Some("devbox".into()),
            ..codex.clone()
        };
        assert_eq!(
            Attribution::of(&remote, &"nightly".into(), None).line,
            "codex in app on devbox · session nightly · not confined"
        );
        let dialog = asker("claude", "/w/api", Some(crate::model::item::INTERACTIVE));
        assert_eq!(
            Attribution::of(
                &dialog,
                &"4b5fc9be-674d-43ed-9878-ffd87caa1f33".into(),
                None
            )
            .line,
            "claude (interactive) in api · session 4b5fc9be · not confined"
        );
        let script = asker("python3 ask.py", "/", None);
        assert_eq!(
            Attribution::of(&script, &"s".into(), None).line,
            "python3 · session s · not confined"
        );
    }

    #[test]
    fn a_sub_agent_is_named_in_the_agents_place() {
        let mut sub = asker("claude -p x", "/w/hark", None);
        sub.sub_agent = Some(SubAgent {
            id: "a1".into(),
            kind: "Explore".into(),
        });
        let run: RunId = "1a2b3c4d-0000-0000-0000-000000000000".parse().unwrap();
        assert_eq!(
            Attribution::of(&sub, &"nested".into(), Some(&run)).line,
            "sub-agent Explore of run 1a2b3c4d in hark · session nested · not confined"
        );
    }
}
