//! The listen handle, the bytes one rank passes another out of band to
//! connect (at most [`HANDLE_LEN`]): a length byte, the listener's
//! control-rail endpoint name, its listen comm id (LE), zeros; and its hex
//! text. A handle from another rank is untrusted: [`decode_handle`] bounds
//! it before anything uses it.

use super::HANDLE_LEN;
use super::control::DecodeError;

/// What a listen handle names: the listener's control-rail endpoint name
/// and its listen comm id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandleRef<'a> {
    /// The provider's name of the listener's first control rail.
    pub name: &'a [u8],
    /// The listen comm on that endpoint.
    pub listen: u32,
}

/// Decodes a listen handle (from another rank: untrusted): a length byte,
/// that many bytes of endpoint name, the listen comm id (LE), zeros.
pub fn decode_handle(h: &[u8]) -> Result<HandleRef<'_>, DecodeError> {
    if h.len() != HANDLE_LEN {
        return Err(DecodeError::HandleLen(h.len()));
    }
    let n = usize::from(h[0]);
    if n == 0 || 1 + n + 4 > HANDLE_LEN {
        return Err(DecodeError::HandleName(n));
    }
    let listen = u32::from_le_bytes(h[1 + n..1 + n + 4].try_into().expect("4 bytes"));
    Ok(HandleRef {
        name: &h[1..1 + n],
        listen,
    })
}

/// A listen handle: what the connecting side needs (at most 128 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle(pub Vec<u8>);

impl Handle {
    /// The handle as lowercase hex, to pass to another process as text.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// A handle from [`to_hex`](Handle::to_hex)'s text; `None` if `s` is
    /// not hex pairs.
    pub fn from_hex(s: &str) -> Option<Handle> {
        // Digits only: `from_str_radix` alone would take "+f" as a pair.
        if s.len() % 2 != 0 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok())
            .collect::<Option<Vec<u8>>>()
            .map(Handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_handle_in_hex_is_hex_digits_and_nothing_else() {
        let h = Handle::from_hex("00Ff7a").expect("hex digits");
        assert_eq!(h.0, [0x00, 0xff, 0x7a]);
        assert_eq!(h.to_hex(), "00ff7a");
        // Found by the net_decode fuzz target: u8::from_str_radix takes a
        // sign, so "+f" was read as 0x0f, a text that is not the handle's.
        for bad in ["+f", "-1", "0x", " 1", "1", "zz", "é0"] {
            assert_eq!(Handle::from_hex(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn handles_decode_and_bad_ones_are_named() {
        let mut h = vec![0u8; HANDLE_LEN];
        h[0] = 3;
        h[1..4].copy_from_slice(b"abc");
        h[4..8].copy_from_slice(&0x0102_0304u32.to_le_bytes());
        assert_eq!(
            decode_handle(&h),
            Ok(HandleRef {
                name: b"abc",
                listen: 0x0102_0304
            })
        );
        assert_eq!(decode_handle(&h[..64]), Err(DecodeError::HandleLen(64)));
        h[0] = 0;
        assert_eq!(decode_handle(&h), Err(DecodeError::HandleName(0)));
        h[0] = 124;
        assert_eq!(decode_handle(&h), Err(DecodeError::HandleName(124)));
        h[0] = 123;
        assert!(decode_handle(&h).is_ok(), "a name that just fits");
    }
}
