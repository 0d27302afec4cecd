//! What serves the operator: the listener that takes each connection
//! ([`listener`]), the operator's requests on it ([`operator`]: reply, list,
//! follow), who may make them ([`peers`]: not an agent waiting on the
//! operator nor anything it started, read from the process tree by
//! [`ancestry`]), the runs the daemon starts ([`dispatcher`]) or resumes
//! ([`resumer`]: parked runs whose `hark run` is gone), and putting
//! it all together for `hark serve` and the desktop app ([`serve`]).
//!
//! Calls go one way: the listener hands an approval to the write-mode gate
//! ([`gated`]) and a tool use asking again to [`parked`]; both of them, and
//! the listener's new asks, wait on the operator through one race
//! (`waiting`), and everything serves calls with the [`state`] the daemon
//! was made with.

pub mod ancestry;
pub mod dispatcher;
pub mod gated;
pub mod hosts;
pub mod listener;
pub mod operator;
pub mod parked;
pub mod peers;
pub mod resumer;
pub mod serve;
pub mod state;
mod waiting;
