//! What serves the operator: the listener that takes each connection
//! ([`listener`]), the operator's requests on it ([`operator`]: reply, list,
//! follow), the runs the daemon starts ([`dispatcher`]), and putting it all
//! together for `hark serve` and the desktop app ([`serve`]).

pub mod dispatcher;
pub mod listener;
pub mod operator;
pub mod serve;
