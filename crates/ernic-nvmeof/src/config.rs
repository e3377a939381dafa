//! The target's configuration, parsed from the option string of
//! `--backend nvmeof:OPTS` and `ernic nvme serve`:
//! `nqn=…,ns=64M,ns=file:PATH,bs=512|4096,queues=N,depth=D,serial=…,model=…`.
//!
//! Each `ns=` adds the next namespace (nsid 1, 2, … in order): a RAM
//! namespace of the given size (a byte count with an optional `K`, `M`, `G`
//! or `T` suffix, powers of 1024) or `file:PATH`, an existing file whose
//! length is the namespace's size. Without any `ns=` the target serves one
//! RAM namespace of [`DEFAULT_RAM_BYTES`]. Every limit is a const here, and
//! every error names the key and the value that broke it.

use std::path::PathBuf;

use crate::namespace::{BlockSize, MAX_NAMESPACE_BYTES};

/// The NVM subsystem NQN when `nqn=` is not given: the NVMe NQN format
/// `nqn.yyyy-mm.reverse-domain:name` under the `io.ernic` name, dated when
/// the project chose it.
pub const DEFAULT_NQN: &str = "nqn.2024-01.io.ernic:nvme";
/// The well-known NQN of the discovery subsystem (`NVME_DISC_SUBSYS_NAME`).
pub const DISCOVERY_NQN: &str = "nqn.2014-08.org.nvmexpress.discovery";
/// The longest NQN (`NVMF_NQN_SIZE`, 223 bytes).
pub const MAX_NQN_LEN: usize = 223;
/// The most namespaces one subsystem serves.
pub const MAX_NAMESPACES: usize = 32;
/// I/O queues granted when `queues=` is not given.
pub const DEFAULT_QUEUES: u16 = 4;
/// The most I/O queues a controller may have.
pub const MAX_QUEUES: u16 = 64;
/// Queue entries (CAP.MQES + 1) when `depth=` is not given.
pub const DEFAULT_DEPTH: u16 = 128;
/// The fewest queue entries (nvmet's `NVMET_MIN_QUEUE_SIZE`).
pub const MIN_DEPTH: u16 = 16;
/// The most queue entries (nvmet's `NVMET_MAX_QUEUE_SIZE`).
pub const MAX_DEPTH: u16 = 1024;
/// The size of the RAM namespace served when no `ns=` is given (64 MiB).
pub const DEFAULT_RAM_BYTES: u64 = 64 << 20;
/// Identify Controller's `sn` length.
pub const SERIAL_LEN: usize = 20;
/// Identify Controller's `mn` length.
pub const MODEL_LEN: usize = 40;
/// The model number when `model=` is not given.
pub const DEFAULT_MODEL: &str = "ernic NVMe-oF target";

/// Where one namespace's blocks live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NamespaceSpec {
    /// RAM, this many bytes.
    Ram {
        /// The size in bytes.
        bytes: u64,
    },
    /// An existing file.
    File {
        /// Its path.
        path: PathBuf,
    },
}

/// A parsed, checked target configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// The NVM subsystem's NQN.
    pub nqn: String,
    /// The namespaces, nsid 1 first.
    pub namespaces: Vec<NamespaceSpec>,
    /// The block size of every namespace.
    pub block_size: BlockSize,
    /// I/O queues a controller may be granted (1..=[`MAX_QUEUES`]).
    pub queues: u16,
    /// Queue entries ([`MIN_DEPTH`]..=[`MAX_DEPTH`]): CAP.MQES + 1.
    pub depth: u16,
    /// Identify Controller's serial number (printable ASCII, at most 20).
    pub serial: String,
    /// Identify Controller's model number (printable ASCII, at most 40).
    pub model: String,
}

