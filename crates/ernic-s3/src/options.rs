//! The store's option string, one syntax for `ernic s3 serve` and
//! `ernic-server --backend s3:OPTS`: `key=value` items separated by commas.
//!
//! | key | meaning | default |
//! | --- | --- | --- |
//! | `dir=PATH` | keep objects in this directory (created if missing) | in memory |
//! | `size=SIZE` | the store's capacity (`1G`, `512M`) | 1G |
//! | `access-key=ID`, `secret-key=S` | one credential; SigV4 is then checked | none |
//! | `credentials=FILE` | more credentials, a line `ID SECRET` each (`#` comments) | none |
//! | `anonymous` | admit unsigned requests (without credentials, it must be said) | off |
//! | `region=R` | the region reported | us-east-1 |
//! | `domain=D` | `bucket.D` Hosts are virtual-hosted-style (repeatable) | localhost |
//! | `addr=IPV4` | the store's address: its IP on a guest's segment, its GID on the fabric | 192.0.2.20 |
//! | `mac=MAC` | its MAC on a guest's segment | 02:00:c0:00:02:14 |
//! | `port=N` | its HTTP port on a guest's segment | 80 |
//! | `lanes=N` | RDMA transfers in flight at once (1-64), 64 MiB of staging each | 2 |

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::Arc;

use crate::service::Config;
use crate::store::dir::DirStore;
use crate::store::memory::MemoryStore;
use crate::store::{Store, StoreError};

/// The store's address when the options name none (in the documentation
/// prefix the VM lanes use; the NVMe-oF target is .10).
pub const DEFAULT_ADDR: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 20);
/// The default capacity.
pub const DEFAULT_SIZE: u64 = 1 << 30;
/// The most credentials a file may hold.
pub const MAX_CREDENTIALS: usize = 1024;

/// A bad option.
#[derive(Debug, thiserror::Error)]
#[error("s3 option {key}: {why}")]
pub struct OptionsError {
    /// The key (or the item).
    pub key: String,
    /// What is wrong, for a person.
    pub why: String,
}

fn bad(key: &str, why: impl Into<String>) -> OptionsError {
    OptionsError {
        key: key.to_string(),
        why: why.into(),
    }
}

/// What the option string says.
#[derive(Debug, Clone)]
pub struct S3Options {
    /// Where objects are kept (None: memory).
    pub dir: Option<PathBuf>,
    /// Capacity in bytes.
    pub size: u64,
    /// The service's configuration (credentials, anonymous, region, domains).
    pub config: Config,
    /// The store's IPv4 address.
    pub addr: Ipv4Addr,
    /// Its MAC on a guest's segment.
    pub mac: [u8; 6],
    /// Its HTTP port on a guest's segment.
    pub port: u16,
    /// RDMA lanes.
    pub lanes: usize,
}

impl Default for S3Options {
    fn default() -> Self {
        let config = Config {
            anonymous: false,
            ..Config::default()
        };
        S3Options {
            dir: None,
            size: DEFAULT_SIZE,
            config,
            addr: DEFAULT_ADDR,
            mac: [0x02, 0x00, 0xc0, 0x00, 0x02, 0x14],
            port: 80,
            lanes: 2,
        }
    }
}

