//! What hark's fake agents (`fake-claude`, `fake-codex`, `fake-gemini`,
//! `fake-opencode`) share, so that each holds only what its own CLI does:
//!
//! - [`identity`]: the process as the tests find it from outside a
//!   confinement, and the ids made unique by it;
//! - [`log`]: the JSON lines a fake appends to the file its `FAKE_*_LOG`
//!   names, and the hark environment they record;
//! - [`mcp`]: the MCP client (rmcp) a fake starts its servers with and
//!   calls their tools through;
//! - [`script`]: the script in the prompt that says what a fake does, one
//!   command a line;
//! - [`session`]: where a fake keeps the sessions it can be resumed in;
//! - [`words`]: a command line read as the Node CLIs (yargs) read it;
//! - [`piped_stdin`]: what a CLI reads of its stdin before it starts.

pub mod identity;
pub mod log;
pub mod mcp;
pub mod script;
pub mod session;
pub mod words;

use std::io::{IsTerminal, Read};

/// Whatever stdin holds, read to its end, unless it is a terminal (as
/// `opencode run` and `gemini -p` read it before they start).
pub fn piped_stdin() -> String {
    let mut stdin = String::new();
    if !std::io::stdin().is_terminal() {
        let _ = std::io::stdin().read_to_string(&mut stdin);
    }
    stdin
}
