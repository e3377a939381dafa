//! The capabilities a client and the server exchange in
//! `VFIO_USER_VERSION` (a JSON object), with the spec's defaults.

use super::ProtoError;

/// Capabilities exchanged in `VFIO_USER_VERSION`, with the spec's defaults
/// for those a peer leaves out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// File descriptors the sender can receive in one message.
    pub max_msg_fds: u32,
    /// Largest `count` of one read or write message.
    pub max_data_xfer_size: u32,
    /// DMA windows the sender can hold at once.
    pub max_dma_maps: u32,
    /// Page sizes of DMA maps, or'ed.
    pub pgsizes: u64,
    /// Whether `VFIO_USER_REGION_WRITE_MULTI` is understood.
    pub write_multiple: bool,
}

impl Default for Capabilities {
    fn default() -> Capabilities {
        Capabilities {
            max_msg_fds: 1,
            max_data_xfer_size: 1 << 20,
            max_dma_maps: 65_535,
            pgsizes: 4096,
            write_multiple: false,
        }
    }
}

impl Capabilities {
    /// Reads the optional JSON version data (`{"capabilities": {...}}`,
    /// NUL-terminated or not); absent fields keep their defaults, unknown
    /// ones are ignored, wrong types are refused.
    pub fn parse(data: &[u8]) -> Result<Capabilities, ProtoError> {
        let mut c = Capabilities::default();
        let text = data.strip_suffix(&[0]).unwrap_or(data);
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(c);
        }
        let bad = |why: String| ProtoError::Invalid {
            what: "VFIO_USER_VERSION data",
            why,
        };
        let v: serde_json::Value =
            serde_json::from_slice(text).map_err(|e| bad(format!("not JSON: {e}")))?;
        let Some(caps) = v.get("capabilities") else {
            return Ok(c);
        };
        let caps = caps
            .as_object()
            .ok_or_else(|| bad("capabilities is not an object".into()))?;
        let num = |k: &str, max: u64| -> Result<Option<u64>, ProtoError> {
            match caps.get(k) {
                None => Ok(None),
                Some(x) => match x.as_u64() {
                    Some(n) if n <= max => Ok(Some(n)),
                    _ => Err(bad(format!("{k} must be a number up to {max}"))),
                },
            }
        };
        if let Some(n) = num("max_msg_fds", u32::MAX.into())? {
            c.max_msg_fds = n as u32;
        }
        if let Some(n) = num("max_data_xfer_size", u32::MAX.into())? {
            c.max_data_xfer_size = n as u32;
        }
        if let Some(n) = num("max_dma_maps", u32::MAX.into())? {
            c.max_dma_maps = n as u32;
        }
        if let Some(n) = num("pgsizes", u64::MAX)? {
            c.pgsizes = n;
        }
        if let Some(w) = caps.get("write_multiple") {
            c.write_multiple = w
                .as_bool()
                .ok_or_else(|| bad("write_multiple must be true or false".into()))?;
        }
        Ok(c)
    }

    /// The JSON version data that states these capabilities (NUL-ended).
    pub fn to_json(&self) -> Vec<u8> {
        let mut v = serde_json::json!({
            "capabilities": {
                "max_msg_fds": self.max_msg_fds,
                "max_data_xfer_size": self.max_data_xfer_size,
                "max_dma_maps": self.max_dma_maps,
                "pgsizes": self.pgsizes,
            }
        })
        .to_string()
        .into_bytes();
        v.push(0);
        v
    }
}
