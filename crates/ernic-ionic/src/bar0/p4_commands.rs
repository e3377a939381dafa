//! Device commands 70-72: the guest's way to the match-action engine
//! ([`crate::p4hook::P4Control`]), as far as the server's
//! [`GuestScope`] allows. Layout and limits are [`crate::p4hook::cmd`]'s.
//!
//! With no engine, or scope [`GuestScope::None`], the three opcodes are
//! answered exactly as any unknown opcode (`EOPCODE`): a guest cannot tell
//! an engine is there. Input and output move through the bounds-checked
//! DMA helpers only, into and out of buffers this module keeps and
//! reuses; nothing here holds a reference into guest memory.

use ernic_vfio::dma::Dma;

use crate::bytes::{le32, le64};
use crate::p4hook::{GuestScope, P4Control, cmd as p4};
use crate::regs::status;

use super::Bar0;

/// The engine's control hook and what the guest may do with it.
#[derive(Default)]
pub(crate) struct P4Commands {
    scope: GuestScope,
    control: Option<Box<dyn P4Control>>,
    /// The command's input, copied out of guest memory.
    input: Vec<u8>,
    /// The engine's answer, before it is copied into guest memory.
    output: Vec<u8>,
}

impl std::fmt::Debug for P4Commands {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("P4Commands")
            .field("scope", &self.scope)
            .field("control", &self.control.is_some())
            .finish()
    }
}

impl P4Commands {
    /// Whether LIF_IDENTIFY advertises the engine.
    pub(crate) fn advertised(&self) -> bool {
        self.control.is_some() && self.scope != GuestScope::None
    }
}

impl Bar0 {
    /// Gives the guest `scope` over `control` through commands 70-72.
    pub fn set_p4_control(&mut self, control: Box<dyn P4Control>, scope: GuestScope) {
        self.p4.control = Some(control);
        self.p4.scope = scope;
    }

