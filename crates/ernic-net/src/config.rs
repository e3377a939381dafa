//! The transport's settings, read from aws-ofi-nccl's environment names
//! with upstream's defaults, and ernic's own (`ERNIC_NET_*`) where upstream
//! has none.

use std::fmt;
use std::time::Duration;

/// Which protocol a comm speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Receiver-driven RDMA write with immediate (the default).
    Rdma,
    /// Tagged send/receive: every message is a send into a posted receive.
    SendRecv,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Rdma => "RDMA",
            Protocol::SendRecv => "SENDRECV",
        })
    }
}

/// A setting that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name}={value:?}: {why}")]
pub struct ConfigError {
    /// The variable.
    pub name: &'static str,
    /// What it held.
    pub value: String,
    /// What it should hold.
    pub why: &'static str,
}

/// The settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// `OFI_NCCL_PROTOCOL`: `RDMA` (default) or `SENDRECV`.
    pub protocol: Protocol,
    /// `OFI_NCCL_MIN_STRIPE_SIZE`: the smallest piece a striped message is
    /// cut into (default 128 KiB).
    pub min_stripe_size: usize,
    /// `OFI_NCCL_SCHED_MAX_SMALL_MSG_SIZE`: messages below this go on one
    /// rail, round robin (default 64 KiB).
    pub sched_max_small_msg_size: usize,
    /// `OFI_NCCL_EAGER_MAX_SIZE`: messages up to this many bytes are sent
    /// eagerly, without waiting for the receiver's control message
    /// (default 8 KiB).
    pub eager_max_size: usize,
    /// `OFI_NCCL_FORCE_NUM_RAILS`: use this many data rails (default 0: as
    /// many as the caller asks for).
    pub force_num_rails: usize,
    /// `OFI_NCCL_CQ_READ_COUNT`: completions read per CQ read (default 4).
    pub cq_read_count: usize,
    /// `OFI_NCCL_MR_CACHE_DISABLE`: register every time instead of caching
    /// (default off).
    pub mr_cache_disable: bool,
    /// `ERNIC_NET_CONNECT_TIMEOUT_MS`: how long a `connect` may stay
    /// pending before it fails and its resources are released (default
    /// [`DEFAULT_CONNECT_TIMEOUT`], 1 ms to [`MAX_CONNECT_TIMEOUT`]).
    /// aws-ofi-nccl has no such bound; ernic has one so a handle that names
    /// no listener costs a bounded time and nothing after it.
    pub connect_timeout: Duration,
}

/// The connect timeout when `ERNIC_NET_CONNECT_TIMEOUT_MS` is unset.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest connect timeout the setting accepts (one hour).
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(3600);

impl Default for Config {
    fn default() -> Config {
        Config {
            protocol: Protocol::Rdma,
            min_stripe_size: 128 * 1024,
            sched_max_small_msg_size: 64 * 1024,
            eager_max_size: 8 * 1024,
            force_num_rails: 0,
            cq_read_count: 4,
            mr_cache_disable: false,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
        }
    }
}

/// The most data rails a message can stripe over: the segment count has 4
/// bits in the immediate word.
pub const MAX_RAILS: usize = 15;

