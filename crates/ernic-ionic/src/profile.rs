//! NIC profiles: what the device says of itself (vector count, link speed,
//! queue counts, limits, strings). `--nic-profile a,b.ini` starts from the
//! default (`compat`) and layers each named built-in profile or ini file
//! over it, in order.
//!
//! An ini file holds `key = value` lines; `#` and `;` start comments and
//! `[section]` lines are allowed and ignored. A key the device does not
//! know is refused with its name, as is a value out of range. A profile
//! file is a regular file of at most [`MAX_PROFILE_BYTES`] (64 KiB) of
//! UTF-8: anything else (`/dev/zero`, a FIFO, a directory, a huge file) is
//! refused with its name before more than that is read.
//!
//! The RDMA limits (`rdma_*`) and what they let a guest make the server
//! hold are written down once, in [`crate::limits`].

use std::fmt;
use std::io::Read;
use std::path::Path;

use crate::bar0::Identity;

/// A profile that could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileError(pub String);

impl fmt::Display for ProfileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProfileError {}

/// The built-in profiles, by name, as ini text layered over `compat`.
pub const BUILT_IN: &[(&str, &str)] = &[
    // The seed's values: 32 vectors, a 100 Gb/s copper QSFP link.
    ("compat", ""),
    // A small device: few vectors and queues, a 25 Gb/s link, for guests
    // with little memory and for tests that want limits reached early.
    (
        "small",
        "vectors = 8\nspeed = 25000\neth_queues = 2\nrdma_qps = 64\nrdma_cqs = 64\n\
         rdma_eqs = 4\nrdma_mrs = 256\nrdma_ahs = 64\nrdma_ptes = 65536\nrdma_queue_mib = 32\n",
    ),
    // The top 64 doorbell pages shared with the client, so a driver that
    // rings them (ernic's own userspace driver) needs no socket message
    // per doorbell. The LIF then reports 960 pages; a guest's Linux driver
    // rings only those, through the trapped path.
    ("shared-doorbells", "shared_doorbell_pages = 64\n"),
];

/// The largest profile file read: a profile is a few dozen lines.
pub const MAX_PROFILE_BYTES: u64 = 64 << 10;

