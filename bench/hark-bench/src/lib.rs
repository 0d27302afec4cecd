//! What hark's benchmarks share besides the harness (`hark-harness`, which
//! they share with the tests): the summaries of their samples, and how they
//! read their command line. `hark-bench` (the MCP server and the inbox) and
//! `hark-desktop-bench` (the desktop app) are its two users.

pub mod args;
pub mod stats;
