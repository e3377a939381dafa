//! The libfabric provider: rails on a real libfabric provider (`tcp;ofi_rxm`,
//! `shm`, `efa`, ...), reached through `libfabric.so.1` loaded at run time.
//!
//! Nothing is linked at build time: the few exported functions
//! (`fi_getinfo`, `fi_freeinfo`, `fi_dupinfo`, `fi_fabric`, `fi_strerror`,
//! `fi_version`) are looked up with `dlsym`, and everything else goes
//! through the op vectors in the objects libfabric hands back, exactly as
//! the headers' inline wrappers (`fi_domain`, `fi_endpoint`, `fi_writedata`,
//! `fi_cq_read`, ...) do. The mirrors of those structs are in [`abi`].
//!
//! One rail is a fabric, a domain, an RDM endpoint, an address vector and
//! a completion queue, opened from the `fi_info` chosen once per provider:
//! RDM, `FI_MSG | FI_RMA`, at least 4 bytes of remote CQ data, keys of at
//! most 8 bytes. `mr_mode` decides the rest: with `FI_MR_VIRT_ADDR` peers
//! write at virtual addresses, without it at offsets into the target
//! region (the tcp providers); with `FI_MR_PROV_KEY` the provider picks the
//! keys, otherwise each rail hands out its own.
//!
//! By file: `library.rs` loads libfabric and holds its exported entry
//! points; `provider.rs` chooses the `fi_info` ([`LibfabricProvider`]);
//! `rail.rs` opens one rail's objects and implements the provider contract
//! on them ([`LibfabricRail`]); [`abi`] mirrors the C structs.

pub mod abi;
mod library;
mod provider;
mod rail;

pub use library::version;
pub use provider::LibfabricProvider;
pub use rail::LibfabricRail;

/// The library file loaded at run time.
pub const LIBRARY: &str = "libfabric.so.1";

/// The oldest libfabric the `efa` provider is accepted from.
pub const EFA_MIN_VERSION: (u32, u32) = (1, 22);

#[cfg(test)]
mod tests {
    use super::*;

    /// Compares every size and offset in `abi` with the installed headers,
    /// by compiling a C program that prints them. Skips (with one line)
    /// where the headers or a C compiler are missing; CI installs both.
    #[test]
    fn layouts_match_the_installed_headers() {
        let header = std::path::Path::new("/usr/include/rdma/fabric.h");
        if !header.exists() {
            assert_ne!(
                std::env::var("ERNIC_REQUIRE_LIBFABRIC").as_deref(),
                Ok("1"),
                "ERNIC_REQUIRE_LIBFABRIC=1 but libfabric's headers are missing"
            );
            println!(
                "skipped: libfabric's headers are not installed (apt-get install libfabric-dev)"
            );
            return;
        }
        let rows = abi::layout();
        let mut c = String::from(
            "#include <stdio.h>\n#include <stddef.h>\n#include <rdma/fabric.h>\n\
             #include <rdma/fi_domain.h>\n#include <rdma/fi_endpoint.h>\n\
             #include <rdma/fi_cm.h>\n#include <rdma/fi_rma.h>\n#include <rdma/fi_eq.h>\n\
             int main(void) {\n",
        );
        for (expr, _) in &rows {
            c.push_str(&format!("  printf(\"%zu\\n\", (size_t){expr});\n"));
        }
        c.push_str("  return 0;\n}\n");
        let dir = std::env::temp_dir().join(format!("ernic-fi-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let (src, exe) = (dir.join("layout.c"), dir.join("layout"));
        std::fs::write(&src, c).unwrap();
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let built = match std::process::Command::new(&cc)
            .arg(&src)
            .arg("-o")
            .arg(&exe)
            .status()
        {
            Ok(s) => s,
            Err(e) => {
                println!("skipped: no C compiler ({cc}: {e})");
                return;
            }
        };
        assert!(built.success(), "the layout probe did not compile");
        let out = std::process::Command::new(&exe).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let got: Vec<usize> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| l.parse().unwrap())
            .collect();
        assert_eq!(got.len(), rows.len());
        let wrong: Vec<String> = rows
            .iter()
            .zip(&got)
            .filter(|((_, ours), theirs)| ours != *theirs)
            .map(|((e, ours), theirs)| format!("{e}: ours {ours}, headers {theirs}"))
            .collect();
        assert!(wrong.is_empty(), "layouts differ:\n{}", wrong.join("\n"));
    }
}
