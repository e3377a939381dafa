//! The P4 engine's place in `ernic-server` (seed 001, "The P4 Engine"):
//! what its three flags ask for ([`P4Options`]), the one function that
//! builds the engine's hooks ([`p4_hooks`]), and their installation on
//! the device ([`install`]).
//!
//! The file is `p4_hooks.rs`, not `p4.rs`: `src/p4/` is the `ernic` tool's
//! offline P4 subcommand (`mod p4` of `main.rs`), and the two names would
//! collide there.
//!
//! The device side (`ernic_ionic::p4hook`) defines the hooks and never
//! names the engine; the engine crate (`ernic-p4`, `device::Engine`)
//! implements them. This file is the only meeting point: the flags are
//! read and checked, the program loaded, and the engine's hooks installed.
//! Ports, what a program sees of a WQE and the fp8 externs are
//! `ernic_p4::target`'s.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use ernic_ionic::function::IonicFunction;
use ernic_ionic::p4hook::{FrameFilter, GuestScope, P4Control, SendFilter};

/// The largest program file read at start (64 MiB; bmv2 JSON of real
/// programs runs to a few MiB).
pub const MAX_PROGRAM: u64 = 64 << 20;

/// What `--p4`, `--p4-program` and `--p4-guest-scope` ask for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct P4Options {
    /// The program to load at start (bmv2 JSON): its file and its text.
    pub program: Option<(PathBuf, String)>,
    /// How far the guest may reach the engine (device commands 70-72).
    pub scope: GuestScope,
}

impl P4Options {
    /// The options the flags give; `None` when none of the three is given
    /// (the engine stays off). Any one of them turns it on, even
    /// `--p4-guest-scope none`. The program file is read here: one that
    /// cannot be read, is not UTF-8 or is over [`MAX_PROGRAM`] is an error
    /// naming it.
    pub fn from_flags(
        p4: bool,
        program: Option<&Path>,
        scope: Option<&str>,
    ) -> Result<Option<P4Options>> {
        if !p4 && program.is_none() && scope.is_none() {
            return Ok(None);
        }
        let scope = match scope {
            Some(s) => s
                .parse::<GuestScope>()
                .map_err(anyhow::Error::msg)
                .context("--p4-guest-scope")?,
            None => GuestScope::None,
        };
        let program = match program {
            Some(p) => Some((p.to_path_buf(), read_program(p)?)),
            None => None,
        };
        Ok(Some(P4Options { program, scope }))
    }
}

/// The text of the program file at `p`.
fn read_program(p: &Path) -> Result<String> {
    let what = || format!("--p4-program {}", p.display());
    let len = std::fs::metadata(p).with_context(what)?.len();
    if len > MAX_PROGRAM {
        bail!(
            "{}: {len} bytes, more than the {} MiB a program may have",
            what(),
            MAX_PROGRAM >> 20
        );
    }
    let bytes = std::fs::read(p).with_context(what)?;
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{}: not UTF-8 text (bmv2 JSON)", what()))
}

/// The engine's three hooks, as the device takes them.
pub type Hooks = (
    Box<dyn FrameFilter>,
    Box<dyn SendFilter>,
    Box<dyn P4Control>,
);

/// Builds the engine for `opts` (its program loaded and checked: a
/// program the engine refuses stops the server, naming the file and the
/// JSON path) and answers its hooks, all three one engine.
pub fn p4_hooks(opts: &P4Options) -> anyhow::Result<Hooks> {
    let program = match &opts.program {
        Some((path, text)) => Some(
            ernic_p4::program::Program::load(text)
                .with_context(|| format!("--p4-program {}", path.display()))?,
        ),
        None => None,
    };
    let engine = ernic_p4::device::Engine::new(program);
    Ok((
        Box::new(engine.clone()),
        Box::new(engine.clone()),
        Box::new(engine),
    ))
}