/// Why an option string (or a namespace it names) was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// An option that is not one of the keys above.
    #[error("unknown option {key:?}")]
    UnknownKey {
        /// The key.
        key: String,
    },
    /// `key` without `=value`.
    #[error("option {key:?} needs a value")]
    MissingValue {
        /// The key.
        key: String,
    },
    /// A value that does not parse or is out of range.
    #[error("bad value {value:?} for {key}: {why}")]
    BadValue {
        /// The key.
        key: &'static str,
        /// The value.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A key that may appear once appeared again.
    #[error("option {key} given twice")]
    Duplicate {
        /// The key.
        key: &'static str,
    },
    /// More `ns=` than [`MAX_NAMESPACES`].
    #[error("more than {max} namespaces")]
    TooManyNamespaces {
        /// The limit.
        max: usize,
    },
    /// A namespace could not be set up.
    #[error("namespace {nsid}")]
    Namespace {
        /// Its nsid.
        nsid: u32,
        /// Why.
        #[source]
        source: crate::namespace::NamespaceError,
    },
}

impl Default for Config {
    fn default() -> Config {
        Config {
            nqn: DEFAULT_NQN.to_string(),
            namespaces: vec![NamespaceSpec::Ram {
                bytes: DEFAULT_RAM_BYTES,
            }],
            block_size: BlockSize::B512,
            queues: DEFAULT_QUEUES,
            depth: DEFAULT_DEPTH,
            serial: default_serial(DEFAULT_NQN),
            model: DEFAULT_MODEL.to_string(),
        }
    }
}

impl std::str::FromStr for Config {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Config, ConfigError> {
        Config::parse(s)
    }
}

impl Config {
    /// Parses an option string; the empty string gives the defaults.
    pub fn parse(opts: &str) -> Result<Config, ConfigError> {
        let mut nqn = None;
        let mut namespaces = Vec::new();
        let mut block_size = None;
        let mut queues = None;
        let mut depth = None;
        let mut serial = None;
        let mut model = None;
        for item in opts.split(',').filter(|s| !s.is_empty()) {
            let Some((key, value)) = item.split_once('=') else {
                return Err(ConfigError::MissingValue {
                    key: item.to_string(),
                });
            };
            match key {
                "nqn" => once(&mut nqn, "nqn", parse_nqn(value)?)?,
                "ns" => {
                    if namespaces.len() == MAX_NAMESPACES {
                        return Err(ConfigError::TooManyNamespaces {
                            max: MAX_NAMESPACES,
                        });
                    }
                    namespaces.push(parse_ns(value)?);
                }
                "bs" => {
                    let bs = match value {
                        "512" => BlockSize::B512,
                        "4096" => BlockSize::B4096,
                        _ => return Err(bad("bs", value, "the block size is 512 or 4096")),
                    };
                    once(&mut block_size, "bs", bs)?;
                }
                "queues" => {
                    let n = parse_bounded("queues", value, 1, MAX_QUEUES)?;
                    once(&mut queues, "queues", n)?;
                }
                "depth" => {
                    let n = parse_bounded("depth", value, MIN_DEPTH, MAX_DEPTH)?;
                    once(&mut depth, "depth", n)?;
                }
                "serial" => once(
                    &mut serial,
                    "serial",
                    parse_ascii("serial", value, SERIAL_LEN)?,
                )?,
                "model" => once(&mut model, "model", parse_ascii("model", value, MODEL_LEN)?)?,
                _ => {
                    return Err(ConfigError::UnknownKey {
                        key: key.to_string(),
                    });
                }
            }
        }
        let block_size = block_size.unwrap_or(BlockSize::B512);
        for ns in &namespaces {
            if let NamespaceSpec::Ram { bytes } = ns
                && bytes % u64::from(block_size.bytes()) != 0
            {
                return Err(bad(
                    "ns",
                    &bytes.to_string(),
                    "the size is not a multiple of the block size",
                ));
            }
        }
        if namespaces.is_empty() {
            namespaces.push(NamespaceSpec::Ram {
                bytes: DEFAULT_RAM_BYTES,
            });
        }
        let nqn = nqn.unwrap_or_else(|| DEFAULT_NQN.to_string());
        Ok(Config {
            serial: serial.unwrap_or_else(|| default_serial(&nqn)),
            nqn,
            namespaces,
            block_size,
            queues: queues.unwrap_or(DEFAULT_QUEUES),
            depth: depth.unwrap_or(DEFAULT_DEPTH),
            model: model.unwrap_or_else(|| DEFAULT_MODEL.to_string()),
        })
    }
}

