//! How long a doorbell takes, trapped (one vfio-user message each, as QEMU
//! sends a guest's BAR 2 write) against written into a shared doorbell
//! page (the `shared-doorbells` profile), measured in one run against one
//! server: an admin-queue NOP is written, its doorbell rung, and the time
//! until its completion's color turns is taken.
//!
//! ```text
//! cargo run --release -p ernic-ionic --example doorbell_latency -- [ITERS]
//! ```

use std::os::unix::fs::FileExt;
use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

use ernic_ionic::function::IonicFunction;
use ernic_ionic::regs::{cmd, opcode, q_init, qtype, status};
use ernic_vfio::client::{Client, shared_memory};
use ernic_vfio::pci::region;
use ernic_vfio::proto::{Capabilities, DMA_READ, DMA_WRITE};
use ernic_vfio::server::Server;
use ernic_vfio::shm::Mapping;

const G: u64 = 0x1_0000_0000;
const RAM: u64 = 1 << 20;
const AQ: u64 = 0x10000; // 16 commands, completions at +0x1000
const DEPTH_LOG2: u8 = 4;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let iters: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse())
        .transpose()?
        .unwrap_or(20_000);
    let dir = std::env::temp_dir().join(format!("ernic-db-latency-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("sock");
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    let id = ernic_ionic::profile::load("shared-doorbells")?;
    std::thread::spawn(move || {
        let f = IonicFunction::new(id).with_shared_doorbells().unwrap();
        let mut s = Server::new(f, Capabilities::default());
        if let Ok((c, _)) = listener.accept() {
            let _ = s.serve(&c);
        }
    });

    let mut c = Client::connect(&path, Duration::from_secs(10))?;
    c.version(&Capabilities::default())?;
    let ram = shared_memory(c"guest-ram", RAM)?;
    c.dma_map(G, RAM, 0, DMA_READ | DMA_WRITE, &ram)?;
    let ram = std::fs::File::from(ram);

    // The admin queue, with no interrupt, through the command registers.
    let mut q = [0u8; 64];
    q[0] = opcode::Q_INIT;
    q[q_init::TYPE] = qtype::ADMINQ;
    q[q_init::FLAGS..q_init::FLAGS + 2].copy_from_slice(&q_init::F_ENA.to_le_bytes());
    q[q_init::RING_SIZE] = DEPTH_LOG2;
    q[q_init::RING_BASE..q_init::RING_BASE + 8].copy_from_slice(&(G + AQ).to_le_bytes());
    q[q_init::CQ_RING_BASE..q_init::CQ_RING_BASE + 8]
        .copy_from_slice(&(G + AQ + 0x1000).to_le_bytes());
    c.region_write(region::BAR0, cmd::CMD as u64, &q)?;
    c.region_write(region::BAR0, cmd::DOORBELL as u64, &[1, 0, 0, 0])?;
    let comp = c.region_read(region::BAR0, cmd::COMP as u64, 1)?;
    if comp[0] != status::SUCCESS {
        return Err(format!("Q_INIT of the admin queue: status {}", comp[0]).into());
    }

    let (info, fd) = c.region_info(region::BAR2)?;
    let fd = fd.ok_or("the server offered no shared doorbell pages")?;
    let (area, len) = info.sparse[0];
    let db = Mapping::new(&fd, info.offset + area, len as usize)?;

    let depth = 1u64 << DEPTH_LOG2;
    let mut n = 0u64; // commands posted so far
    let mut run = |shared: bool, c: &mut Client| -> Result<Vec<f64>, Box<dyn std::error::Error>> {
        let mut lat = Vec::with_capacity(iters);
        for _ in 0..iters {
            let slot = n % depth;
            let color = ((n / depth) & 1 == 0) as u8; // 1 on the first pass
            let mut nop = [0u8; 64];
            nop[0] = opcode::NOP;
            ram.write_all_at(&nop, AQ + 64 * slot)?;
            n += 1;
            let value = n % depth; // queue 0, ring 0, producer index
            let t = Instant::now();
            if shared {
                db.store(8 * usize::from(qtype::ADMINQ), value);
            } else {
                c.region_write(
                    region::BAR2,
                    8 * u64::from(qtype::ADMINQ),
                    &value.to_le_bytes(),
                )?;
            }
            let mut b = [0u8; 1];
            let at = AQ + 0x1000 + 16 * slot + 15;
            let end = t + Duration::from_secs(5);
            loop {
                ram.read_exact_at(&mut b, at)?;
                if b[0] >> 7 == color {
                    break;
                }
                if Instant::now() > end {
                    return Err("a NOP never completed".into());
                }
                std::hint::spin_loop();
            }
            lat.push(t.elapsed().as_secs_f64() * 1e6);
        }
        lat.sort_by(f64::total_cmp);
        Ok(lat)
    };
    let trapped = run(false, &mut c)?;
    let shared = run(true, &mut c)?;
    let at = |v: &[f64], q: f64| v[((v.len() - 1) as f64 * q) as usize];
    for (name, v) in [("trapped", &trapped), ("shared page", &shared)] {
        println!(
            "{name:>12}: doorbell to completion median {:.2} us, p99 {:.2} us ({iters} NOPs)",
            at(v, 0.5),
            at(v, 0.99)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
