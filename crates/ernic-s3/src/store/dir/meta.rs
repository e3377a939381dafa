//! The directory store's metadata files, as JSON (`serde_json::Value`,
//! written and read by hand): an object's `<id>.meta`, a part's
//! `part-<N>.meta`, an upload's `upload.meta` and a bucket's `bucket.meta`.
//!
//! Decoding never panics: a file that is not what this module wrote gives
//! None, and the caller skips it.

use serde_json::{Map, Value, json};

use crate::store::{MAX_PART_NUMBER, ObjectAttrs, ObjectMeta, PartInfo, check_key, etag_md5};

/// An object's metadata file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ObjectFile {
    pub(super) key: String,
    pub(super) meta: ObjectMeta,
    /// The data file's name in the same directory.
    pub(super) data: String,
    /// The store-wide write sequence: of two files for one key, the higher
    /// is the newer.
    pub(super) seq: u64,
}

/// A part's metadata file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PartFile {
    pub(super) info: PartInfo,
    pub(super) data: String,
    pub(super) seq: u64,
}

/// An upload's metadata file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct UploadFile {
    pub(super) key: String,
    pub(super) attrs: ObjectAttrs,
    pub(super) initiated_ms: i64,
}

fn pairs(v: &[(String, String)]) -> Value {
    Value::Array(v.iter().map(|(k, v)| json!([k, v])).collect())
}

fn get_pairs(v: Option<&Value>) -> Option<Vec<(String, String)>> {
    v?.as_array()?
        .iter()
        .map(|p| match p.as_array()?.as_slice() {
            [k, v] => Some((k.as_str()?.to_owned(), v.as_str()?.to_owned())),
            _ => None,
        })
        .collect()
}

fn attrs_json(a: &ObjectAttrs, m: &mut Map<String, Value>) {
    m.insert("content_type".into(), json!(a.content_type));
    m.insert("headers".into(), pairs(&a.headers));
    m.insert("user_meta".into(), pairs(&a.user_meta));
}

fn get_attrs(m: &Map<String, Value>) -> Option<ObjectAttrs> {
    let content_type = match m.get("content_type")? {
        Value::Null => None,
        v => Some(v.as_str()?.to_owned()),
    };
    Some(ObjectAttrs {
        content_type,
        headers: get_pairs(m.get("headers"))?,
        user_meta: get_pairs(m.get("user_meta"))?,
    })
}

fn parse(bytes: &[u8]) -> Option<Map<String, Value>> {
    match serde_json::from_slice(bytes).ok()? {
        Value::Object(m) => Some(m),
        _ => None,
    }
}

fn str_field(m: &Map<String, Value>, name: &str) -> Option<String> {
    Some(m.get(name)?.as_str()?.to_owned())
}

/// Whether `name` is a data file name this store makes: 1 to 64 bytes of
/// `[0-9a-zA-Z_.-]`, ending in `.data`, not starting with `.`.
pub(super) fn safe_data_name(name: &str) -> bool {
    name.len() <= 64
        && name.len() > ".data".len()
        && name.ends_with(".data")
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
}

fn etag_ok(etag: &str) -> bool {
    match etag.split_once('-') {
        None => etag_md5(etag).is_some(),
        Some((h, n)) => etag_md5(h).is_some() && n.parse::<u32>().is_ok(),
    }
}

