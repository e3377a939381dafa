//! `ernic p4 run`: packets from pcap files through a program, in time
//! order, and what leaves it into pcap files.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;

use anyhow::{Context, Result, bail};
use clap::Args;
use ernic_p4::exec::{Output, Switch};
use ernic_p4::pcap::{self, PcapNgWriter, PcapWriter, Record, TsResolution};

pub(crate) const RUN_HELP: &str = "\
INPUT and OUTPUT:
  --in FILE        a pcapng file: each packet enters on the port its interface
                   number names; a classic pcap file: every packet enters on
                   --in-port
  --in PORT=FILE   a classic pcap (or pcapng) whose packets all enter on PORT
                   (repeat for more ports; packets are merged in time order)
  --out FILE       one pcapng file, one interface per port, each packet on the
                   interface of the port it left by
  --out PORT=FILE  a classic pcap of what left by PORT (repeat for more ports;
                   packets to other ports are counted, not written)

Example (bmv2's simple_router):
  ernic p4 run --program simple_router.json --commands commands.txt \\
      --in 0=h1.pcap --out 1=r1.pcap --out 2=r2.pcap";

/// `ernic p4 run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The program: bmv2 JSON as p4c writes it.
    #[arg(long, value_name = "P.json", required_unless_present = "copy")]
    program: Option<String>,
    /// No program: copy every packet out of the port it came in on (the
    /// baseline a program's rate is compared with).
    #[arg(long, conflicts_with_all = ["program", "commands"])]
    copy: bool,
    /// A simple_switch_CLI script to run before the packets ('-': stdin).
    #[arg(long, value_name = "FILE")]
    commands: Option<String>,
    /// Input packets: FILE or PORT=FILE (see below).
    #[arg(long = "in", required = true, value_name = "[PORT=]FILE")]
    inputs: Vec<String>,
    /// The port of a classic pcap given without PORT=.
    #[arg(long, default_value_t = 0, value_name = "PORT")]
    in_port: u32,
    /// Output packets: FILE (pcapng) or PORT=FILE (see below).
    #[arg(long = "out", required = true, value_name = "[PORT=]FILE")]
    outputs: Vec<String>,
    /// Print the program's digests and log_msg lines.
    #[arg(long)]
    log: bool,
}

/// An `--out`: one pcapng for all ports, or one classic pcap per port.
enum Sink {
    All(PcapNgWriter<BufWriter<File>>),
    PerPort(BTreeMap<u32, PcapWriter<BufWriter<File>>>),
}

fn split_spec(spec: &str) -> Result<(Option<u32>, &str)> {
    match spec.split_once('=') {
        Some((p, f)) => {
            let port = p
                .parse()
                .with_context(|| format!("{spec:?}: {p:?} is not a port number"))?;
            Ok((Some(port), f))
        }
        None => Ok((None, spec)),
    }
}

