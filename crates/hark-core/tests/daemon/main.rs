//! In-process tests of the socket side of hark, shaped like mini-redis's
//! `tests/server.rs`: each test binds a listener on a socket in a temp dir,
//! spawns the daemon's listener on it with a shutdown it holds, and speaks
//! the protocol to it with the real client or raw frames.
//!
//! Time is paused: the runtime jumps to the next deadline only when every
//! task is idle. Unix-socket I/O is real, but a frame written is readable at
//! once, so the clock never moves while a frame is in flight; tests wait on
//! events (a frame, a prompt, a registry event), never on a sleep.
//!
//! - `listener`: ask, reply, subscribe, cancel, shutdown, approve.
//! - `limits`: an unfinished frame (the first or a later one) is dropped at
//!   its deadline, a connection idle between frames is not; one process
//!   cannot hold every connection.
//! - `listings`: listing entries clipped and marked, pages, `get` whole.
//! - `parking`: an ask that parks at the end of its wait, `await`, and the
//!   same tool use asking again.
//! - `relay`: a run's socket carries calls to the app socket, filed under the run.
//! - `client`: `request` and `Call` against a listener, and their errors
//!   (a socket squatted by another user, when run as root).

mod client;
mod limits;
mod listener;
mod listings;
mod parking;
mod relay;
mod support;
