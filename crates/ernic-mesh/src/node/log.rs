//! How loud the mesh is, and how it says things: one line on stderr per
//! event, prefixed with the node's id, at or under the level
//! `ERNIC_LOG` names.

use super::Shared;

/// How loud the mesh is on stderr (`ERNIC_LOG=error|warn|info|debug`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
pub(crate) enum Level {
    Error,
    Warn,
    Info,
    Debug,
}

pub(crate) fn log_level() -> Level {
    match std::env::var("ERNIC_LOG").as_deref() {
        Ok("error") => Level::Error,
        Ok("info") => Level::Info,
        Ok("debug") => Level::Debug,
        _ => Level::Warn,
    }
}

/// Joins an error and its sources into one line.
pub(crate) fn full(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

impl Shared {
    pub fn log(&self, level: Level, msg: std::fmt::Arguments<'_>) {
        if level <= self.level {
            let who = self.me().map_or("?".to_string(), |n| n.0.to_string());
            eprintln!("ernic-mesh node {who}: {msg}");
        }
    }
}
