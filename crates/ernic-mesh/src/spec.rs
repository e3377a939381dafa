//! Mesh specs as users write them: `tcp:manager:listen:PORT` and
//! `tcp:worker:HOST:PORT` (an IPv6 address in brackets, with an optional
//! zone: `tcp:worker:[fe80::1%eth0]:5000`).

use std::fmt;
use std::str::FromStr;

/// A node's place in the mesh.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Spec {
    /// The manager (node 0), listening on this port.
    Manager {
        /// TCP port.
        port: u16,
    },
    /// A worker registering with the manager at `host:port`.
    Worker {
        /// Host name or address of the manager (no brackets).
        host: String,
        /// The manager's port.
        port: u16,
    },
}

/// A spec that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "mesh spec {text:?}: {why}; write tcp:manager:listen:PORT or tcp:worker:HOST:PORT (IPv6 in brackets)"
)]
pub struct SpecError {
    text: String,
    why: &'static str,
}

fn port(s: &str, text: &str) -> Result<u16, SpecError> {
    match s.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(SpecError {
            text: text.into(),
            why: "the port must be a number from 1 to 65535",
        }),
    }
}

impl FromStr for Spec {
    type Err = SpecError;

    fn from_str(text: &str) -> Result<Spec, SpecError> {
        let err = |why| SpecError {
            text: text.into(),
            why,
        };
        let rest = text
            .strip_prefix("tcp:")
            .ok_or(err("it must start with tcp:"))?;
        if let Some(p) = rest.strip_prefix("manager:listen:") {
            return Ok(Spec::Manager {
                port: port(p, text)?,
            });
        }
        let rest = rest
            .strip_prefix("worker:")
            .ok_or(err("the role must be manager or worker"))?;
        let (host, p) = if let Some(r) = rest.strip_prefix('[') {
            let end = r
                .find(']')
                .ok_or(err("an IPv6 address needs its closing bracket"))?;
            let p = r[end + 1..]
                .strip_prefix(':')
                .ok_or(err("the port is missing"))?;
            (&r[..end], p)
        } else {
            let i = rest.rfind(':').ok_or(err("the port is missing"))?;
            if rest[..i].contains(':') {
                return Err(err("an IPv6 address must be in brackets"));
            }
            (&rest[..i], &rest[i + 1..])
        };
        if host.is_empty() {
            return Err(err("the host is missing"));
        }
        Ok(Spec::Worker {
            host: host.into(),
            port: port(p, text)?,
        })
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Spec::Manager { port } => write!(f, "tcp:manager:listen:{port}"),
            Spec::Worker { host, port } if host.contains(':') => {
                write!(f, "tcp:worker:[{host}]:{port}")
            }
            Spec::Worker { host, port } => write!(f, "tcp:worker:{host}:{port}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_as_the_seed_writes_them() {
        assert_eq!(
            "tcp:manager:listen:5000".parse(),
            Ok(Spec::Manager { port: 5000 })
        );
        assert_eq!(
            "tcp:worker:10.0.0.1:5000".parse(),
            Ok(Spec::Worker {
                host: "10.0.0.1".into(),
                port: 5000
            })
        );
        assert_eq!(
            "tcp:worker:[fe80::1%eth0]:5000".parse(),
            Ok(Spec::Worker {
                host: "fe80::1%eth0".into(),
                port: 5000
            })
        );
        assert_eq!(
            "tcp:worker:manager.example:77"
                .parse::<Spec>()
                .unwrap()
                .to_string(),
            "tcp:worker:manager.example:77"
        );
        assert_eq!(
            "tcp:worker:[::1]:9".parse::<Spec>().unwrap().to_string(),
            "tcp:worker:[::1]:9"
        );
    }

    #[test]
    fn bad_specs_say_what_is_wrong() {
        for (s, why) in [
            ("udp:manager:listen:1", "tcp:"),
            ("tcp:boss:listen:1", "manager or worker"),
            ("tcp:manager:listen:0", "port"),
            ("tcp:manager:listen:x", "port"),
            ("tcp:worker:fe80::1:5000", "brackets"),
            ("tcp:worker:[fe80::1:5000", "closing bracket"),
            ("tcp:worker:host", "port is missing"),
            ("tcp:worker::5000", "host is missing"),
        ] {
            let e = s.parse::<Spec>().unwrap_err().to_string();
            assert!(e.contains(why), "{s}: {e}");
        }
    }
}