impl S3Options {
    /// Reads an option string (see the module's table).
    pub fn parse(opts: &str) -> Result<S3Options, OptionsError> {
        let mut o = S3Options::default();
        let mut anonymous = false;
        let mut domains = Vec::new();
        let (mut access, mut secret) = (None, None);
        for item in opts.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = item.split_once('=').unwrap_or((item, ""));
            let need = |v: &str| {
                if v.is_empty() {
                    Err(bad(k, "needs a value (key=value)"))
                } else {
                    Ok(())
                }
            };
            match k {
                "dir" => {
                    need(v)?;
                    o.dir = Some(PathBuf::from(v));
                }
                "size" => {
                    o.size = ernic_core::types::parse_size(v).map_err(|e| bad(k, e))?;
                    if o.size == 0 {
                        return Err(bad(k, "the capacity cannot be 0"));
                    }
                }
                "access-key" => {
                    need(v)?;
                    access = Some(v.to_string());
                }
                "secret-key" => {
                    need(v)?;
                    secret = Some(v.to_string());
                }
                "credentials" => {
                    need(v)?;
                    let text =
                        std::fs::read_to_string(v).map_err(|e| bad(k, format!("{v}: {e}")))?;
                    for (id, s) in
                        parse_credentials(&text).map_err(|why| bad(k, format!("{v}: {why}")))?
                    {
                        o.config.credentials.insert(id, s);
                    }
                }
                "anonymous" if v.is_empty() || v == "on" || v == "true" => anonymous = true,
                "region" => {
                    need(v)?;
                    o.config.region = v.to_string();
                }
                "domain" => {
                    need(v)?;
                    domains.push(v.to_ascii_lowercase());
                }
                "addr" => {
                    o.addr = v
                        .parse()
                        .map_err(|_| bad(k, format!("{v:?} is not an IPv4 address")))?
                }
                "mac" => {
                    o.mac = parse_mac(v)
                        .ok_or_else(|| bad(k, format!("{v:?} is not a MAC (02:00:c0:00:02:14)")))?
                }
                "port" => {
                    o.port = v
                        .parse()
                        .ok()
                        .filter(|&p| p > 0)
                        .ok_or_else(|| bad(k, format!("{v:?} is not a port (1-65535)")))?;
                }
                "lanes" => {
                    o.lanes = v
                        .parse()
                        .ok()
                        .filter(|n| (1..=64).contains(n))
                        .ok_or_else(|| bad(k, format!("{v:?} is not 1 to 64")))?;
                }
                _ => {
                    return Err(bad(
                        k,
                        "unknown; the options are dir, size, access-key, secret-key, credentials, anonymous, region, domain, addr, mac, port, lanes",
                    ));
                }
            }
        }
        match (access, secret) {
            (Some(a), Some(s)) => {
                o.config.credentials.insert(a, s);
            }
            (None, None) => {}
            _ => return Err(bad("access-key", "access-key and secret-key go together")),
        }
        if o.config.credentials.is_empty() && !anonymous {
            return Err(bad(
                "credentials",
                "none given: give access-key=ID,secret-key=S (or credentials=FILE), or say anonymous to serve unsigned requests",
            ));
        }
        o.config.anonymous = anonymous;
        if !domains.is_empty() {
            o.config.domains = domains;
        }
        Ok(o)
    }

    /// Opens the store these options describe.
    pub fn open_store(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match &self.dir {
            Some(d) => Arc::new(DirStore::open(d, self.size)?),
            None => Arc::new(MemoryStore::new(self.size)),
        })
    }
}

/// Reads a credentials file: one `ACCESS_KEY_ID SECRET` per line,
/// blank lines and `#` comments skipped, at most [`MAX_CREDENTIALS`].
pub fn parse_credentials(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut it = line.split_whitespace();
        match (it.next(), it.next(), it.next()) {
            (Some(id), Some(secret), None) => {
                if out.len() == MAX_CREDENTIALS {
                    return Err(format!("more than {MAX_CREDENTIALS} credentials"));
                }
                out.insert(id.to_string(), secret.to_string());
            }
            _ => return Err(format!("line {}: expected ACCESS_KEY_ID SECRET", i + 1)),
        }
    }
    Ok(out)
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        let p = parts.next()?;
        if p.len() != 2 {
            return None;
        }
        *b = u8::from_str_radix(p, 16).ok()?;
    }
    parts.next().is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_read_and_refuse_as_documented() {
        let o = S3Options::parse("size=2G,access-key=AK,secret-key=SK,addr=192.0.2.30,port=8080,mac=02:00:00:00:00:01,lanes=8").unwrap();
        assert_eq!(
            (o.size, o.addr, o.port, o.lanes),
            (2 << 30, Ipv4Addr::new(192, 0, 2, 30), 8080, 8)
        );
        assert_eq!(
            o.config.credentials.get("AK").map(String::as_str),
            Some("SK")
        );
        assert!(!o.config.anonymous);
        assert!(S3Options::parse("anonymous").unwrap().config.anonymous);
        assert!(
            S3Options::parse("access-key=AK,secret-key=SK,anonymous")
                .unwrap()
                .config
                .anonymous
        );
        for (bad, says) in [
            ("", "say anonymous"),
            ("size=0,anonymous", "cannot be 0"),
            ("access-key=AK,anonymous", "go together"),
            ("port=0,anonymous", "not a port"),
            ("mac=zz,anonymous", "not a MAC"),
            ("lanes=65,anonymous", "1 to 64"),
            ("colour=blue", "unknown"),
        ] {
            let e = S3Options::parse(bad).unwrap_err().to_string();
            assert!(e.contains(says), "{bad:?}: {e}");
        }
    }

    #[test]
    fn credentials_files_have_a_pair_a_line() {
        let c = parse_credentials("# comment\n\nAK1 SK1\n  AK2   SK2  \n").unwrap();
        assert_eq!(c.len(), 2);
        assert!(parse_credentials("AK1\n").is_err());
        assert!(parse_credentials("AK1 SK1 extra\n").is_err());
    }
}
