//! The client commands: `get`, `put`, `ls`, `mb`. With `--mesh` the bytes
//! move by RDMA: a buffer registered on a device of our own, named in
//! `x-amz-rdma-token`, at most [`WINDOW`] bytes at a time (ranged GETs, and
//! multipart uploads for larger files); the store's `x-amz-rdma-reply` and
//! `x-amz-rdma-bytes-transferred` are checked on every answer.

use std::fs::File;
use std::io::{Read, Write};
use std::net::Ipv4Addr;

use anyhow::{Context, Result, bail};
use clap::Args;
use ernic_s3::client::{Client, Outgoing, Reply};
use ernic_s3::sigv4::canonical::uri_encode_into;
use ernic_s3::token::{Format, RdmaToken, Transport};
use ernic_verbs::{Access, Cq, Device, Gid, Mr, Pd, Qp, QpCaps, QpType, Qpn};

use super::ClientArgs;
use crate::fabric::FabricArgs;
use crate::progress::Progress;

/// The most bytes one RDMA request moves (the registered buffer's size).
pub const WINDOW: u64 = 64 << 20;

/// Arguments of `ernic s3 get`.
#[derive(Args, Debug)]
pub struct GetArgs {
    /// s3://BUCKET/KEY
    pub url: String,
    /// Where to write it ('-': stdout; default: the key's last part).
    pub file: Option<String>,
    /// Only these bytes: FIRST-LAST (inclusive), as a Range header.
    #[arg(long)]
    pub range: Option<String>,
    /// Our own address on the fabric, with --mesh (default: from the pid).
    #[arg(long)]
    pub addr: Option<Ipv4Addr>,
    /// The endpoint and credential.
    #[command(flatten)]
    pub client: ClientArgs,
    /// The fabric (RDMA with --mesh).
    #[command(flatten)]
    pub fabric: FabricArgs,
}

/// Arguments of `ernic s3 put`.
#[derive(Args, Debug)]
pub struct PutArgs {
    /// The file to upload.
    pub file: String,
    /// s3://BUCKET/KEY
    pub url: String,
    /// Content-Type to store.
    #[arg(long)]
    pub content_type: Option<String>,
    /// Our own address on the fabric, with --mesh (default: from the pid).
    #[arg(long)]
    pub addr: Option<Ipv4Addr>,
    /// The endpoint and credential.
    #[command(flatten)]
    pub client: ClientArgs,
    /// The fabric (RDMA with --mesh).
    #[command(flatten)]
    pub fabric: FabricArgs,
}

/// Arguments of `ernic s3 ls`.
#[derive(Args, Debug)]
pub struct LsArgs {
    /// s3://BUCKET[/PREFIX] (none: the buckets).
    pub url: Option<String>,
    /// Every key, not rolled up at '/'.
    #[arg(long, short)]
    pub recursive: bool,
    /// The endpoint and credential.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// Arguments of `ernic s3 mb`.
#[derive(Args, Debug)]
pub struct MbArgs {
    /// s3://BUCKET
    pub url: String,
    /// The endpoint and credential.
    #[command(flatten)]
    pub client: ClientArgs,
}

/// `s3://bucket/key` into its parts (the key may be empty).
pub fn parse_url(url: &str) -> Result<(String, String)> {
    let rest = url
        .strip_prefix("s3://")
        .with_context(|| format!("{url:?}: expected s3://BUCKET/KEY"))?;
    let (b, k) = rest.split_once('/').unwrap_or((rest, ""));
    if b.is_empty() {
        bail!("{url:?}: no bucket");
    }
    Ok((b.to_string(), k.to_string()))
}

/// The request path of a bucket and key, percent-encoded.
pub fn path(bucket: &str, key: &str) -> String {
    let mut p = String::from("/");
    uri_encode_into(&mut p, bucket.as_bytes(), false);
    if !key.is_empty() {
        p.push('/');
        uri_encode_into(&mut p, key.as_bytes(), true);
    }
    p
}

/// A reply that is not the status expected, as one line: the S3 error code
/// and message from its body.
pub fn failure(client: &mut Client, mut r: Reply, what: &str) -> anyhow::Error {
    let body = client.body_bytes(&mut r, 1 << 20).unwrap_or_default();
    let text = String::from_utf8_lossy(&body);
    let field = |name: &str| {
        let open = format!("<{name}>");
        text.split_once(&open)
            .and_then(|(_, rest)| rest.split_once(&format!("</{name}>")))
            .map(|(v, _)| v.to_string())
    };
    let field = |name: &str| field(name).map(|v| unescape(&v));
    match (field("Code"), field("Message")) {
        (Some(c), Some(m)) => anyhow::anyhow!("{what}: {} {c}: {m}", r.status),
        _ => anyhow::anyhow!("{what}: HTTP {}", r.status),
    }
}

/// A device of our own with a registered window, for token requests.
pub struct RdmaClient {
    _dev: Device,
    _pd: Pd,
    _cq: Cq,
    qp: Qp,
    /// The registered buffer.
    pub mr: Mr,
    gid: Gid,
}

impl RdmaClient {
    /// Opens a device at `addr` on the fabric and registers `len` bytes.
    pub fn open(fabric: &ernic_verbs::Fabric, addr: Ipv4Addr, len: u64) -> Result<RdmaClient> {
        let gid = Gid::from_ipv4(addr);
        let dev = fabric
            .open_device(gid)
            .with_context(|| format!("a device at {addr}"))?;
        let pd = dev.alloc_pd()?;
        let cq = dev.create_cq(16)?;
        let qp = pd.create_qp(QpType::Rc, &cq, &cq, QpCaps::default())?;
        let access = Access(Access::LOCAL_WRITE.0 | Access::REMOTE_WRITE.0 | Access::REMOTE_READ.0);
        let mr = pd
            .reg_mr(len.max(1) as usize, access)
            .context("registering the transfer buffer")?;
        Ok(RdmaClient {
            _dev: dev,
            _pd: pd,
            _cq: cq,
            qp,
            mr,
            gid,
        })
    }

