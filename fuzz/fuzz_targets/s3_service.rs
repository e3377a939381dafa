//! The whole S3 API (`ernic_s3::service::S3Service`) behind the HTTP
//! server, on one connection whose bytes are the fuzz input, over a small
//! memory store that already holds a bucket, two objects and a multipart
//! upload in progress: routing, query and header parsing, ranges,
//! conditionals, copies, listings, multi-delete and multipart XML bodies,
//! aws-chunked and checksum handling, tokens (with no data plane: declined).
//! Invariants: nothing panics or hangs; every answer is an HTTP/1.1
//! response; the store never holds more than its capacity.
#![no_main]

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Duration;

use ernic_s3::http::{Limits, serve_connection};
use ernic_s3::service::{Config, S3Service};
use ernic_s3::store::Store;
use ernic_s3::store::memory::MemoryStore;
use libfuzzer_sys::fuzz_target;

const CAPACITY: u64 = 256 * 1024;

const LIMITS: Limits = Limits {
    max_head_bytes: 4096,
    max_headers: 32,
    max_body_bytes: 64 * 1024,
    idle_timeout: Duration::from_secs(1),
    max_drain_bytes: 4096,
};

struct Mem<'a> {
    input: &'a [u8],
    out: Vec<u8>,
}

impl Read for Mem<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.input.len()).min(97);
        buf[..n].copy_from_slice(&self.input[..n]);
        self.input = &self.input[n..];
        Ok(n)
    }
}

impl Write for Mem<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.out.len() < 16 {
            self.out.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn store() -> Arc<dyn Store> {
    let s = MemoryStore::new(CAPACITY);
    s.create_bucket("bkt").unwrap();
    for (k, v) in [("a/one", &b"first object"[..]), ("b", &[7u8; 3000][..])] {
        let mut w = s.put_object("bkt", k, Default::default()).unwrap();
        w.write(v).unwrap();
        w.commit().unwrap();
    }
    s.create_upload("bkt", "mp", Default::default()).unwrap();
    Arc::new(s)
}

fuzz_target!(|data: &[u8]| {
    let store = store();
    let svc = S3Service::new(store.clone(), Config::default(), None).unwrap();
    let mut conn = Mem {
        input: data,
        out: Vec::new(),
    };
    let _ = serve_connection(&mut conn, &svc, &LIMITS);
    if !conn.out.is_empty() {
        assert!(
            conn.out.starts_with(b"HTTP/1.1 "),
            "not a response: {:?}",
            conn.out
        );
    }
    assert!(store.used_bytes() <= CAPACITY);
});
