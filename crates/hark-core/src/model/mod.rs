//! The domain: AskUserQuestion's shapes ([`schema`]), the checks on a call
//! ([`validate`]), turning the operator's picks into answers ([`resolve`]),
//! and the items that wait on the operator ([`item`]), and who asked them,
//! compactly ([`attribution`]).

pub mod approval;
pub mod attribution;
pub mod ids;
pub mod item;
pub mod resolve;
pub mod run;
pub mod schema;
pub mod validate;
