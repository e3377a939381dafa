//! The `ernic` command.
fn main() {}
