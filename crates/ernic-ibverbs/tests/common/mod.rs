//! What the two layout tests share: a row (a C expression and our value)
//! and the probe that prints every row's expression from a C program built
//! against a header tree, and checks each against ours.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// One check: the C expression, our value, and the header text it needs
/// (rows for what later rdma-core added are probed only where declared).
pub struct Row {
    pub c: String,
    pub ours: u64,
    pub needs: Option<&'static str>,
}

/// Whether `text` has `needle` not as part of a longer identifier.
pub fn declares(text: &str, needle: &str) -> bool {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices(needle).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + needle.len()..].chars().next();
        let joins_before = needle.starts_with(ident) && before.is_some_and(ident);
        let joins_after = needle.ends_with(ident) && after.is_some_and(ident);
        !joins_before && !joins_after
    })
}

/// Builds a C probe including `includes` and printing every row's
/// expression against the headers under `root` (its infiniband/ and
/// rdma/, the rest from the system), runs it, and checks each equals our
/// value. `headers` (paths under `root`) are the files whose text decides
/// which rows for later rdma-core are probed.
pub fn probe(name: &str, root: &Path, headers: &[&str], includes: &[&str], rows: Vec<Row>) {
    let text = headers
        .iter()
        .filter_map(|f| std::fs::read_to_string(root.join(f)).ok())
        .collect::<Vec<_>>()
        .join("\n");
    let (rows, skipped): (Vec<Row>, Vec<Row>) = rows
        .into_iter()
        .partition(|r| r.needs.is_none_or(|n| declares(&text, n)));
    let work = std::env::temp_dir().join(format!(
        "ernic-ibverbs-{name}-{}-{}",
        includes.len(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    for dir in ["infiniband", "rdma"] {
        if root.join(dir).is_dir() {
            std::os::unix::fs::symlink(root.join(dir), work.join(dir)).unwrap();
        }
    }
    let mut c = String::from("#include <stdio.h>\n#include <stddef.h>\n");
    for h in includes {
        c.push_str(&format!("#include <{h}>\n"));
    }
    c.push_str("int main(void) {\n");
    for row in &rows {
        c.push_str(&format!(
            "  printf(\"%llu\\n\", (unsigned long long)({}));\n",
            row.c
        ));
    }
    c.push_str("  return 0;\n}\n");
    std::fs::write(work.join("probe.c"), c).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let built = Command::new(&cc)
        .arg("-I")
        .arg(&work)
        .arg(work.join("probe.c"))
        .arg("-o")
        .arg(work.join("probe"))
        .output()
        .expect("a C compiler");
    assert!(
        built.status.success(),
        "the probe did not build against {}:\n{}",
        root.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let out = Command::new(work.join("probe")).output().unwrap();
    assert!(out.status.success(), "the probe failed");
    let got: Vec<u64> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    let _ = std::fs::remove_dir_all(&work);
    assert_eq!(got.len(), rows.len());
    let wrong: Vec<String> = rows
        .iter()
        .zip(&got)
        .filter(|(row, theirs)| row.ours != **theirs)
        .map(|(row, theirs)| format!("{}: ours {}, C {theirs}", row.c, row.ours))
        .collect();
    assert!(
        wrong.is_empty(),
        "{} of {} rows differ from {}:\n{}",
        wrong.len(),
        rows.len(),
        root.display(),
        wrong.join("\n")
    );
    println!(
        "{name}: {} rows equal {}'s ({} rows for later rdma-core not probed: not in this header)",
        rows.len(),
        root.display(),
        skipped.len()
    );
}
