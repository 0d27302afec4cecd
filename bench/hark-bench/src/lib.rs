//! What hark's benchmarks share: the sandbox every child runs in, and the
//! summaries of their samples, and how they read their command line. `hark-bench` (the MCP server and the inbox)
//! and `hark-desktop-bench` (the desktop app) are its two users.

pub mod args;
pub mod child;
pub mod sandbox;
pub mod stats;
