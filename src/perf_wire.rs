//! The wire format of `ernic perf`'s out-of-band channel: one JSON object
//! a line over TCP, at most [`MAX_LINE`] bytes, between a client and a
//! `--server` that may be reached by anything on the network (a port
//! scan, garbage, another tool). Everything here decodes bytes from that
//! socket, so it checks what it reads and never panics; the integers that
//! name RDMA resources are range-checked, not truncated.
//!
//! The conversation: the client's [`Hello`]; the server's [`Endpoint`]
//! (with its mesh port) or an error line ([`HandshakeError::Refused`] on
//! the client); the client's [`Endpoint`]; then `ready`, results and `bye`
//! lines.

use ernic_verbs::{Gid, Qpn, RemoteAddr, Rkey};
use serde_json::{Value, json};

/// The longest line either side reads; a longer one is not a handshake.
pub const MAX_LINE: usize = 64 * 1024;

/// Why a line is not what this side expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// Not one JSON object on one line of text, or no `test` in a hello.
    #[error("sent something that is not an ernic perf handshake")]
    NotHandshake,
    /// The peer answered with an error line.
    #[error("refused: {reason}")]
    Refused {
        /// What the peer said.
        reason: String,
    },
    /// A hello whose `sizes` is not a list of byte counts.
    #[error("the handshake's sizes are not a list of byte counts")]
    Sizes,
    /// A field that is missing or not of its type.
    #[error("the handshake has no {what}")]
    Missing {
        /// The field, as a user reads it.
        what: &'static str,
    },
    /// A field whose number does not fit what it names.
    #[error("the handshake's {what} {value} is out of range")]
    OutOfRange {
        /// The field.
        what: &'static str,
        /// The number sent.
        value: u64,
    },
    /// A GID that does not parse.
    #[error("the handshake's gid {text:?} is not a GID")]
    Gid {
        /// The text sent (at most 64 characters of it).
        text: String,
    },
}

/// Decodes one line: an object, or the peer's refusal.
pub fn decode_line(line: &[u8]) -> Result<Value, HandshakeError> {
    if line.len() > MAX_LINE {
        return Err(HandshakeError::NotHandshake);
    }
    let v: Value = std::str::from_utf8(line)
        .ok()
        .and_then(|l| serde_json::from_str(l).ok())
        .filter(Value::is_object)
        .ok_or(HandshakeError::NotHandshake)?;
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(HandshakeError::Refused {
            reason: e.to_string(),
        });
    }
    Ok(v)
}

/// The line that refuses a peer, with the reason.
pub fn refusal(reason: &str) -> Value {
    json!({ "error": reason })
}

/// What a client asks a server to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// The test's name (`write_bw`, ...).
    pub test: String,
    /// Message sizes, in bytes.
    pub sizes: Vec<u64>,
    /// Iterations a size.
    pub iters: u64,
    /// Work requests in flight.
    pub tx_depth: u32,
    /// Whether a TCP baseline follows each size.
    pub baseline: bool,
    /// Whether both sides send.
    pub bidirectional: bool,
}

impl Hello {
    /// The line.
    pub fn to_json(&self) -> Value {
        json!({
            "test": self.test,
            "sizes": self.sizes,
            "iters": self.iters,
            "tx_depth": self.tx_depth,
            "baseline": self.baseline,
            "bidirectional": self.bidirectional,
        })
    }

    /// Reads a decoded line as a hello. The flags default to false.
    pub fn from_json(v: &Value) -> Result<Hello, HandshakeError> {
        let test = v
            .get("test")
            .ok_or(HandshakeError::NotHandshake)?
            .as_str()
            .unwrap_or("?")
            .to_string();
        let sizes = v
            .get("sizes")
            .and_then(Value::as_array)
            .ok_or(HandshakeError::Sizes)?
            .iter()
            .map(Value::as_u64)
            .collect::<Option<Vec<u64>>>()
            .ok_or(HandshakeError::Sizes)?;
        let iters = v
            .get("iters")
            .and_then(Value::as_u64)
            .ok_or(HandshakeError::Missing {
                what: "iteration count",
            })?;
        let tx_depth = v
            .get("tx_depth")
            .and_then(Value::as_u64)
            .and_then(|d| u32::try_from(d).ok())
            .ok_or(HandshakeError::Missing { what: "tx depth" })?;
        let flag = |k: &str| v.get(k).and_then(Value::as_bool).unwrap_or(false);
        Ok(Hello {
            test,
            sizes,
            iters,
            tx_depth,
            baseline: flag("baseline"),
            bidirectional: flag("bidirectional"),
        })
    }
}

/// Where a side's QP and buffer are: what the other side connects and
/// writes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    /// The side's GID on the mesh.
    pub gid: Gid,
    /// Its RC QP.
    pub qpn: Qpn,
    /// Its buffer, as the peer addresses it.
    pub remote: RemoteAddr,
}

impl Endpoint {
    /// The line (the server adds its `mesh_port`).
    pub fn to_json(&self) -> Value {
        json!({
            "gid": self.gid.to_string(),
            "qpn": self.qpn.0,
            "addr": self.remote.addr,
            "rkey": self.remote.rkey.0,
        })
    }