pub(crate) fn run(a: &RunArgs) -> Result<()> {
    let mut sw = match &a.program {
        Some(p) => Some(Switch::new(super::load(p)?)),
        None => None,
    };
    if let (Some(sw), Some(c)) = (sw.as_mut(), &a.commands) {
        super::commands(sw, c)?;
    }
    let mut packets: Vec<(u64, usize, u32, Vec<u8>)> = Vec::new();
    for spec in &a.inputs {
        let (port, file) = split_spec(spec)?;
        let records =
            pcap::read_packets_from_path(file).with_context(|| format!("reading {file}"))?;
        for (i, r) in records.into_iter().enumerate() {
            let p = port.or(r.port).unwrap_or(a.in_port);
            packets.push((r.ts_ns, packets.len() + i, p, r.data));
        }
    }
    packets.sort_by_key(|p| (p.0, p.1));
    let mut sink = open_sinks(&a.outputs)?;
    let mut out: Vec<Output> = Vec::new();
    let mut per_port: BTreeMap<u32, u64> = BTreeMap::new();
    let mut unwritten = 0u64;
    let (n_in, mut n_out) = (packets.len(), 0u64);
    let mut dropped = 0u64;
    let mut busy = std::time::Duration::ZERO;
    for (ts, _, port, data) in &packets {
        let start = std::time::Instant::now();
        match sw.as_mut() {
            // The switch's outputs were recycled after the last packet.
            Some(sw) => sw.process(*port, data, *ts, &mut out),
            // The copy reuses one output buffer, as the switch reuses its.
            None => {
                if out.is_empty() {
                    out.push(Output {
                        port: *port,
                        data: Vec::new(),
                    });
                }
                out[0].port = *port;
                out[0].data.clear();
                out[0].data.extend_from_slice(data);
            }
        }
        busy += start.elapsed();
        if out.is_empty() {
            dropped += 1;
        }
        for o in out.iter_mut() {
            n_out += 1;
            *per_port.entry(o.port).or_default() += 1;
            // The record borrows the output's bytes and gives them back, so
            // the switch can reuse them.
            let mut rec = Record {
                port: Some(o.port),
                ts_ns: *ts,
                data: std::mem::take(&mut o.data),
            };
            match &mut sink {
                Sink::All(w) => w.write(&rec).context("writing the output")?,
                Sink::PerPort(ws) => match ws.get_mut(&o.port) {
                    Some(w) => {
                        rec.port = None;
                        w.write(&rec).context("writing the output")?
                    }
                    None => unwritten += 1,
                },
            }
            o.data = rec.data;
        }
        if let Some(sw) = sw.as_mut() {
            sw.recycle(&mut out);
        }
    }
    match sink {
        Sink::All(w) => drop(w.finish().context("finishing the output")?),
        Sink::PerPort(ws) => {
            for (_, w) in ws {
                w.finish().context("finishing an output")?;
            }
        }
    }
    let (errors, log) = sw
        .as_ref()
        .map_or((0, &[][..]), |sw| (sw.state.errors, &sw.state.log[..]));
    if a.log {
        for l in log {
            println!("log: {l}");
        }
    }
    let ports: Vec<String> = per_port
        .iter()
        .map(|(p, n)| format!("port {p}: {n}"))
        .collect();
    println!(
        "{n_in} packet(s) in, {n_out} out ({}), {dropped} dropped, {} failed in the pipeline{}",
        if ports.is_empty() {
            "none".into()
        } else {
            ports.join(", ")
        },
        errors,
        if unwritten > 0 {
            format!(", {unwritten} to ports with no --out")
        } else {
            String::new()
        }
    );
    if n_in > 0 {
        let secs = busy.as_secs_f64().max(1e-9);
        println!(
            "{} {:.0} packets/s ({:.3} s processing, file I/O not counted)",
            if a.copy {
                "copied at"
            } else {
                "through the program at"
            },
            n_in as f64 / secs,
            secs
        );
    }
    Ok(())
}

fn open_sinks(specs: &[String]) -> Result<Sink> {
    let mut per_port = BTreeMap::new();
    let mut all = None;
    for spec in specs {
        let (port, file) = split_spec(spec)?;
        let f = BufWriter::new(File::create(file).with_context(|| format!("creating {file}"))?);
        match port {
            Some(p) => {
                if per_port
                    .insert(
                        p,
                        PcapWriter::new(f, TsResolution::Nano).context("writing a pcap header")?,
                    )
                    .is_some()
                {
                    bail!("port {p} is given twice in --out");
                }
            }
            None => {
                if all.is_some() {
                    bail!(
                        "only one --out FILE (pcapng for every port); use PORT=FILE for per-port files"
                    );
                }
                // Interfaces for ports 0..=511 (v1model's 9-bit ports).
                all = Some(PcapNgWriter::new(f, 512).context("writing a pcapng header")?);
            }
        }
    }
    match (all, per_port.is_empty()) {
        (Some(w), true) => Ok(Sink::All(w)),
        (None, false) => Ok(Sink::PerPort(per_port)),
        _ => bail!("give either one --out FILE or --out PORT=FILE for each port, not both"),
    }
}
