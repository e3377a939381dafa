//! `ernic s3 bench`: PUT and GET of one object size through the token path
//! (RDMA into and out of a registered buffer) and through the HTTP body,
//! between this process and a store, then small-object PUT+GET operations
//! per second. Every GET is checked against what was put.

use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use ernic_s3::client::{Client, Outgoing};

use super::ClientArgs;
use super::transfer::{RdmaClient, check_rdma_reply, failure, path};
use crate::fabric::FabricArgs;

/// Arguments of `ernic s3 bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// The object size (at most 1G).
    #[arg(short = 's', long, default_value = "64M", value_parser = crate::perf::parse_size)]
    pub size: u64,
    /// Transfers of each kind.
    #[arg(short = 'n', long, default_value_t = 5)]
    pub iters: u32,
    /// Small-object PUT+GET pairs (4 KiB each).
    #[arg(long, default_value_t = 2000)]
    pub small_ops: u32,
    /// The bucket to use (made if missing).
    #[arg(long, default_value = "ernic-bench")]
    pub bucket: String,
    /// Our own address on the fabric (default: from the pid).
    #[arg(long)]
    pub addr: Option<std::net::Ipv4Addr>,
    /// Print one JSON object per measure.
    #[arg(long)]
    pub json: bool,
    /// The endpoint and credential.
    #[command(flatten)]
    pub client: ClientArgs,
    /// The fabric (the token path needs --mesh to reach a store in another process).
    #[command(flatten)]
    pub fabric: FabricArgs,
}

fn pattern(len: usize, seed: u64) -> Vec<u8> {
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

struct Row {
    what: &'static str,
    secs: f64,
    bytes: u64,
    ops: u32,
}

/// Runs the benchmark.
pub fn run(a: &BenchArgs) -> Result<()> {
    if a.size == 0 || a.size > 1 << 30 {
        bail!("-s {}: give 1 byte to 1G", a.size);
    }
    let mut client = Client::new(&a.client.endpoint, a.client.signer()?);
    let r = client.send("PUT", &path(&a.bucket, ""), "", &[], Outgoing::Empty)?;
    if r.status != 200 && r.status != 409 {
        return Err(failure(&mut client, r, "CreateBucket"));
    }
    client.body_bytes(&mut { r }, 1 << 20)?;
    let data = pattern(a.size as usize, 0x5eed);
    let p = path(&a.bucket, "bench-object");
    let mut rows = Vec::new();

    let timed = |rows: &mut Vec<Row>, what: &'static str, f: &mut dyn FnMut() -> Result<()>| {
        let t = Instant::now();
        for _ in 0..a.iters {
            f()?;
        }
        rows.push(Row {
            what,
            secs: t.elapsed().as_secs_f64(),
            bytes: a.size,
            ops: a.iters,
        });
        Ok::<(), anyhow::Error>(())
    };

    // The HTTP body path, unsigned (as SDKs send bodies over TLS): what the
    // token path saves is the body's trip through the two HTTP stacks.
    timed(&mut rows, "PUT body", &mut || {
        let mut src = &data[..];
        let out = Outgoing::Reader {
            len: a.size,
            reader: &mut src,
        };
        let r = client.send("PUT", &p, "", &[], out)?;
        if r.status != 200 {
            return Err(failure(&mut client, r, "PUT (body)"));
        }
        Ok(())
    })?;
    let mut got = Vec::with_capacity(data.len());
    timed(&mut rows, "GET body", &mut || {
        got.clear();
        let mut r = client.send("GET", &p, "", &[], Outgoing::Empty)?;
        if r.status != 200 {
            return Err(failure(&mut client, r, "GET (body)"));
        }
        client.read_body(&mut r, &mut got, &mut |_| {})?;
        Ok(())
    })?;
    if got != data {
        bail!("GET (body) returned other bytes than were put");
    }

    // The token path.
    if a.fabric.mesh.is_some() {
        let fabric = a.fabric.fabric()?;
        let rc = RdmaClient::open(&fabric, super::client_addr(a.addr), a.size)?;
        rc.handshake(&mut client, &p)?;
        let token = rc.token(a.size)?;
        rc.mr.write(0, &data)?;
        for (what, method) in [("PUT token", "PUT"), ("GET token", "GET")] {
            if method == "GET" {
                rc.mr.write(0, &vec![0u8; data.len()])?;
            }
            timed(&mut rows, what, &mut || {
                let r = client.send(
                    method,
                    &p,
                    "",
                    &[("x-amz-rdma-token", &token)],
                    Outgoing::Empty,
                )?;
                if r.status != 200 || !check_rdma_reply(&r, 200, a.size)? {
                    return Err(failure(&mut client, r, what));
                }
                Ok(())
            })?;
        }
        let mut back = vec![0u8; data.len()];
        rc.mr.read(0, &mut back)?;
        if back != data {
            bail!("GET (token) wrote other bytes than were put");
        }
    }

    // Small objects.
    let small = pattern(4096, 7);
    let t = Instant::now();
    for i in 0..a.small_ops {
        let k = path(&a.bucket, &format!("small/{}", i % 64));
        let r = client.send("PUT", &k, "", &[], Outgoing::Bytes(&small))?;
        if r.status != 200 {
            return Err(failure(&mut client, r, "PUT 4K"));
        }
        let mut r = client.send("GET", &k, "", &[], Outgoing::Empty)?;
        let b = client.body_bytes(&mut r, 8192).context("GET 4K")?;
        if b != small {
            bail!("GET 4K returned other bytes than were put");
        }
    }
    rows.push(Row {
        what: "4K PUT+GET",
        secs: t.elapsed().as_secs_f64(),
        bytes: 4096,
        ops: a.small_ops,
    });

    if !a.json {
        println!(
            "{:<12} {:>10} {:>6} {:>10} {:>12}",
            "#op", "bytes", "iters", "GB/s", "ops/s"
        );
    }
    for r in &rows {
        let gbps = r.bytes as f64 * f64::from(r.ops) / r.secs / 1e9;
        let ops = f64::from(r.ops) / r.secs;
        if a.json {
            println!(
                "{}",
                serde_json::json!({"op": r.what, "size": r.bytes, "iters": r.ops, "gb_per_s": gbps, "ops_per_s": ops})
            );
        } else {
            println!(
                "{:<12} {:>10} {:>6} {:>10.2} {:>12.0}",
                r.what, r.bytes, r.ops, gbps, ops
            );
        }
    }
    Ok(())
}
