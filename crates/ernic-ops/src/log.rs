//! The one logging switch every ernic binary shares.
//!
//! `--log-level` takes a level (`error`, `warn`, `info`, `debug`, `trace`)
//! or a `tracing` env filter (`info,ernic_mesh=debug`); `ERNIC_LOG` says the
//! same when the flag is not given. Lines go to stderr, or appended to
//! `--log-file`; `--log-format json` writes one JSON object per line.
//!
//! What is logged at which level (the rule every crate follows): `error`, a
//! failure the process cannot work around; `warn`, something a person must
//! act on (a peer refused, a write failed); `info`, one line per event a
//! person needs (a client attached, a node joined or died, a command refused
//! and why, a fault injected); `debug`, the reason for every refusal and
//! every state change; `trace`, per packet or work request. Nothing per
//! packet or work request is logged at `info` or above.

use std::path::PathBuf;

use tracing_subscriber::EnvFilter;

/// How lines are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per event.
    Json,
}

/// The logging flags, for `#[command(flatten)]`.
#[derive(Clone, Debug, clap::Args)]
pub struct LogArgs {
    /// What to log: error, warn, info, debug or trace, or an env filter
    /// such as info,ernic_mesh=debug. ERNIC_LOG says the same.
    #[arg(long, env = "ERNIC_LOG", default_value = "info", global = true)]
    pub log_level: String,
    /// Append the log to this file instead of stderr.
    #[arg(long, value_name = "PATH", global = true)]
    pub log_file: Option<PathBuf>,
    /// text (one line per event) or json (one object per line).
    #[arg(long, value_enum, default_value = "text", global = true)]
    pub log_format: LogFormat,
}

impl Default for LogArgs {
    fn default() -> LogArgs {
        LogArgs {
            log_level: std::env::var("ERNIC_LOG").unwrap_or_else(|_| "info".to_string()),
            log_file: None,
            log_format: LogFormat::Text,
        }
    }
}

/// Why logging could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// A bare word that is no level (`loud`): an env filter would take it
    /// as a crate name and log everything of it, which nobody means.
    #[error(
        "--log-level {given:?}: {word:?} is not a level (give error, warn, info, debug or trace, or a filter such as info,ernic_mesh=debug)"
    )]
    NotALevel {
        /// What was given.
        given: String,
        /// The word.
        word: String,
    },
    /// The level or filter did not parse.
    #[error(
        "--log-level {given:?}: {source} (give error, warn, info, debug or trace, or a filter such as info,ernic_mesh=debug)"
    )]
    Filter {
        /// What was given.
        given: String,
        /// Why.
        #[source]
        source: tracing_subscriber::filter::ParseError,
    },
    /// The log file could not be opened.
    #[error("--log-file {path}: {source}")]
    File {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl LogArgs {
    /// The filter these flags ask for.
    pub fn filter(&self) -> Result<EnvFilter, LogError> {
        const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
        let bare = self
            .log_level
            .split(',')
            .map(str::trim)
            .filter(|d| !d.is_empty() && !d.contains('=') && !d.contains('['))
            .find(|d| !LEVELS.iter().any(|l| l.eq_ignore_ascii_case(d)));
        if let Some(word) = bare {
            return Err(LogError::NotALevel {
                given: self.log_level.clone(),
                word: word.to_string(),
            });
        }
        EnvFilter::try_new(&self.log_level).map_err(|source| LogError::Filter {
            given: self.log_level.clone(),
            source,
        })
    }

    /// Whether `level` is on for the crate `target` (for callers that
    /// build a costly line only when it will be written).
    pub fn enabled(level: tracing::Level) -> bool {
        tracing::level_enabled!(level)
    }

    /// Sets up the process's logging. A second call (tests) keeps the first.
    pub fn init(&self) -> Result<(), LogError> {
        let filter = self.filter()?;
        let builder = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false);
        let writer = match &self.log_file {
            Some(p) => {
                let f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(p)
                    .map_err(|source| LogError::File {
                        path: p.display().to_string(),
                        source,
                    })?;
                tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::sync::Mutex::new(f))
            }
            None => tracing_subscriber::fmt::writer::BoxMakeWriter::new(std::io::stderr),
        };
        let builder = builder.with_writer(writer);
        // `try_init` fails only when a subscriber is already set: keep it.
        let _ = match self.log_format {
            LogFormat::Text => builder.try_init(),
            LogFormat::Json => builder.json().try_init(),
        };
        Ok(())
    }
}
