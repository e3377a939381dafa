//! Signing, the client's half of SigV4 (ernic's own `ernic s3` client and
//! the tests): the `Authorization` header of a request, built from the
//! same canonical pieces [`super::verify`] checks, so the two cannot
//! drift apart.

use super::canonical::{
    ALGORITHM, canonical_headers, canonical_query, canonical_request, canonical_uri, hex, hmac,
    parse_query, signing_key, string_to_sign,
};
use super::{MAX_QUERY_PARAMS, SigV4Error};

/// A credential and the scope it signs in.
#[derive(Clone)]
pub struct Signer {
    /// The access key id.
    pub access_key: String,
    /// The secret.
    pub secret: String,
    /// The region of the scope.
    pub region: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret is a credential: never printed.
        f.debug_struct("Signer")
            .field("access_key", &self.access_key)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// The `Authorization` value for a request. `headers` must hold every
    /// header to sign, `host`, `x-amz-date` (of `amz_date`) and
    /// `x-amz-content-sha256` among them; every one given is signed.
    pub fn authorization(
        &self,
        method: &str,
        raw_path: &str,
        raw_query: &str,
        headers: &[(&str, &str)],
        amz_date: &str,
    ) -> Result<String, SigV4Error> {
        let mut names: Vec<String> = headers
            .iter()
            .map(|(n, _)| n.to_ascii_lowercase())
            .collect();
        names.sort();
        names.dedup();
        let signed: Vec<&str> = names.iter().map(String::as_str).collect();
        let payload = headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("x-amz-content-sha256"))
            .map(|(_, v)| *v)
            .ok_or(SigV4Error::MissingHeader {
                name: "x-amz-content-sha256",
            })?;
        let date = amz_date.get(..8).ok_or_else(|| SigV4Error::InvalidDate {
            value: amz_date.to_string(),
        })?;
        let scope = format!("{date}/{}/s3/aws4_request", self.region);
        let params = parse_query(raw_query, MAX_QUERY_PARAMS)?;
        let creq = canonical_request(
            method,
            &canonical_uri(raw_path)?,
            &canonical_query(&params, None),
            &canonical_headers(&signed, headers)?,
            &signed.join(";"),
            payload,
        );
        let sts = string_to_sign(amz_date, &scope, &creq);
        let key = signing_key(&self.secret, date, &self.region);
        Ok(format!(
            "{ALGORITHM} Credential={}/{scope}, SignedHeaders={}, Signature={}",
            self.access_key,
            signed.join(";"),
            hex(&hmac(&key, sts.as_bytes()))
        ))
    }
}