    /// The token naming the first `len` bytes of the buffer: hipObject's,
    /// over RC, since this QP answers only the store's QP it is connected to.
    pub fn token(&self, len: u64) -> Result<String> {
        let t = RdmaToken {
            format: Format::HipObject,
            transport: Transport::Rc,
            addr: self.mr.addr(),
            len: len.max(1),
            rkey: self.mr.rkey().0,
            qpn: self.qp.qpn().0,
            lid: 0,
            gid: Some(self.gid.0),
            port: Some(1),
        };
        Ok(t.emit()?)
    }

    /// hipObject's RC handshake: a HEAD of `path` with our token, whose
    /// `x-amz-rdma-reply: 200:<server token>` names the store's QP; ours is
    /// connected to it. Answers the HEAD (its status and headers).
    pub fn handshake(&self, client: &mut Client, path: &str) -> Result<Reply> {
        let token = self.token(1)?;
        let r = client.send(
            "HEAD",
            path,
            "",
            &[("x-amz-rdma-token", &token)],
            Outgoing::Empty,
        )?;
        let reply = r.header("x-amz-rdma-reply").unwrap_or("");
        let server = match reply.strip_prefix("200:") {
            Some(t) => {
                RdmaToken::parse(t).with_context(|| format!("the store's handshake token {t:?}"))?
            }
            None => bail!(
                "the store did not answer the RDMA handshake (x-amz-rdma-reply: {reply:?}); is it serving on the same mesh?"
            ),
        };
        let gid = Gid(server.gid.context("the store's token names no GID")?);
        let access = Access(Access::LOCAL_WRITE.0 | Access::REMOTE_WRITE.0 | Access::REMOTE_READ.0);
        self.qp
            .connect(gid, Qpn(server.qpn), access)
            .context("connecting to the store's QP")?;
        Ok(r)
    }
}

/// Checks a token answer's headers: the reply and the byte count.
pub fn check_rdma_reply(r: &Reply, want_status: u16, want_bytes: u64) -> Result<bool> {
    match r.header("x-amz-rdma-reply") {
        Some("501") => Ok(false),
        Some(v) if v.split(':').next() == Some(&want_status.to_string()) => {
            let n: u64 = r
                .header("x-amz-rdma-bytes-transferred")
                .and_then(|v| v.parse().ok())
                .context("the store's answer has no x-amz-rdma-bytes-transferred")?;
            if n != want_bytes {
                bail!("the store moved {n} bytes by RDMA, not {want_bytes}");
            }
            Ok(true)
        }
        Some(v) => bail!("the store answered x-amz-rdma-reply: {v}, expected {want_status}"),
        None => Ok(false),
    }
}

fn object_size(client: &mut Client, p: &str) -> Result<u64> {
    head_size(client.send("HEAD", p, "", &[], Outgoing::Empty)?, p)
}

fn head_size(r: Reply, p: &str) -> Result<u64> {
    if r.status == 404 {
        bail!("HEAD {p}: no such object (or bucket)");
    }
    if r.status != 200 {
        bail!("HEAD {p}: HTTP {}", r.status);
    }
    r.header("content-length")
        .and_then(|v| v.parse().ok())
        .context("HEAD: no Content-Length")
}

/// `ernic s3 get`.
pub fn get(a: &GetArgs) -> Result<()> {
    let (bucket, key) = parse_url(&a.url)?;
    if key.is_empty() {
        bail!("{}: no key", a.url);
    }
    let p = path(&bucket, &key);
    let mut client = Client::new(&a.client.endpoint, a.client.signer()?);
    let rdma = match &a.fabric.mesh {
        Some(_) => Some(RdmaClient::open(
            &a.fabric.fabric()?,
            super::client_addr(a.addr),
            WINDOW,
        )?),
        None => None,
    };
    let size = match &rdma {
        Some(rc) => head_size(rc.handshake(&mut client, &p)?, &p)?,
        None => object_size(&mut client, &p)?,
    };
    let (first, len) = match &a.range {
        None => (0, size),
        Some(r) => {
            let (f, l) = r.split_once('-').context("--range FIRST-LAST")?;
            let (f, l): (u64, u64) = (f.parse()?, l.parse()?);
            if l < f || f >= size {
                bail!("--range {r} is outside the {size}-byte object");
            }
            (f, l.min(size - 1) - f + 1)
        }
    };
    let name = a
        .file
        .clone()
        .unwrap_or_else(|| key.rsplit('/').next().unwrap_or("object").to_string());
    let mut out: Box<dyn Write> = if name == "-" {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(File::create(&name).with_context(|| format!("creating {name}"))?)
    };
    let mut progress = Progress::new(
        &format!("get {}", a.url),
        len,
        a.client.quiet || name == "-",
    );
    let mut done = 0u64;
    let mut by_rdma_bytes = 0u64;
    let mut buf = Vec::new();
    while done < len || (len == 0 && done == 0 && rdma.is_none()) {
        let n = (len - done).min(if rdma.is_some() { WINDOW } else { len.max(1) });
        let range = format!("bytes={}-{}", first + done, first + done + n.max(1) - 1);
        let token = rdma.as_ref().map(|c| c.token(n)).transpose()?;
        let mut hs: Vec<(&str, &str)> = Vec::new();
        if len > 0 && (a.range.is_some() || rdma.is_some()) {
            hs.push(("range", &range));
        }
        if let Some(t) = &token {
            hs.push(("x-amz-rdma-token", t));
        }
        let mut r = client.send("GET", &p, "", &hs, Outgoing::Empty)?;
        if r.status != 200 && r.status != 206 {
            return Err(failure(&mut client, r, &format!("GET {}", a.url)));
        }
        let by_rdma = match (&rdma, token) {
            (Some(_), Some(_)) => check_rdma_reply(&r, r.status, n)?,
            _ => false,
        };
        if by_rdma {
            client.body_bytes(&mut r, 0)?;
            let c = rdma.as_ref().context("no RDMA client")?;
            buf.resize(n as usize, 0);
            c.mr.read(0, &mut buf)?;
            out.write_all(&buf).context("writing the object")?;
            done += n;
            by_rdma_bytes += n;
        } else {
            let base = done;
            let got = client.read_body(&mut r, &mut out, &mut |d| progress.update(base + d))?;
            done += got;
            if len == 0 {
                break;
            }
        }
        progress.update(done);
    }
    out.flush()?;
    progress.finish(done);
    report(a.client.quiet, "get", &a.url, done, by_rdma_bytes);
    Ok(())
}

/// One line on stderr saying how the bytes moved.
fn report(quiet: bool, what: &str, url: &str, total: u64, by_rdma: u64) {
    if quiet {
        return;
    }
    let how = match by_rdma {
        0 => "in the HTTP body".to_string(),
        n if n == total => "by RDMA".to_string(),
        n => format!("{n} of them by RDMA, the rest in the HTTP body"),
    };
    tracing::info!(bytes = total, "{what} {url}: {total} bytes {how}");
}

/// `ernic s3 put`.
pub fn put(a: &PutArgs) -> Result<()> {
    let (bucket, key) = parse_url(&a.url)?;
    let key = if key.is_empty() || key.ends_with('/') {
        let base = std::path::Path::new(&a.file)
            .file_name()
            .and_then(|n| n.to_str())
            .context("the file has no name")?;
        format!("{key}{base}")
    } else {
        key
    };
    let p = path(&bucket, &key);
    let mut file = File::open(&a.file).with_context(|| format!("opening {}", a.file))?;
    let size = file.metadata()?.len();
    let mut client = Client::new(&a.client.endpoint, a.client.signer()?);
    let mut progress = Progress::new(&format!("put {}", a.url), size, a.client.quiet);
    let ct = a.content_type.clone();
    let mut hs: Vec<(&str, &str)> = Vec::new();
    if let Some(ct) = &ct {
        hs.push(("content-type", ct));
    }
    let rdma = match &a.fabric.mesh {
        Some(_) if size > 0 => Some(RdmaClient::open(
            &a.fabric.fabric()?,
            super::client_addr(a.addr),
            size.min(WINDOW),
        )?),
        _ => None,
    };
    let Some(rc) = rdma else {
        let mut reader = ProgressReader {
            inner: &mut file,
            done: 0,
            progress: &mut progress,
        };
        let r = client.send(
            "PUT",
            &p,
            "",
            &hs,
            Outgoing::Reader {
                len: size,
                reader: &mut reader,
            },
        )?;
        if r.status != 200 {
            return Err(failure(&mut client, r, &format!("PUT {}", a.url)));
        }
        progress.finish(size);
        report(a.client.quiet, "put", &a.url, size, 0);
        return Ok(());
    };
    rc.handshake(&mut client, &p)?;
    let mut buf = vec![0u8; size.min(WINDOW) as usize];
    if size <= WINDOW {
        file.read_exact(&mut buf).context("reading the file")?;
        rc.mr.write(0, &buf)?;
        let token = rc.token(size)?;
        hs.push(("x-amz-rdma-token", &token));
        let r = client.send("PUT", &p, "", &hs, Outgoing::Empty)?;
        if r.status != 200 {
            return Err(failure(&mut client, r, &format!("PUT {}", a.url)));
        }
        let mut by_rdma = size;
        if !check_rdma_reply(&r, 200, size)? {
            // Declined: send it again in the body, as the protocol says.
            by_rdma = 0;
            let mut c = Client::new(&a.client.endpoint, a.client.signer()?);
            let r = c.send("PUT", &p, "", &hs[..hs.len() - 1], Outgoing::Bytes(&buf))?;
            if r.status != 200 {
                return Err(failure(&mut c, r, &format!("PUT {}", a.url)));
            }
        }
        progress.finish(size);
        report(a.client.quiet, "put", &a.url, size, by_rdma);
        return Ok(());
    }
    let by_rdma = multipart_rdma(
        &mut client,
        &rc,
        &mut file,
        &p,
        &hs,
        size,
        &mut buf,
        &mut progress,
    )
    .with_context(|| format!("PUT {}", a.url))?;
    progress.finish(size);
    report(a.client.quiet, "put", &a.url, size, by_rdma);
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn multipart_rdma(
    client: &mut Client,
    rc: &RdmaClient,
    file: &mut File,
    p: &str,
    hs: &[(&str, &str)],
    size: u64,
    buf: &mut [u8],
    progress: &mut Progress,
) -> Result<u64> {
    let mut r = client.send("POST", p, "uploads", hs, Outgoing::Empty)?;
    if r.status != 200 {
        return Err(failure(client, r, "CreateMultipartUpload"));
    }
    let body = String::from_utf8(client.body_bytes(&mut r, 1 << 20)?)?;
    let id = body
        .split_once("<UploadId>")
        .and_then(|(_, r)| r.split_once("</UploadId>"))
        .map(|(v, _)| v.to_string())
        .context("CreateMultipartUpload: no UploadId")?;
    let mut done = 0u64;
    let mut by_rdma_bytes = 0u64;
    let mut etags = Vec::new();
    while done < size {
        let n = (size - done).min(WINDOW) as usize;
        file.read_exact(&mut buf[..n]).context("reading the file")?;
        rc.mr.write(0, &buf[..n])?;
        let token = rc.token(n as u64)?;
        let q = format!("partNumber={}&uploadId={id}", etags.len() + 1);
        let r = client.send(
            "PUT",
            p,
            &q,
            &[("x-amz-rdma-token", &token)],
            Outgoing::Empty,
        )?;
        if r.status != 200 {
            return Err(failure(client, r, "UploadPart"));
        }
        let by_rdma = check_rdma_reply(&r, 200, n as u64)?;
        if by_rdma {
            by_rdma_bytes += n as u64;
        }
        let r = if by_rdma {
            r
        } else {
            client.send("PUT", p, &q, &[], Outgoing::Bytes(&buf[..n]))?
        };
        let etag = r.header("etag").context("UploadPart: no ETag")?.to_string();
        if r.status != 200 {
            return Err(failure(client, r, "UploadPart"));
        }
        etags.push(etag);
        done += n as u64;
        progress.update(done);
    }
    let mut xml = String::from("<CompleteMultipartUpload>");
    for (i, e) in etags.iter().enumerate() {
        xml.push_str(&format!(
            "<Part><PartNumber>{}</PartNumber><ETag>{e}</ETag></Part>",
            i + 1
        ));
    }
    xml.push_str("</CompleteMultipartUpload>");
    let r = client.send(
        "POST",
        p,
        &format!("uploadId={id}"),
        &[],
        Outgoing::Bytes(xml.as_bytes()),
    )?;
    if r.status != 200 {
        return Err(failure(client, r, "CompleteMultipartUpload"));
    }
    Ok(by_rdma_bytes)
}

struct ProgressReader<'a> {
    inner: &'a mut File,
    done: u64,
    progress: &'a mut Progress,
}

impl Read for ProgressReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.done += n as u64;
        self.progress.update(self.done);
        Ok(n)
    }
}

