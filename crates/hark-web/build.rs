//! Rebuilds the crate when anything under `ui/src` changes, a new file
//! included: the pages are embedded (rust-embed), and a directory given to
//! `rerun-if-changed` is scanned whole.

fn main() {
    println!("cargo:rerun-if-changed=../../ui/src");
}
