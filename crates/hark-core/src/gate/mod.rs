//! The gates a run passes before the agent acts on its own: the write-mode
//! gate of a read-only run (which calls ask the operator: [`policy`]; what
//! was allowed already: [`grants`]) and the authored questions asked before
//! the work starts ([`intake`]).

pub mod commands;
pub mod grants;
pub mod intake;
pub mod policy;
pub mod shell;

#[cfg(test)]
mod tests;