/// The five predefined XML entities back to their characters (what S3's
/// bodies escape; numeric references are left as they are).
fn unescape(v: &str) -> String {
    v.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&apos;", "'")
        .replace("&amp;", "&")
}

fn xml_values(body: &str, tag: &str) -> Vec<String> {
    let (open, close) = (format!("<{tag}>"), format!("</{tag}>"));
    body.split(&open)
        .skip(1)
        .filter_map(|s| s.split_once(&close).map(|(v, _)| unescape(v)))
        .collect()
}

/// `ernic s3 ls`.
pub fn ls(a: &LsArgs) -> Result<()> {
    let mut client = Client::new(&a.client.endpoint, a.client.signer()?);
    let Some(url) = &a.url else {
        let mut r = client.send("GET", "/", "", &[], Outgoing::Empty)?;
        if r.status != 200 {
            return Err(failure(&mut client, r, "ListBuckets"));
        }
        let body = String::from_utf8(client.body_bytes(&mut r, 16 << 20)?)?;
        for (name, date) in xml_values(&body, "Name")
            .iter()
            .zip(xml_values(&body, "CreationDate"))
        {
            println!("{date}  {name}");
        }
        return Ok(());
    };
    let (bucket, prefix) = parse_url(url)?;
    let mut token: Option<String> = None;
    loop {
        let mut q = String::from("list-type=2");
        let mut add = |k: &str, v: &str| {
            q.push('&');
            q.push_str(k);
            q.push('=');
            uri_encode_into(&mut q, v.as_bytes(), false);
        };
        if !prefix.is_empty() {
            add("prefix", &prefix);
        }
        if !a.recursive {
            add("delimiter", "/");
        }
        if let Some(t) = &token {
            add("continuation-token", t);
        }
        let mut r = client.send("GET", &path(&bucket, ""), &q, &[], Outgoing::Empty)?;
        if r.status != 200 {
            return Err(failure(&mut client, r, &format!("ListObjectsV2 {url}")));
        }
        let body = String::from_utf8(client.body_bytes(&mut r, 64 << 20)?)?;
        for c in body.split("<Contents>").skip(1) {
            let key = xml_values(c, "Key").pop().unwrap_or_default();
            let size = xml_values(c, "Size").pop().unwrap_or_default();
            let date = xml_values(c, "LastModified").pop().unwrap_or_default();
            println!("{date}  {size:>12}  {key}");
        }
        for p in body.split("<CommonPrefixes>").skip(1) {
            println!(
                "{:>24}  {:>12}  {}",
                "",
                "PRE",
                xml_values(p, "Prefix").pop().unwrap_or_default()
            );
        }
        token = xml_values(&body, "NextContinuationToken").pop();
        if token.is_none() {
            return Ok(());
        }
    }
}

/// `ernic s3 mb`.
pub fn mb(a: &MbArgs) -> Result<()> {
    let (bucket, key) = parse_url(&a.url)?;
    if !key.is_empty() {
        bail!("{}: mb takes s3://BUCKET", a.url);
    }
    let mut client = Client::new(&a.client.endpoint, a.client.signer()?);
    let r = client.send("PUT", &path(&bucket, ""), "", &[], Outgoing::Empty)?;
    if r.status != 200 {
        return Err(failure(&mut client, r, &format!("CreateBucket {}", a.url)));
    }
    Ok(())
}
