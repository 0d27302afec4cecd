//! The unix-socket bridge between an asker (`hark mcp-operator-ask`, `hark
//! ask`, `hark run`) and whoever serves the operator: the frames
//! ([`wire`], read and written by [`frame`]; a run's [`options`] among them) and the deadline a started frame has ([`deadline`]),
//! owner-only sockets ([`socket`]), the client side of a call
//! ([`client`]), the listing copies of the views ([`listed`]), and the
//! per-run pass-through socket ([`relay`]). The serving side is the
//! `daemon` module, above this one.

pub mod client;
pub mod deadline;
pub mod frame;
pub mod listed;
pub mod options;
pub mod relay;
pub mod socket;
pub mod views;
pub mod window;
pub mod wire;