    /// Reads a decoded line as an endpoint.
    pub fn from_json(v: &Value) -> Result<Endpoint, HandshakeError> {
        let text = v
            .get("gid")
            .and_then(Value::as_str)
            .ok_or(HandshakeError::Missing { what: "gid" })?;
        let gid: Gid = text.parse().map_err(|_| HandshakeError::Gid {
            text: text.chars().take(64).collect(),
        })?;
        let qpn = Qpn(u32_field(v, "qpn")?);
        let addr = v
            .get("addr")
            .and_then(Value::as_u64)
            .ok_or(HandshakeError::Missing { what: "addr" })?;
        let rkey = Rkey(u32_field(v, "rkey")?);
        Ok(Endpoint {
            gid,
            qpn,
            remote: RemoteAddr { addr, rkey },
        })
    }
}

/// The server's mesh port in its endpoint line.
pub fn mesh_port(v: &Value) -> Result<u16, HandshakeError> {
    let n = v
        .get("mesh_port")
        .and_then(Value::as_u64)
        .ok_or(HandshakeError::Missing { what: "mesh port" })?;
    u16::try_from(n).map_err(|_| HandshakeError::OutOfRange {
        what: "mesh port",
        value: n,
    })
}

fn u32_field(v: &Value, what: &'static str) -> Result<u32, HandshakeError> {
    let n = v
        .get(what)
        .and_then(Value::as_u64)
        .ok_or(HandshakeError::Missing { what })?;
    u32::try_from(n).map_err(|_| HandshakeError::OutOfRange { what, value: n })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(s: &str) -> Result<Value, HandshakeError> {
        decode_line(s.as_bytes())
    }

    #[test]
    fn a_hello_reads_back_what_the_client_wrote() {
        let h = Hello {
            test: "write_bw".into(),
            sizes: vec![2, 65536],
            iters: 1000,
            tx_depth: 128,
            baseline: true,
            bidirectional: false,
        };
        let text = h.to_json().to_string();
        assert_eq!(Hello::from_json(&line(&text).unwrap()), Ok(h));
    }

    #[test]
    fn lines_that_are_not_a_handshake_are_named_so() {
        for bad in [
            "",
            "GET / HTTP/1.1",
            "[1,2]",
            "\"x\"",
            "{\"a\":",
            "\u{0}\u{1}",
        ] {
            assert_eq!(line(bad), Err(HandshakeError::NotHandshake), "{bad:?}");
        }
        assert_eq!(
            decode_line(&[0xff, b'{', b'}']),
            Err(HandshakeError::NotHandshake)
        );
        let long = format!("{{\"test\":\"{}\"}}", "x".repeat(MAX_LINE));
        assert_eq!(line(&long), Err(HandshakeError::NotHandshake));
        assert_eq!(
            Hello::from_json(&line("{\"sizes\":[1]}").unwrap()),
            Err(HandshakeError::NotHandshake)
        );
    }

    #[test]
    fn an_error_line_is_a_refusal_with_its_reason() {
        let text = refusal("this server runs read_bw, not write_bw").to_string();
        assert_eq!(
            line(&text),
            Err(HandshakeError::Refused {
                reason: "this server runs read_bw, not write_bw".into()
            })
        );
    }

    #[test]
    fn each_bad_hello_field_has_its_own_error() {
        let read = |s: &str| Hello::from_json(&line(s).unwrap());
        assert_eq!(
            read(r#"{"test":"write_bw","sizes":[1,-2],"iters":1,"tx_depth":1}"#),
            Err(HandshakeError::Sizes)
        );
        assert_eq!(
            read(r#"{"test":"write_bw","sizes":"64","iters":1,"tx_depth":1}"#),
            Err(HandshakeError::Sizes)
        );
        assert_eq!(
            read(r#"{"test":"write_bw","sizes":[1],"tx_depth":1}"#),
            Err(HandshakeError::Missing {
                what: "iteration count"
            })
        );
        assert_eq!(
            read(r#"{"test":"write_bw","sizes":[1],"iters":1,"tx_depth":4294967296}"#),
            Err(HandshakeError::Missing { what: "tx depth" })
        );
    }

    #[test]
    fn an_endpoint_reads_back_and_its_numbers_are_checked_not_cut() {
        let e = Endpoint {
            gid: "fe80::1".parse().unwrap(),
            qpn: Qpn(0x11),
            remote: RemoteAddr {
                addr: 0x7f00_0000_1000,
                rkey: Rkey(0xdead_beef),
            },
        };
        let mut v = e.to_json();
        assert_eq!(Endpoint::from_json(&v), Ok(e));
        v["qpn"] = json!(1u64 << 32 | 5);
        assert_eq!(
            Endpoint::from_json(&v),
            Err(HandshakeError::OutOfRange {
                what: "qpn",
                value: 1 << 32 | 5
            })
        );
        v["qpn"] = json!(5);
        v["gid"] = json!("not a gid");
        assert!(matches!(
            Endpoint::from_json(&v),
            Err(HandshakeError::Gid { .. })
        ));
        assert_eq!(
            mesh_port(&json!({"mesh_port": 70000})),
            Err(HandshakeError::OutOfRange {
                what: "mesh port",
                value: 70000
            })
        );
        assert_eq!(mesh_port(&json!({"mesh_port": 18515})), Ok(18515));
    }
}
