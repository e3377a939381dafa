//! What the S3 tests share: a store served on a real socket, and a client.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ernic_s3::client::{Client, Outgoing, Reply};
use ernic_s3::http::{Limits, Server, ServerHandle};
use ernic_s3::service::{Config, DataPlane, S3Service};
use ernic_s3::sigv4::sign::Signer;
use ernic_s3::store::Store;
use ernic_s3::store::memory::MemoryStore;

/// The credential the signed stores accept.
pub const AK: &str = "AKIDERNICTEST";
/// Its secret.
pub const SK: &str = "ernic/secret/key";

/// A store on 127.0.0.1, stopped when dropped.
pub struct Running {
    pub server: Option<ServerHandle>,
    pub addr: String,
    pub store: Arc<dyn Store>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            s.shutdown();
        }
    }
}

/// Limits short enough for tests.
pub fn limits() -> Limits {
    Limits {
        idle_timeout: Duration::from_secs(5),
        ..Limits::default()
    }
}

/// A memory store behind the service: signed (with [`AK`]/[`SK`]) or anonymous.
pub fn start(signed: bool, data_plane: Option<Arc<dyn DataPlane>>) -> Running {
    start_with(signed, false, data_plane, 256 << 20)
}

/// The same with every knob.
pub fn start_with(
    signed: bool,
    anonymous_too: bool,
    data_plane: Option<Arc<dyn DataPlane>>,
    capacity: u64,
) -> Running {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new(capacity));
    let mut config = Config::default();
    if signed {
        config.credentials = BTreeMap::from([(AK.to_string(), SK.to_string())]);
        config.anonymous = anonymous_too;
    }
    let service = S3Service::new(store.clone(), config, data_plane).expect("a service");
    let server = Server::bind("127.0.0.1:0", Arc::new(service), limits(), 64).expect("bind");
    let addr = server.local_addr().to_string();
    Running {
        server: Some(server.spawn().expect("the accept thread")),
        addr,
        store,
    }
}

/// A client of `r` signing with [`AK`]/[`SK`] (or unsigned).
pub fn client(r: &Running, signed: bool) -> Client {
    let signer = signed.then(|| Signer {
        access_key: AK.into(),
        secret: SK.into(),
        region: "us-east-1".into(),
    });
    let mut c = Client::new(&r.addr, signer);
    c.set_timeout(Duration::from_secs(10));
    c
}

/// A request's status, headers and body.
pub struct Answer {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Answer {
    pub fn header(&self, n: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == n)
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    /// The S3 error code in the body.
    pub fn code(&self) -> Option<String> {
        let t = self.text();
        t.split_once("<Code>")
            .and_then(|(_, r)| r.split_once("</Code>"))
            .map(|(c, _)| c.to_string())
    }
}

/// Sends one request and reads the whole answer.
pub fn req(
    c: &mut Client,
    method: &str,
    path: &str,
    query: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Answer {
    let out = if body.is_empty() {
        Outgoing::Empty
    } else {
        Outgoing::Bytes(body)
    };
    let mut r: Reply = c
        .send(method, path, query, headers, out)
        .expect("a response");
    let body = c.body_bytes(&mut r, 256 << 20).expect("a body");
    Answer {
        status: r.status,
        headers: r.headers.clone(),
        body,
    }
}

/// Bytes that differ everywhere.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
