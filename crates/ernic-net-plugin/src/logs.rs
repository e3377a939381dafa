//! The plugin's `tracing` events, forwarded to NCCL's logger: a layer set
//! up in `init` (filtered by `ERNIC_LOG`, default `info`) that writes each
//! event the filter passes as one line through the logger NCCL gave, with
//! `error` and `warn` as NCCL_LOG_WARN, `info` as NCCL_LOG_INFO, and
//! `debug` and `trace` as NCCL_LOG_TRACE. A process that set a subscriber
//! of its own keeps it.

use std::fmt::Write;

use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::util::SubscriberInitExt;

use crate::abi::{NCCL_LOG_INFO, NCCL_LOG_TRACE, NCCL_LOG_WARN};

/// The layer: every event it sees goes to [`crate::abi`]'s logger.
struct ToNccl;

/// One event's message and fields, as `message k=v ...`.
#[derive(Default)]
struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.0, "{value:?}");
        } else {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        } else {
            let _ = write!(self.0, " {}={value}", field.name());
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for ToNccl {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        let level = match *event.metadata().level() {
            tracing::Level::ERROR | tracing::Level::WARN => NCCL_LOG_WARN,
            tracing::Level::INFO => NCCL_LOG_INFO,
            _ => NCCL_LOG_TRACE,
        };
        let mut line = Line::default();
        event.record(&mut line);
        crate::abi::log(level, &format!("NET/ernic: {}", line.0));
    }
}

/// Sets up the forwarding, once; a bad `ERNIC_LOG` is said on the logger
/// and the default (`info`) is used.
pub(crate) fn init() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let given = std::env::var("ERNIC_LOG").unwrap_or_else(|_| "info".to_string());
        let filter = tracing_subscriber::EnvFilter::try_new(&given).unwrap_or_else(|e| {
            crate::abi::log(
                NCCL_LOG_WARN,
                &format!("NET/ernic: ERNIC_LOG {given:?}: {e}; logging at info"),
            );
            tracing_subscriber::EnvFilter::new("info")
        });
        let _ = tracing_subscriber::registry()
            .with(filter)
            .with(ToNccl)
            .try_init();
    });
}