fn bad(key: &'static str, value: &str, why: &'static str) -> ConfigError {
    ConfigError::BadValue {
        key,
        value: value.to_string(),
        why,
    }
}

fn once<T>(slot: &mut Option<T>, key: &'static str, v: T) -> Result<(), ConfigError> {
    if slot.is_some() {
        return Err(ConfigError::Duplicate { key });
    }
    *slot = Some(v);
    Ok(())
}

fn parse_nqn(value: &str) -> Result<String, ConfigError> {
    if !value.starts_with("nqn.") {
        return Err(bad("nqn", value, "an NQN starts with \"nqn.\""));
    }
    if value.len() > MAX_NQN_LEN {
        return Err(bad("nqn", value, "an NQN is at most 223 bytes"));
    }
    if !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(bad("nqn", value, "the NQN must be printable ASCII"));
    }
    if value == DISCOVERY_NQN {
        return Err(bad("nqn", value, "that is the discovery subsystem's NQN"));
    }
    Ok(value.to_string())
}

fn parse_ns(value: &str) -> Result<NamespaceSpec, ConfigError> {
    if let Some(path) = value.strip_prefix("file:") {
        if path.is_empty() {
            return Err(bad("ns", value, "file: needs a path"));
        }
        return Ok(NamespaceSpec::File {
            path: PathBuf::from(path),
        });
    }
    Ok(NamespaceSpec::Ram {
        bytes: parse_size(value)?,
    })
}

/// A namespace's byte count (`64M`, `1G`: [`ernic_core::types::parse_size`]).
fn parse_size(value: &str) -> Result<u64, ConfigError> {
    let bytes = ernic_core::types::parse_size(value).map_err(|_| {
        bad(
            "ns",
            value,
            "a size is a number with an optional K, M, G or T",
        )
    })?;
    if bytes > MAX_NAMESPACE_BYTES {
        return Err(bad("ns", value, "a namespace is at most 16T"));
    }
    if bytes == 0 {
        return Err(bad("ns", value, "a namespace cannot be empty"));
    }
    Ok(bytes)
}

fn parse_bounded(key: &'static str, value: &str, min: u16, max: u16) -> Result<u16, ConfigError> {
    match value.parse::<u16>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(bad(
            key,
            value,
            match key {
                "queues" => "queues is 1 to 64",
                _ => "depth is 16 to 1024",
            },
        )),
    }
}

fn parse_ascii(key: &'static str, value: &str, max: usize) -> Result<String, ConfigError> {
    if value.is_empty() || value.len() > max || !value.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(bad(
            key,
            value,
            match key {
                "serial" => "the serial is 1 to 20 printable ASCII characters",
                _ => "the model is 1 to 40 printable ASCII characters",
            },
        ));
    }
    Ok(value.to_string())
}

