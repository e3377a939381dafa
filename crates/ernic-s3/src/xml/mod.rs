//! S3's XML bodies without an XML crate: the responses the server writes
//! ([`write`](mod@write): plain Rust structs in, a `String` out, namespaced
//! `http://s3.amazonaws.com/doc/2006-03-01/` as AWS writes them) and the two
//! request bodies it reads ([`read`]: `CompleteMultipartUpload` and `Delete`).
//!
//! Text and attribute values are escaped here in one place ([`escape_into`]);
//! the readers take untrusted bodies, refuse anything malformed with one
//! [`XmlError`] (S3 code `MalformedXML`, HTTP 400), never panic, and bound the
//! body size, nesting depth, and every count by a const of this module.

pub mod read;
pub mod write;

pub use read::{CompleteMultipartUpload, CompletedPart, Delete, ObjectIdentifier, XmlError};

/// The namespace of every S3 response body.
pub const S3_NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";
/// What every body starts with.
pub const XML_DECL: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

/// Appends `s` to `out` escaped for element text or a quoted attribute value:
/// `& < > " '` as the five predefined entities; tab, LF and CR as character
/// references (so that a parser's line-end normalisation keeps them); other
/// C0 controls, DEL..=U+009F and U+FFFE/U+FFFF as `&#xN;` references. Those
/// last are not characters of XML 1.0, so a strict parser refuses them: a
/// client listing such keys should ask for `encoding-type=url`. NUL is written
/// as `&#x0;` too, never raw.
pub fn escape_into(out: &mut String, s: &str) {
    use std::fmt::Write as _;
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{fffe}' | '\u{ffff}' => {
                // Writing into a String cannot fail.
                let _ = write!(out, "&#x{:X};", u32::from(c));
            }
            c => out.push(c),
        }
    }
}

/// [`escape_into`] into a new `String`.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

#[cfg(test)]
mod tests;
