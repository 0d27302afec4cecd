//! hark end to end, in one test binary: every test drives the real `hark`
//! (and the desktop tests the real `hark-app`) as an agent host, an operator
//! and a person would, each in its own sandbox (see `hark-harness`).
//!
//! # Layout
//!
//! - `bridge`: the operator-ask bridge; MCP clients (rmcp's) spawn `hark
//!   mcp-operator-ask`, which carries each call to `hark serve` with a
//!   scripted operator.
//! - `inbox`: the store through the real binary, the reply rules, the feed,
//!   the terminal surface.
//! - `listings`: listings of any size, paged by bytes and clipped, and
//!   items fetched whole (`hark show`, `hark answer PREFIX`).
//! - `run`, `intake`, `approvals`: `hark run` dispatching the fake `claude
//!   -p` (`tests/fake-claude`): the bridge it gets, intake questions before
//!   it starts, the write-mode gate.
//! - `codex`: `hark run` dispatching the fake `codex exec`
//!   (`tests/fake-codex`), attached, headless, read-only, wrapped, detached.
//! - `opencode`: `hark run` dispatching the fake `opencode run`
//!   (`tests/fake-opencode`), attached, headless, read-only, wrapped,
//!   conversing; and the real OpenCode offline when `HARK_TEST_OPENCODE`
//!   names it.
//! - `gemini`: the real Gemini CLI (`gemini -p` 0.61.0, `tests/agents`, or
//!   `HARK_TEST_GEMINI`) offline against the mock Gemini API, set up by hand
//!   with what `hark mcp-config --for gemini` prints: answered, not answered.
//! - `gemini_run`: `hark run` dispatching the fake `gemini -p`
//!   (`tests/fake-gemini`), attached, headless, read-only, wrapped; and the
//!   real Gemini CLI run by `hark run --agent gemini`.
//! - `fake_agent`: the fake `claude -p` itself, against what was measured
//!   on the real CLI: `PreToolUse` hooks, `defer` and resuming a deferred
//!   call (docs/src/agents/claude-code.md).
//! - `doctor`: `hark doctor` on a healthy setup and on each missing piece.
//! - `install`: starting at login (the autostart entry, from the command
//!   line and the tray).
//! - `studio`: `hark mcp-studio` driven by rmcp clients: elicitations per
//!   revision, `awaiting_operator` and `answer`, an answer from elsewhere.
//! - `store`: a store that cannot be written (a full disk) loses no
//!   question, and the operator is told.
//! - `desktop`: the app under Xvfb with a private D-Bus session and dunst,
//!   driven through tauri-driver + WebKitWebDriver. Its tests take turns
//!   (one desktop at a time); the others run beside them.
//! - `demo`: the scenario the screenshots show: three agents in two
//!   projects ask at once, one inbox holds them in order, each answer
//!   reaches its own run.
//! - `desktop_web`: the app serving the web surface too: a hundred replies
//!   from a browser, the socket and the app's window race to one item.
//! - `forged`: other programs on the session bus forge the notification
//!   server's signals and the tray host's menu clicks; no question is
//!   answered or cancelled by them.
//! - `window`: the operator's window in the app: Markdown made safe,
//!   AskUserQuestion's previews and notes.
//! - `tree`: an agent, and every process it starts, is refused the
//!   operator's frames while it waits on the operator.
//! - `confine`: what `hark run` starts cannot reach the operator's side at
//!   all: helpers its tools detach (`setsid -f`, a double fork, `nohup`)
//!   try the socket, the store, a paused run's file, the config, the display.
//! - `docs`: not a run but a reading: every relative link and anchor of the
//!   README, the book (`docs/src`), `BENCHMARKS.md` and `CONTRIBUTING.md`
//!   resolves, and the README and `BENCHMARKS.md` stay short.
//! - `reference`: not a run but a reading: the book's CLI, configuration
//!   and environment references are what the code generates now
//!   (`HARK_UPDATE_REFERENCE=1 … -- reference` writes them).
//! - `layout`: not a run but a reading: every product crate's sources keep
//!   the layout (typed errors, short files, no module cycle), and clippy's
//!   lints hold the rest (short functions; the core prints nothing).
//! - `web`: the web surface's HTTP API against `hark serve --web`: pairing
//!   and its rate limit, sessions and CSRF, replies through the one
//!   registry, the SSE stream resumed with `Last-Event-ID`.
//! - `web_browser`: the web surface in headless Chromium as a phone
//!   (390×844, touch): pairing, a question and an approval answered by
//!   taps, axe-core on every page.
//! - `nats_server`: not hark yet but the facts the team hub rests on,
//!   against a real nats-server (`hark_harness::nats`) with async-nats: one
//!   decision wins a race, the server refuses an agent's answer, a restart
//!   keeps data and watches, a cluster without quorum has unknown outcomes.
//! - `support`: what they share beyond the harness: the build under test,
//!   sandboxes and daemons, MCP clients, the questions, the fake agent's
//!   record; `support::desktop` drives the app through WebDriver.

#![allow(
    clippy::too_many_lines,
    reason = "a test is one scenario read top to bottom; the layout's 100 lines hold for product code"
)]

mod approvals;
mod bridge;
mod codex;
mod confine;
mod demo;
mod desktop;
mod desktop_web;
mod docs;
mod doctor;
mod fake_agent;
mod forged;
mod gemini;
mod gemini_run;
mod hub;
mod inbox;
mod install;
mod intake;
mod interactive;
mod layout;
mod listings;
mod nats_server;
mod opencode;
mod parking;
mod reference;
mod run;
mod ssh;
mod store;
mod studio;
mod support;
mod tree;
mod web;
mod web_browser;
mod web_push;
mod window;