/// A serial number derived from the NQN, so a restarted target keeps it:
/// 16 hex digits of an FNV-1a hash.
fn default_serial(nqn: &str) -> String {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in nqn.as_bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_gives_defaults() {
        let c = Config::parse("").unwrap();
        assert_eq!(c, Config::default());
        assert_eq!(c.nqn, "nqn.2024-01.io.ernic:nvme");
        assert_eq!(c.namespaces, vec![NamespaceSpec::Ram { bytes: 64 << 20 }]);
        assert_eq!((c.queues, c.depth), (4, 128));
        assert_eq!(c.block_size, BlockSize::B512);
        assert_eq!(c.serial.len(), 16);
        assert!(c.serial.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn full_string() {
        let c: Config = "nqn=nqn.2024-01.io.ernic:a,ns=64M,ns=file:/tmp/x.img,ns=2G,bs=4096,queues=8,depth=256,serial=SN1,model=M 1"
            .parse()
            .unwrap();
        assert_eq!(c.nqn, "nqn.2024-01.io.ernic:a");
        assert_eq!(
            c.namespaces,
            vec![
                NamespaceSpec::Ram { bytes: 64 << 20 },
                NamespaceSpec::File {
                    path: "/tmp/x.img".into()
                },
                NamespaceSpec::Ram { bytes: 2 << 30 },
            ]
        );
        assert_eq!(c.block_size, BlockSize::B4096);
        assert_eq!((c.queues, c.depth), (8, 256));
        assert_eq!((c.serial.as_str(), c.model.as_str()), ("SN1", "M 1"));
    }

    #[test]
    fn sizes_with_suffixes() {
        for (s, want) in [
            ("4096", 4096u64),
            ("512K", 512 << 10),
            ("3m", 3 << 20),
            ("1G", 1 << 30),
            ("1T", 1 << 40),
            ("16T", 16 << 40),
        ] {
            assert_eq!(parse_size(s).unwrap(), want, "{s}");
        }
    }

    fn err(s: &str) -> ConfigError {
        Config::parse(s).unwrap_err()
    }

    #[test]
    fn errors_name_key_and_value() {
        assert!(matches!(err("colour=red"), ConfigError::UnknownKey { key } if key == "colour"));
        assert!(matches!(err("ns"), ConfigError::MissingValue { key } if key == "ns"));
        for (s, key, value) in [
            ("bs=1024", "bs", "1024"),
            ("queues=0", "queues", "0"),
            ("queues=65", "queues", "65"),
            ("depth=15", "depth", "15"),
            ("depth=1025", "depth", "1025"),
            ("depth=-1", "depth", "-1"),
            ("ns=12Q", "ns", "12Q"),
            ("ns=0", "ns", "0"),
            ("ns=17T", "ns", "17T"),
            ("ns=99999999999999999999G", "ns", "99999999999999999999G"),
            ("ns=file:", "ns", "file:"),
            ("ns=1000", "ns", "1000"),
            ("nqn=iqn.x", "nqn", "iqn.x"),
            (
                "nqn=nqn.2014-08.org.nvmexpress.discovery",
                "nqn",
                "nqn.2014-08.org.nvmexpress.discovery",
            ),
            (
                "serial=123456789012345678901",
                "serial",
                "123456789012345678901",
            ),
            ("model=", "model", ""),
        ] {
            match err(s) {
                ConfigError::BadValue {
                    key: k, value: v, ..
                } => {
                    assert_eq!((k, v.as_str()), (key, value), "{s}");
                }
                other => panic!("{s}: {other:?}"),
            }
        }
        let long = format!("nqn=nqn.{}", "a".repeat(220));
        assert!(matches!(
            err(&long),
            ConfigError::BadValue { key: "nqn", .. }
        ));
        assert!(matches!(
            err("bs=512,bs=512"),
            ConfigError::Duplicate { key: "bs" }
        ));
        let many = vec!["ns=1M"; MAX_NAMESPACES + 1].join(",");
        assert!(matches!(
            err(&many),
            ConfigError::TooManyNamespaces {
                max: MAX_NAMESPACES
            }
        ));
        // A RAM size that is a multiple of 512 but not of 4096.
        assert!(matches!(
            err("ns=1536,bs=4096"),
            ConfigError::BadValue { key: "ns", .. }
        ));
    }

    #[test]
    fn messages_read_well() {
        assert_eq!(
            err("queues=99").to_string(),
            "bad value \"99\" for queues: queues is 1 to 64"
        );
    }
}