/// `function` with the engine's `hooks` installed: every frame between
/// the guest and the wire through the frame filter, every send WQE
/// through the send filter, and device commands 70-72 to the control as
/// far as `opts.scope` allows.
pub fn install(function: IonicFunction, opts: &P4Options, hooks: Hooks) -> IonicFunction {
    let (frames, sends, control) = hooks;
    function
        .with_frame_filter(frames)
        .with_send_filter(sends)
        .with_p4_control(control, opts.scope)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ernic_ionic::p4hook::{SendVerdict, SendWqe, Side};
    use ernic_vfio::dma::Dma;
    use ernic_vfio::pci::region;
    use ernic_vfio::server::{Device, Io, Irqs};
    use std::sync::{Arc, Mutex};

    #[test]
    fn no_flag_leaves_the_engine_off_and_any_flag_turns_it_on() {
        assert_eq!(P4Options::from_flags(false, None, None).unwrap(), None);
        let on = P4Options::from_flags(true, None, None).unwrap().unwrap();
        assert_eq!((on.program, on.scope), (None, GuestScope::None));
        let o = P4Options::from_flags(false, None, Some("none"))
            .unwrap()
            .expect("--p4-guest-scope none turns it on");
        assert_eq!(o.scope, GuestScope::None);
        let o = P4Options::from_flags(false, None, Some("tables"))
            .unwrap()
            .unwrap();
        assert_eq!(o.scope, GuestScope::Tables);
        let e = P4Options::from_flags(false, None, Some("all")).unwrap_err();
        assert!(format!("{e:#}").contains("--p4-guest-scope"), "{e:#}");
    }

    #[test]
    fn the_program_is_read_at_start_and_a_bad_file_is_named() {
        let dir = std::env::temp_dir().join(format!("ernic-p4-opts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("prog.json");
        std::fs::write(&good, "{\"header_types\": []}").unwrap();
        let o = P4Options::from_flags(false, Some(&good), None)
            .unwrap()
            .unwrap();
        assert_eq!(
            o.program,
            Some((good.clone(), "{\"header_types\": []}".to_string()))
        );
        let missing = dir.join("nosuch.json");
        let e = format!(
            "{:#}",
            P4Options::from_flags(false, Some(&missing), None).unwrap_err()
        );
        assert!(e.contains(&missing.display().to_string()), "{e}");
        let binary = dir.join("bin.json");
        std::fs::write(&binary, [0xff, 0xfe, 0]).unwrap();
        let e = format!(
            "{:#}",
            P4Options::from_flags(true, Some(&binary), None).unwrap_err()
        );
        assert!(e.contains("bin.json") && e.contains("UTF-8"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Hooks that record what reached them.
    #[derive(Clone, Default)]
    struct Recorder(Arc<Mutex<Vec<String>>>);

    impl FrameFilter for Recorder {
        fn filter(&mut self, from: Side, _: &[u8], _: &mut dyn FnMut(Side, &[u8])) {
            self.0.lock().unwrap().push(format!("frame from {from:?}"));
        }
    }

    impl SendFilter for Recorder {
        fn on_send(&mut self, _: &SendWqe<'_>) -> SendVerdict {
            SendVerdict::Pass
        }
        fn transform(&mut self, _: u32, _: &[u8], _: &mut [u8]) -> Result<(), String> {
            Ok(())
        }
    }

    impl P4Control for Recorder {
        fn command(&mut self, op: u8, input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
            self.0
                .lock()
                .unwrap()
                .push(format!("command {op} {}", String::from_utf8_lossy(input)));
            out.extend_from_slice(b"ok");
            Ok(())
        }
    }

    /// Runs device command `c` through BAR 0: answers the completion.
    fn command(f: &mut IonicFunction, io: &mut Io, c: &[u8; 64]) -> [u8; 16] {
        f.write(io, region::BAR0, 0x808, c).unwrap();
        f.write(io, region::BAR0, 0x800, &[1, 0, 0, 0]).unwrap();
        let mut comp = [0u8; 16];
        f.read(io, region::BAR0, 0x848, &mut comp).unwrap();
        comp
    }

    #[test]
    fn installed_hooks_are_the_devices() {
        let rec = Recorder::default();
        let opts = P4Options {
            program: None,
            scope: GuestScope::Tables,
        };
        let hooks: Hooks = (
            Box::new(rec.clone()),
            Box::new(rec.clone()),
            Box::new(rec.clone()),
        );
        let mut f = install(IonicFunction::new(Default::default()), &opts, hooks);
        assert!(f.frame_filter_stats().is_some());
        assert!(f.rdma().send_filter_stats().is_some());
        const G: u64 = 0x10_0000;
        let mut dma = Dma::new(2);
        let ram = ernic_vfio::client::shared_memory(c"guest", 1 << 16).unwrap();
        let rw = ernic_vfio::proto::DMA_READ | ernic_vfio::proto::DMA_WRITE;
        dma.map(G, 1 << 16, 0, rw, Some(ram)).unwrap();
        let mut irqs = Irqs::new(&f.irqs());
        let mut io = Io {
            dma: &mut dma,
            irqs: &mut irqs,
        };
        // LIF_IDENTIFY advertises the engine (scope tables).
        let mut c = [0u8; 64];
        c[0] = 20;
        c[2] = 1;
        assert_eq!(command(&mut f, &mut io, &c)[0], 0);
        let mut caps = [0u8; 8];
        f.read(&mut io, region::BAR0, 0x888, &mut caps).unwrap();
        assert_eq!(
            u64::from_le_bytes(caps),
            3 | ernic_ionic::p4hook::LIF_CAP_P4
        );
        // Command 72 (status) with "v" as input reaches the control.
        io.dma.write(G, b"v").unwrap();
        let mut c = [0u8; 64];
        c[0] = 72;
        c[8..16].copy_from_slice(&G.to_le_bytes());
        c[16..20].copy_from_slice(&1u32.to_le_bytes());
        c[24..32].copy_from_slice(&(G + 0x100).to_le_bytes());
        c[32..36].copy_from_slice(&16u32.to_le_bytes());
        let comp = command(&mut f, &mut io, &c);
        assert_eq!((comp[0], comp[4]), (0, 2), "status, output length");
        let mut out = [0u8; 2];
        io.dma.read(G + 0x100, &mut out).unwrap();
        assert_eq!(&out, b"ok");
        // 70 is refused under tables, and never reaches it.
        c[0] = 70;
        assert_eq!(command(&mut f, &mut io, &c)[0], 4, "EPERM");
        assert_eq!(*rec.0.lock().unwrap(), vec!["command 72 v".to_string()]);
    }

    #[test]
    fn scope_none_makes_70_to_72_unknown_opcodes_with_the_real_engine() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/crates/ernic-p4/testdata/ernic_frames.json"
        ))
        .unwrap();
        let run = |scope: GuestScope| -> Vec<u8> {
            let opts = P4Options {
                program: Some(("ernic_frames.json".into(), text.clone())),
                scope,
            };
            let hooks = p4_hooks(&opts).expect("the engine builds");
            let mut f = install(IonicFunction::new(Default::default()), &opts, hooks);
            const G: u64 = 0x10_0000;
            let mut dma = Dma::new(2);
            let ram = ernic_vfio::client::shared_memory(c"guest", 1 << 16).unwrap();
            let rw = ernic_vfio::proto::DMA_READ | ernic_vfio::proto::DMA_WRITE;
            dma.map(G, 1 << 16, 0, rw, Some(ram)).unwrap();
            let mut irqs = Irqs::new(&f.irqs());
            let mut io = Io {
                dma: &mut dma,
                irqs: &mut irqs,
            };
            io.dma.write(G, b"table_num_entries arp_filter\n").unwrap();
            let mut statuses = Vec::new();
            for op in [70u8, 71, 72, 99] {
                let mut c = [0u8; 64];
                c[0] = op;
                c[8..16].copy_from_slice(&G.to_le_bytes());
                let len: u32 = if op == 71 { 29 } else { 0 };
                c[16..20].copy_from_slice(&len.to_le_bytes());
                c[24..32].copy_from_slice(&(G + 0x1000).to_le_bytes());
                c[32..36].copy_from_slice(&256u32.to_le_bytes());
                statuses.push(command(&mut f, &mut io, &c)[0]);
            }
            statuses
        };
        let none = run(GuestScope::None);
        assert!(
            none.iter().all(|&s| s == none[3] && s != 0),
            "70-72 answered like opcode 99: {none:?}"
        );
        let tables = run(GuestScope::Tables);
        assert_eq!(
            &tables[1..3],
            &[0, 0],
            "71 and 72 run under tables: {tables:?}"
        );
        assert_eq!(tables[0], 4, "70 is EPERM under tables");
    }
}