impl ObjectFile {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut m = Map::new();
        m.insert("key".into(), json!(self.key));
        m.insert("size".into(), json!(self.meta.size));
        m.insert("etag".into(), json!(self.meta.etag));
        m.insert("last_modified_ms".into(), json!(self.meta.last_modified_ms));
        m.insert("parts".into(), json!(self.meta.parts));
        attrs_json(&self.meta.attrs, &mut m);
        m.insert("data".into(), json!(self.data));
        m.insert("seq".into(), json!(self.seq));
        Value::Object(m).to_string().into_bytes()
    }

    pub(super) fn decode(bytes: &[u8]) -> Option<ObjectFile> {
        let m = parse(bytes)?;
        let key = str_field(&m, "key")?;
        check_key(&key).ok()?;
        let etag = str_field(&m, "etag")?;
        let data = str_field(&m, "data")?;
        if !etag_ok(&etag) || !safe_data_name(&data) {
            return None;
        }
        let parts = match m.get("parts")? {
            Value::Null => None,
            v => Some(u32::try_from(v.as_u64()?).ok()?),
        };
        Some(ObjectFile {
            key,
            meta: ObjectMeta {
                size: m.get("size")?.as_u64()?,
                etag,
                last_modified_ms: m.get("last_modified_ms")?.as_i64()?,
                parts,
                attrs: get_attrs(&m)?,
            },
            data,
            seq: m.get("seq")?.as_u64()?,
        })
    }
}

impl PartFile {
    pub(super) fn encode(&self) -> Vec<u8> {
        json!({
            "number": self.info.number,
            "size": self.info.size,
            "etag": self.info.etag,
            "last_modified_ms": self.info.last_modified_ms,
            "data": self.data,
            "seq": self.seq,
        })
        .to_string()
        .into_bytes()
    }

    pub(super) fn decode(bytes: &[u8]) -> Option<PartFile> {
        let m = parse(bytes)?;
        let number = u32::try_from(m.get("number")?.as_u64()?).ok()?;
        let etag = str_field(&m, "etag")?;
        let data = str_field(&m, "data")?;
        if !(1..=MAX_PART_NUMBER).contains(&number)
            || etag_md5(&etag).is_none()
            || !safe_data_name(&data)
        {
            return None;
        }
        Some(PartFile {
            info: PartInfo {
                number,
                size: m.get("size")?.as_u64()?,
                etag,
                last_modified_ms: m.get("last_modified_ms")?.as_i64()?,
            },
            data,
            seq: m.get("seq")?.as_u64()?,
        })
    }
}

impl UploadFile {
    pub(super) fn encode(&self) -> Vec<u8> {
        let mut m = Map::new();
        m.insert("key".into(), json!(self.key));
        m.insert("initiated_ms".into(), json!(self.initiated_ms));
        attrs_json(&self.attrs, &mut m);
        Value::Object(m).to_string().into_bytes()
    }

    pub(super) fn decode(bytes: &[u8]) -> Option<UploadFile> {
        let m = parse(bytes)?;
        let key = str_field(&m, "key")?;
        check_key(&key).ok()?;
        Some(UploadFile {
            key,
            attrs: get_attrs(&m)?,
            initiated_ms: m.get("initiated_ms")?.as_i64()?,
        })
    }
}

/// A bucket's metadata file: when it was created.
pub(super) fn encode_bucket(created_ms: i64) -> Vec<u8> {
    json!({ "created_ms": created_ms }).to_string().into_bytes()
}

/// The creation time in a bucket's metadata file.
pub(super) fn decode_bucket(bytes: &[u8]) -> Option<i64> {
    parse(bytes)?.get("created_ms")?.as_i64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_file_round_trips_and_refuses_bad_names() {
        let f = ObjectFile {
            key: "../x/\u{e9}\"".into(),
            meta: ObjectMeta {
                size: 5,
                etag: "5d41402abc4b2a76b9719d911017c592".into(),
                last_modified_ms: 17,
                parts: Some(2),
                attrs: ObjectAttrs {
                    content_type: Some("text/plain".into()),
                    headers: vec![("cache-control".into(), "no".into())],
                    user_meta: vec![("a".into(), "b".into())],
                },
            },
            data: "00000000000000a1.data".into(),
            seq: 161,
        };
        assert_eq!(ObjectFile::decode(&f.encode()), Some(f.clone()));
        let mut bad = f;
        bad.data = "../../etc/passwd.data".into();
        assert_eq!(ObjectFile::decode(&bad.encode()), None);
        assert_eq!(ObjectFile::decode(b"{\"key\":"), None);
        assert_eq!(ObjectFile::decode(b"[]"), None);
    }
}
