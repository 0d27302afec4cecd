//! The gates a run passes before the agent acts on its own: the write-mode
//! gate of a read-only run (which calls ask the operator: [`policy`], which
//! parses a Bash line with [`shell`] and checks each command's flags against
//! the rules of [`commands`], and operands that are programs or expressions
//! with [`operands`], [`sed`] and [`awk`]; what was allowed already:
//! [`grants`]) and the authored questions asked before the work starts
//! ([`intake`]). The Bash cases the gate is held to are `corpus.txt`, read
//! by the tests.

pub mod awk;
pub mod commands;
pub mod grants;
pub mod intake;
pub mod operands;
pub mod policy;
pub mod sed;
pub mod shell;

#[cfg(test)]
mod tests;
