//! Reading bmv2 JSON with the path of every value kept, so that a program the
//! engine cannot run is refused with where in the file the problem is
//! (`pipelines[0].tables[3].key[1].match_type`), not with a bare "bad JSON".
//!
//! Nothing here panics on any input: every accessor returns a [`LoadError`].

use serde_json::Value;

use super::LoadError;

/// A JSON value and the path that led to it.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub(crate) v: &'a Value,
    path: &'a Path<'a>,
}

/// A path through the document, built on the stack as the loader descends.
pub(crate) enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl Path<'_> {
    fn render(&self, out: &mut String) {
        match self {
            Path::Root => {}
            Path::Key(parent, k) => {
                parent.render(out);
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Path::Index(parent, i) => {
                parent.render(out);
                out.push_str(&format!("[{i}]"));
            }
        }
    }
}

impl<'a> At<'a> {
    pub(crate) fn root(v: &'a Value, path: &'a Path<'a>) -> Self {
        At { v, path }
    }

    /// The rendered path, for messages.
    pub(crate) fn path(&self) -> String {
        let mut s = String::new();
        self.path.render(&mut s);
        if s.is_empty() { "(root)".into() } else { s }
    }

    /// An error about this value.
    pub(crate) fn err(&self, what: impl Into<String>) -> LoadError {
        LoadError::Invalid {
            path: self.path(),
            what: what.into(),
        }
    }

    /// An error saying this value asks for something the engine lacks.
    pub(crate) fn unsupported(&self, what: impl Into<String>) -> LoadError {
        LoadError::Unsupported {
            path: self.path(),
            what: what.into(),
        }
    }

    /// Descends into member `k`, calling `f` with it; `Null` if absent.
    pub(crate) fn get<R>(&self, k: &'a str, f: impl FnOnce(At<'_>) -> R) -> R {
        let p = Path::Key(self.path, k);
        let v = self.v.get(k).unwrap_or(&Value::Null);
        f(At { v, path: &p })
    }

    /// Whether member `k` is present and not null.
    pub(crate) fn has(&self, k: &str) -> bool {
        self.v.get(k).is_some_and(|v| !v.is_null())
    }

    /// Calls `f` on each element of the array member `k` (absent or null:
    /// none), collecting the results.
    pub(crate) fn each<R>(
        &self,
        k: &'a str,
        f: impl FnMut(usize, At<'_>) -> Result<R, LoadError>,
    ) -> Result<Vec<R>, LoadError> {
        self.get(k, |a| {
            if a.v.is_null() {
                return Ok(Vec::new());
            }
            a.items(f)
        })
    }

    /// Calls `f` on each element of this array.
    pub(crate) fn items<R>(
        &self,
        mut f: impl FnMut(usize, At<'_>) -> Result<R, LoadError>,
    ) -> Result<Vec<R>, LoadError> {
        let arr = self
            .v
            .as_array()
            .ok_or_else(|| self.err("expected an array"))?;
        let mut out = Vec::with_capacity(arr.len());
        for (i, v) in arr.iter().enumerate() {
            let p = Path::Index(self.path, i);
            out.push(f(i, At { v, path: &p })?);
        }
        Ok(out)
    }

    /// Element `i` of this array.
    pub(crate) fn at<R>(
        &self,
        i: usize,
        f: impl FnOnce(At<'_>) -> Result<R, LoadError>,
    ) -> Result<R, LoadError> {
        let arr = self
            .v
            .as_array()
            .ok_or_else(|| self.err("expected an array"))?;
        let v = arr
            .get(i)
            .ok_or_else(|| self.err(format!("expected at least {} elements", i + 1)))?;
        let p = Path::Index(self.path, i);
        f(At { v, path: &p })
    }

    /// The array's length.
    pub(crate) fn len(&self) -> Result<usize, LoadError> {
        Ok(self
            .v
            .as_array()
            .ok_or_else(|| self.err("expected an array"))?
            .len())
    }

    pub(crate) fn str(&self) -> Result<&'a str, LoadError> {
        self.v.as_str().ok_or_else(|| self.err("expected a string"))
    }

    pub(crate) fn opt_str(&self) -> Result<Option<&'a str>, LoadError> {
        if self.v.is_null() {
            Ok(None)
        } else {
            self.str().map(Some)
        }
    }

    pub(crate) fn bool(&self) -> Result<bool, LoadError> {
        self.v
            .as_bool()
            .ok_or_else(|| self.err("expected true or false"))
    }

    pub(crate) fn u64(&self) -> Result<u64, LoadError> {
        self.v
            .as_u64()
            .ok_or_else(|| self.err("expected a non-negative integer"))
    }

    pub(crate) fn i64(&self) -> Result<i64, LoadError> {
        self.v
            .as_i64()
            .ok_or_else(|| self.err("expected an integer"))
    }

    /// A non-negative integer no larger than `max` (the documented limit).
    pub(crate) fn bounded(&self, max: u64, what: &str) -> Result<u64, LoadError> {
        let n = self.u64()?;
        if n > max {
            return Err(self.err(format!("{what} {n} is over the limit of {max}")));
        }
        Ok(n)
    }

    /// A bmv2 hexstring (`0x…`, optionally with a leading `-`) as a signed
    /// value; refused past 128 bits.
    pub(crate) fn hexstr(&self) -> Result<i128, LoadError> {
        parse_hexstr(self.str()?)
            .ok_or_else(|| self.err("expected a hexstring of at most 128 bits"))
    }

    /// A bmv2 hexstring as big-endian bytes, exactly `nbytes` long (shorter
    /// strings are zero-extended on the left, longer ones refused).
    pub(crate) fn hex_bytes(&self, nbytes: usize) -> Result<Vec<u8>, LoadError> {
        let s = self.str()?;
        hex_to_bytes(s, nbytes)
            .ok_or_else(|| self.err(format!("expected a hexstring of at most {nbytes} bytes")))
    }
}