    /// Runs command 70, 71 or 72 (`c`), answering its status and setting
    /// the completion's `output_len`.
    pub(super) fn p4_command(&mut self, c: &[u8; 64], comp: &mut [u8; 16], dma: &mut Dma) -> u8 {
        let op = c[0];
        let allowed = match self.p4.scope {
            GuestScope::None => return status::EOPCODE,
            GuestScope::Tables => op != p4::LOAD,
            GuestScope::Program => true,
        };
        let P4Commands {
            control: Some(control),
            input,
            output,
            ..
        } = &mut self.p4
        else {
            return status::EOPCODE;
        };
        if !allowed {
            return status::EPERM;
        }
        let (in_pa, in_len) = (le64(c, p4::INPUT_PA), le32(c, p4::INPUT_LEN));
        let (out_pa, out_cap) = (le64(c, p4::OUTPUT_PA), le32(c, p4::OUTPUT_CAP));
        if in_len > p4::MAX_INPUT {
            return status::EINVAL;
        }
        let out_cap = out_cap.min(p4::MAX_OUTPUT) as usize;
        input.clear();
        input.resize(in_len as usize, 0);
        if dma.read(in_pa, input).is_err() {
            return status::EFAULT;
        }
        output.clear();
        let st = match control.command(op, input, output) {
            Ok(()) => status::SUCCESS,
            Err(why) => {
                output.clear();
                output.extend_from_slice(&why.as_bytes()[..why.len().min(out_cap)]);
                status::ERROR
            }
        };
        let Ok(n) = u32::try_from(output.len()) else {
            return status::ENOSPC;
        };
        comp[p4::COMP_OUTPUT_LEN..p4::COMP_OUTPUT_LEN + 4].copy_from_slice(&n.to_le_bytes());
        if output.len() > out_cap {
            return status::ENOSPC;
        }
        if !output.is_empty() && dma.write(out_pa, output).is_err() {
            return status::EFAULT;
        }
        st
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bar0::Identity;
    use crate::p4hook::LIF_CAP_P4;
    use crate::regs::opcode;
    use ernic_vfio::proto::{DMA_READ, DMA_WRITE};

    const G: u64 = 0x20_0000;

    /// An engine that echoes its input, prefixed by the opcode, and
    /// fails on "fail".
    struct Echo(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl P4Control for Echo {
        fn command(&mut self, op: u8, input: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
            self.0.lock().unwrap().push(op);
            if input == b"fail" {
                return Err("table t_fwd: no such table".into());
            }
            out.extend_from_slice(format!("{op}:").as_bytes());
            out.extend_from_slice(input);
            Ok(())
        }
    }

    fn guest() -> Dma {
        let mut dma = Dma::new(2);
        let ram = ernic_vfio::client::shared_memory(c"guest", 1 << 16).unwrap();
        dma.map(G, 1 << 16, 0, DMA_READ | DMA_WRITE, Some(ram))
            .unwrap();
        dma
    }

    /// Runs P4 command `op` with `input` at G and a `cap`-byte output
    /// buffer at G+0x8000: (status, output_len, the output bytes).
    fn run(b: &mut Bar0, dma: &mut Dma, op: u8, input: &[u8], cap: u32) -> (u8, u32, Vec<u8>) {
        dma.write(G, input).unwrap();
        dma.write(G + 0x8000, &[0u8; 64]).unwrap();
        let mut c = [0u8; 64];
        c[0] = op;
        c[8..16].copy_from_slice(&G.to_le_bytes());
        c[16..20].copy_from_slice(&(input.len() as u32).to_le_bytes());
        c[24..32].copy_from_slice(&(G + 0x8000).to_le_bytes());
        c[32..36].copy_from_slice(&cap.to_le_bytes());
        b.write(0x808, &c, dma);
        b.write(0x800, &[1, 0, 0, 0], dma);
        let mut comp = [0u8; 16];
        b.read(0x848, &mut comp);
        let n = u32::from_le_bytes(comp[4..8].try_into().unwrap());
        let mut out = vec![0u8; 64];
        dma.read(G + 0x8000, &mut out).unwrap();
        out.truncate(n.min(64) as usize);
        (comp[0], n, out)
    }

    fn lif_caps(b: &mut Bar0, dma: &mut Dma) -> u64 {
        b.write(0x808, &[opcode::LIF_IDENTIFY, 0, 1], dma);
        b.write(0x800, &[1, 0, 0, 0], dma);
        let mut caps = [0u8; 8];
        b.read(0x888, &mut caps);
        u64::from_le_bytes(caps)
    }

    #[test]
    fn scope_none_answers_70_to_72_as_unknown_and_hides_the_engine() {
        let mut dma = guest();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        for installed in [false, true] {
            let mut b = Bar0::new(Identity::default());
            if installed {
                b.set_p4_control(Box::new(Echo(seen.clone())), GuestScope::None);
            }
            let unknown = run(&mut b, &mut dma, 199, b"x", 64).0;
            assert_eq!(unknown, status::EOPCODE);
            for op in 70..=72 {
                assert_eq!(
                    run(&mut b, &mut dma, op, b"x", 64).0,
                    unknown,
                    "opcode {op}"
                );
            }
            assert_eq!(lif_caps(&mut b, &mut dma), 3, "Ethernet and RDMA only");
        }
        assert!(seen.lock().unwrap().is_empty(), "the engine was reached");
    }

    #[test]
    fn scope_tables_refuses_a_program_and_runs_the_rest() {
        let mut dma = guest();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut b = Bar0::new(Identity::default());
        b.set_p4_control(Box::new(Echo(seen.clone())), GuestScope::Tables);
        assert_eq!(lif_caps(&mut b, &mut dma), 3 | LIF_CAP_P4);
        let (st, n, _) = run(&mut b, &mut dma, p4::LOAD, b"{}", 64);
        assert_eq!((st, n), (status::EPERM, 0));
        let (st, n, out) = run(&mut b, &mut dma, p4::RUNTIME, b"table_dump t", 64);
        assert_eq!((st, n, &out[..]), (0, 15, &b"71:table_dump t"[..]));
        assert_eq!(run(&mut b, &mut dma, p4::STATUS, b"", 64).2, b"72:");
        assert_eq!(*seen.lock().unwrap(), vec![71, 72], "70 never reached it");
        // An engine error: its message, status ERROR; cut to the buffer.
        let (st, n, out) = run(&mut b, &mut dma, p4::RUNTIME, b"fail", 8);
        assert_eq!((st, n, &out[..]), (status::ERROR, 8, &b"table t_"[..]));
        // Too small a buffer: ENOSPC with the length needed, nothing written.
        let (st, n, out) = run(&mut b, &mut dma, p4::RUNTIME, b"abcdef", 4);
        assert_eq!((st, n, &out[..4]), (status::ENOSPC, 9, &[0u8; 4][..]));
    }

    #[test]
    fn scope_program_loads_and_lengths_are_bounded() {
        let mut dma = guest();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut b = Bar0::new(Identity::default());
        b.set_p4_control(Box::new(Echo(seen.clone())), GuestScope::Program);
        assert_eq!(lif_caps(&mut b, &mut dma) & LIF_CAP_P4, LIF_CAP_P4);
        let (st, _, out) = run(&mut b, &mut dma, p4::LOAD, b"{\"program\":1}", 64);
        assert_eq!((st, &out[..]), (0, &b"70:{\"program\":1}"[..]));
        // More than 1 MiB of input: refused unread.
        let mut c = [0u8; 64];
        c[0] = p4::LOAD;
        c[8..16].copy_from_slice(&G.to_le_bytes());
        c[16..20].copy_from_slice(&(p4::MAX_INPUT + 1).to_le_bytes());
        b.write(0x808, &c, &mut dma);
        b.write(0x800, &[1, 0, 0, 0], &mut dma);
        let mut comp = [0u8; 16];
        b.read(0x848, &mut comp);
        assert_eq!(comp[0], status::EINVAL);
        // Input outside guest memory: EFAULT.
        c[8..16].copy_from_slice(&0x9000_0000u64.to_le_bytes());
        c[16..20].copy_from_slice(&4u32.to_le_bytes());
        b.write(0x808, &c, &mut dma);
        b.write(0x800, &[1, 0, 0, 0], &mut dma);
        b.read(0x848, &mut comp);
        assert_eq!(comp[0], status::EFAULT);
        assert_eq!(
            *seen.lock().unwrap(),
            vec![70],
            "refused ones never reached it"
        );
    }
}