impl Config {
    /// The settings from the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_lookup(|name| std::env::var(name).ok())
    }

    /// The settings from `lookup` (the environment, or a test's table).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let mut c = Config::default();
        let size = |name: &'static str, default: usize| -> Result<usize, ConfigError> {
            match lookup(name) {
                None => Ok(default),
                Some(v) => v.trim().parse::<usize>().map_err(|_| ConfigError {
                    name,
                    value: v.clone(),
                    why: "expected a non-negative integer",
                }),
            }
        };
        // A size that must also pass `ok`, else `why`.
        let checked = |name: &'static str,
                       default: usize,
                       ok: fn(usize) -> bool,
                       why: &'static str|
         -> Result<usize, ConfigError> {
            let v = size(name, default)?;
            if ok(v) {
                Ok(v)
            } else {
                Err(ConfigError {
                    name,
                    value: v.to_string(),
                    why,
                })
            }
        };
        if let Some(v) = lookup("OFI_NCCL_PROTOCOL") {
            c.protocol = match v.trim().to_ascii_uppercase().as_str() {
                "RDMA" => Protocol::Rdma,
                "SENDRECV" => Protocol::SendRecv,
                _ => {
                    return Err(ConfigError {
                        name: "OFI_NCCL_PROTOCOL",
                        value: v,
                        why: "expected RDMA or SENDRECV",
                    });
                }
            };
        }
        c.min_stripe_size = checked(
            "OFI_NCCL_MIN_STRIPE_SIZE",
            c.min_stripe_size,
            |v| v > 0,
            "must be at least 1",
        )?;
        c.sched_max_small_msg_size = size(
            "OFI_NCCL_SCHED_MAX_SMALL_MSG_SIZE",
            c.sched_max_small_msg_size,
        )?;
        c.eager_max_size = size("OFI_NCCL_EAGER_MAX_SIZE", c.eager_max_size)?;
        c.force_num_rails = checked(
            "OFI_NCCL_FORCE_NUM_RAILS",
            c.force_num_rails,
            |v| v <= MAX_RAILS,
            "at most 15 rails (the immediate's segment count has 4 bits)",
        )?;
        c.cq_read_count = checked(
            "OFI_NCCL_CQ_READ_COUNT",
            c.cq_read_count,
            |v| v > 0,
            "must be at least 1",
        )?;
        c.mr_cache_disable = size("OFI_NCCL_MR_CACHE_DISABLE", 0)? != 0;
        let ms = checked(
            "ERNIC_NET_CONNECT_TIMEOUT_MS",
            c.connect_timeout.as_millis() as usize,
            |v| (1..=MAX_CONNECT_TIMEOUT.as_millis() as usize).contains(&v),
            "between 1 and 3600000 milliseconds",
        )?;
        c.connect_timeout = Duration::from_millis(ms as u64);
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn upstream_defaults() {
        let c = Config::from_lookup(table(&[])).unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.eager_max_size, 8192);
        assert_eq!(c.min_stripe_size, 131072);
    }

    #[test]
    fn names_are_read() {
        let c = Config::from_lookup(table(&[
            ("OFI_NCCL_PROTOCOL", "sendrecv"),
            ("OFI_NCCL_MIN_STRIPE_SIZE", "4096"),
            ("OFI_NCCL_SCHED_MAX_SMALL_MSG_SIZE", "1000"),
            ("OFI_NCCL_EAGER_MAX_SIZE", "0"),
            ("OFI_NCCL_FORCE_NUM_RAILS", "2"),
            ("OFI_NCCL_CQ_READ_COUNT", "16"),
            ("OFI_NCCL_MR_CACHE_DISABLE", "1"),
            ("ERNIC_NET_CONNECT_TIMEOUT_MS", "250"),
        ]))
        .unwrap();
        assert_eq!(c.protocol, Protocol::SendRecv);
        assert_eq!(
            (
                c.min_stripe_size,
                c.sched_max_small_msg_size,
                c.eager_max_size
            ),
            (4096, 1000, 0)
        );
        assert_eq!(
            (c.force_num_rails, c.cq_read_count, c.mr_cache_disable),
            (2, 16, true)
        );
        assert_eq!(c.connect_timeout, Duration::from_millis(250));
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = Config::from_lookup(table(&[("OFI_NCCL_PROTOCOL", "TCP")])).unwrap_err();
        assert_eq!(e.name, "OFI_NCCL_PROTOCOL");
        let e = Config::from_lookup(table(&[("OFI_NCCL_EAGER_MAX_SIZE", "8k")])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "OFI_NCCL_EAGER_MAX_SIZE=\"8k\": expected a non-negative integer"
        );
        assert!(Config::from_lookup(table(&[("OFI_NCCL_FORCE_NUM_RAILS", "16")])).is_err());
        assert!(Config::from_lookup(table(&[("OFI_NCCL_MIN_STRIPE_SIZE", "0")])).is_err());
        for bad in ["0", "3600001", "soon"] {
            let e =
                Config::from_lookup(table(&[("ERNIC_NET_CONNECT_TIMEOUT_MS", bad)])).unwrap_err();
            assert_eq!(e.name, "ERNIC_NET_CONNECT_TIMEOUT_MS");
        }
    }
}
