//! Links the cdylib as rdma-core's libibverbs.so.1: its SONAME, and its
//! symbol versions (`libibverbs.map`, and `librdmacm.map`: the same file
//! serves as librdmacm.so.1).
//!
//! rustc gives the linker a version script of its own, listing every
//! `#[no_mangle]` function, and the linker versions a symbol by the first
//! script that names it; so the functions are defined as `ernic_NAME` and
//! each public `NAME` is made an alias of its function (`--defsym`), which
//! only our script names. A name in the map with no `ernic_NAME` behind it
//! fails the link: the map is the list of what must be implemented.

use std::path::Path;

fn main() {
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it");
    let mut text = String::new();
    for name in ["libibverbs.map", "librdmacm.map"] {
        let map = Path::new(&dir).join(name);
        println!("cargo:rerun-if-changed={}", map.display());
        text.push_str(&std::fs::read_to_string(&map).expect("the version scripts"));
        text.push('\n');
    }
    // One script: the linker takes the first of several.
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets it")).join("ernic.map");
    std::fs::write(&out, &text).expect("writing the joined version script");
    let map = out;
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libibverbs.so.1");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        map.display()
    );
    for name in exported(&text) {
        println!("cargo:rustc-cdylib-link-arg=-Wl,--defsym={name}=ernic_{name}");
    }
}

/// The names in the `global:` parts of a version script.
fn exported(text: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut global = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with("global:") {
            global = true;
        } else if line.starts_with("local:") || line.starts_with('}') {
            global = false;
        } else if global && let Some(name) = line.strip_suffix(';') {
            names.push(name.trim());
        }
    }
    names
}