/// Parses a bmv2 hexstring: hex digits, `0x` optional (bmv2's
/// `Data::set(hexstring)` reads `"7"` and `"0x7"` alike), `-` for negative.
pub(crate) fn parse_hexstr(s: &str) -> Option<i128> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let h = body
        .strip_prefix("0x")
        .or_else(|| body.strip_prefix("0X"))
        .unwrap_or(body);
    let h = h.trim_start_matches('0');
    if h.len() > 32 {
        return None;
    }
    let mag = if h.is_empty() {
        0
    } else {
        u128::from_str_radix(h, 16).ok()?
    };
    let v = mag as i128;
    Some(if neg { v.wrapping_neg() } else { v })
}

/// Big-endian bytes of a hexstring, left-padded to `nbytes`.
pub(crate) fn hex_to_bytes(s: &str, nbytes: usize) -> Option<Vec<u8>> {
    let h = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let h = h.trim_start_matches('0');
    if h.len() > nbytes * 2 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut out = vec![0u8; nbytes];
    let digits: Vec<u8> = h
        .bytes()
        .map(|b| (b as char).to_digit(16).unwrap_or(0) as u8)
        .collect();
    for (i, d) in digits.iter().rev().enumerate() {
        let byte = nbytes - 1 - i / 2;
        out[byte] |= if i % 2 == 0 { *d } else { *d << 4 };
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hexstrings_as_bmv2_writes_them() {
        assert_eq!(parse_hexstr("0x0800"), Some(0x800));
        assert_eq!(parse_hexstr("-0x1"), Some(-1));
        assert_eq!(parse_hexstr("0x"), Some(0));
        assert_eq!(parse_hexstr(&format!("0x{}", "f".repeat(33))), None);
        assert_eq!(hex_to_bytes("0x0aba03", 3), Some(vec![0x0a, 0xba, 0x03]));
        assert_eq!(hex_to_bytes("0x1", 2), Some(vec![0, 1]));
        assert_eq!(hex_to_bytes("0x10000", 2), None);
    }

    #[test]
    fn paths_name_the_value() {
        let v: Value = serde_json::from_str(r#"{"a":[{"b":1},{"b":"x"}]}"#).unwrap();
        let root = Path::Root;
        let at = At::root(&v, &root);
        let e = at.each("a", |_, x| x.get("b", |b| b.u64())).unwrap_err();
        assert_eq!(e.to_string(), "a[1].b: expected a non-negative integer");
    }
}