/// The text of the profile file at `path` (named `part` in errors): a
/// regular file of at most [`MAX_PROFILE_BYTES`] of UTF-8. Opened without
/// blocking (a FIFO's open would wait for a writer) and checked after the
/// open, so what is read is what was checked.
fn read_file(path: &Path, part: &str) -> Result<String, ProfileError> {
    use std::os::unix::fs::OpenOptionsExt;
    let err = |e: std::io::Error| ProfileError(format!("{part}: {e}"));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(err)?;
    let meta = f.metadata().map_err(err)?;
    if !meta.is_file() {
        return Err(ProfileError(format!(
            "{part}: not a regular file; a profile is an .ini file of key = value lines"
        )));
    }
    let too_big = || {
        ProfileError(format!(
            "{part}: larger than {} KiB; a profile is a few key = value lines",
            MAX_PROFILE_BYTES >> 10
        ))
    };
    if meta.len() > MAX_PROFILE_BYTES {
        return Err(too_big());
    }
    // The file may grow after the check: never more than the limit is read.
    let mut bytes = Vec::new();
    f.take(MAX_PROFILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(err)?;
    if bytes.len() as u64 > MAX_PROFILE_BYTES {
        return Err(too_big());
    }
    String::from_utf8(bytes).map_err(|_| ProfileError(format!("{part}: not UTF-8 text")))
}

/// Link speeds a port reports (Mb/s, ionic_if.h's IONIC_SPEED_*).
const SPEEDS: [u32; 6] = [1_000, 10_000, 25_000, 40_000, 50_000, 100_000];

fn number(key: &str, v: &str, min: u64, max: u64) -> Result<u64, ProfileError> {
    let n = if let Some(h) = v.strip_prefix("0x") {
        u64::from_str_radix(h, 16)
    } else {
        v.parse::<u64>()
    }
    .map_err(|_| ProfileError(format!("{key} = {v}: not a number")))?;
    if !(min..=max).contains(&n) {
        return Err(ProfileError(format!(
            "{key} = {v}: must be between {min} and {max}"
        )));
    }
    Ok(n)
}

fn mac(key: &str, v: &str) -> Result<[u8; 6], ProfileError> {
    let bad = || {
        ProfileError(format!(
            "{key} = {v}: write six hex bytes, 02:00:00:00:00:01"
        ))
    };
    let parts: Vec<&str> = v.split(':').collect();
    if parts.len() != 6 {
        return Err(bad());
    }
    let mut m = [0u8; 6];
    for (o, p) in m.iter_mut().zip(parts) {
        *o = u8::from_str_radix(p, 16).map_err(|_| bad())?;
    }
    if m[0] & 1 != 0 {
        return Err(ProfileError(format!("{key} = {v}: a multicast address")));
    }
    Ok(m)
}

/// Applies ini `text` (named `origin` in errors) over `id`.
pub fn apply(id: &mut Identity, text: &str, origin: &str) -> Result<(), ProfileError> {
    for (n, raw) in text.lines().enumerate() {
        let line = raw.split(['#', ';']).next().unwrap_or("").trim();
        if line.is_empty() || (line.starts_with('[') && line.ends_with(']')) {
            continue;
        }
        let at = |e: ProfileError| ProfileError(format!("{origin}:{}: {e}", n + 1));
        let (key, value) = line
            .split_once('=')
            .map(|(k, v)| (k.trim(), v.trim()))
            .ok_or_else(|| at(ProfileError(format!("{line:?} is not key = value"))))?;
        let u32v = |min: u64, max: u64| number(key, value, min, max).map(|n| n as u32);
        match key {
            "vectors" => id.vectors = u32v(1, 128).map_err(at)? as u16,
            "speed" => {
                let s = u32v(1, u32::MAX.into()).map_err(at)?;
                if !SPEEDS.contains(&s) {
                    return Err(at(ProfileError(format!(
                        "speed = {value}: one of {SPEEDS:?} (Mb/s)"
                    ))));
                }
                id.speed = s;
            }
            "fw_version" | "serial" => {
                if value.len() > 31 || !value.is_ascii() {
                    return Err(at(ProfileError(format!(
                        "{key}: at most 31 ASCII characters"
                    ))));
                }
                if key == "fw_version" {
                    id.fw_version = value.into();
                } else {
                    id.serial = value.into();
                }
            }
            "mac" => id.mac = mac(key, value).map_err(at)?,
            "max_frame" => id.max_frame = u32v(1518, 9216 + 18).map_err(at)?,
            "eth_queues" => id.eth_queues = u32v(1, 64).map_err(at)?,
            "doorbell_pages" => id.doorbell_pages = u32v(1, 1024).map_err(at)?,
            "shared_doorbell_pages" => id.shared_doorbell_pages = u32v(0, 512).map_err(at)?,
            "rdma_aqs" => id.rdma_aqs = u32v(1, 64).map_err(at)?,
            "rdma_qps" => id.rdma_qps = u32v(2, 1 << 20).map_err(at)?,
            "rdma_cqs" => id.rdma_cqs = u32v(1, 1 << 20).map_err(at)?,
            "rdma_eqs" => id.rdma_eqs = u32v(1, 128).map_err(at)?,
            "rdma_mrs" => id.rdma_mrs = u32v(1, 1 << 24).map_err(at)?,
            "rdma_ahs" => id.rdma_ahs = u32v(1, 1 << 24).map_err(at)?,
            "rdma_ptes" => id.rdma_ptes = u32v(2, 1 << 28).map_err(at)?,
            "rdma_queue_mib" => id.rdma_queue_mib = u32v(1, 16 << 10).map_err(at)?,
            "rnr_timeout_ms" => id.rnr_timeout_ms = u32v(1, 600_000).map_err(at)?,
            "request_timeout_ms" => id.request_timeout_ms = u32v(1, 600_000).map_err(at)?,
            other => {
                return Err(at(ProfileError(format!(
                    "unknown key {other:?}: the keys are vectors, speed, fw_version, serial, \
                     mac, max_frame, eth_queues, doorbell_pages, shared_doorbell_pages, rdma_aqs, \
                     rdma_qps, rdma_cqs, rdma_eqs, rdma_mrs, rdma_ahs, rdma_ptes, rdma_queue_mib, \
                     rnr_timeout_ms, request_timeout_ms"
                ))));
            }
        }
    }
    Ok(())
}

/// The identity `--nic-profile spec` describes: `compat` with each
/// comma-separated built-in name or ini file layered over it.
pub fn load(spec: &str) -> Result<Identity, ProfileError> {
    let mut id = Identity::default();
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        if let Some((_, text)) = BUILT_IN.iter().find(|(n, _)| *n == part) {
            apply(&mut id, text, part)?;
            continue;
        }
        let path = Path::new(part);
        if path.extension().is_some_and(|e| e == "ini") || path.exists() {
            let text = read_file(path, part)?;
            apply(&mut id, &text, part)?;
            continue;
        }
        let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
        return Err(ProfileError(format!(
            "no profile {part:?}: built-in ones are {}, or give an .ini file",
            names.join(", ")
        )));
    }
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compat_is_the_seed_and_small_layers_over_it() {
        let c = load("compat").unwrap();
        assert_eq!((c.vectors, c.speed, c.rdma_eqs), (32, 100_000, 32));
        let s = load("small").unwrap();
        assert_eq!((s.vectors, s.speed, s.eth_queues), (8, 25_000, 2));
        assert_eq!(
            s.max_frame, c.max_frame,
            "what small leaves alone stays compat's"
        );
        assert_eq!(load("").unwrap(), c);
    }

    #[test]
    fn ini_files_layer_in_order_and_bad_keys_are_named() {
        let dir = std::env::temp_dir().join(format!("ernic-profile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = dir.join("a.ini");
        std::fs::write(
            &a,
            "[device]\nvectors = 16 # fewer\nmac = 02:11:22:33:44:55\n; note\nspeed=50000\n",
        )
        .unwrap();
        let id = load(&format!("small,{}", a.display())).unwrap();
        assert_eq!((id.vectors, id.speed, id.eth_queues), (16, 50_000, 2));
        assert_eq!(id.mac, [0x02, 0x11, 0x22, 0x33, 0x44, 0x55]);
        let bad = dir.join("bad.ini");
        std::fs::write(&bad, "vectors = 8\nlinkspeed = 10\n").unwrap();
        let e = load(&bad.display().to_string()).unwrap_err().0;
        assert!(
            e.contains("bad.ini:2") && e.contains("\"linkspeed\""),
            "{e}"
        );
        for (text, says) in [
            ("vectors = 129", "between 1 and 128"),
            ("speed = 30000", "one of"),
            ("mac = 01:00:00:00:00:01", "multicast"),
            ("vectors", "not key = value"),
            ("serial = a-very-long-serial-number-0000000000", "31 ASCII"),
        ] {
            let mut id = Identity::default();
            let e = apply(&mut id, text, "t").unwrap_err().0;
            assert!(e.contains(says), "{text}: {e}");
        }
        assert!(load("nosuch").unwrap_err().0.contains("compat, small"));
        assert!(load("/no/such/file.ini").is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_small_regular_files_are_read() {
        // Before, /dev/zero was read until memory ran out.
        let e = load("/dev/zero").unwrap_err().0;
        assert!(e.contains("/dev/zero: not a regular file"), "{e}");
        let e = load("compat,/tmp").unwrap_err().0;
        assert!(e.contains("/tmp: not a regular file"), "{e}");
        let dir = std::env::temp_dir().join(format!("ernic-profile-big-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.ini");
        let line = "vectors = 8\n";
        std::fs::write(
            &big,
            line.repeat(MAX_PROFILE_BYTES as usize / line.len() + 1),
        )
        .unwrap();
        let e = load(&big.display().to_string()).unwrap_err().0;
        assert!(e.contains("larger than 64 KiB"), "{e}");
        let fits = dir.join("fits.ini");
        std::fs::write(&fits, line.repeat(MAX_PROFILE_BYTES as usize / line.len())).unwrap();
        assert_eq!(load(&fits.display().to_string()).unwrap().vectors, 8);
        let bad = dir.join("bad.ini");
        std::fs::write(&bad, [b'v', 0xff, b'\n']).unwrap();
        assert!(
            load(&bad.display().to_string())
                .unwrap_err()
                .0
                .contains("not UTF-8")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
