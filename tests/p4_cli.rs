//! `ernic-server`'s P4 flags as a user meets them: `--help` says what
//! each does, and a bad one is refused at start with a line that names
//! what is wrong (the program file, the scope), before any socket is made.

use std::process::Command;

fn server(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ernic-server"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn help_names_the_three_p4_flags() {
    let out = server(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for says in [
        "--p4\n",
        "--p4-program <FILE>",
        "--p4-guest-scope <SCOPE>",
        "[possible values: none, tables, program]",
        "70-72",
    ] {
        assert!(help.contains(says), "--help lacks {says:?}:\n{help}");
    }
}

#[test]
fn a_bad_p4_flag_is_one_clear_line_and_no_socket() {
    let dir = std::env::temp_dir().join(format!("ernic-p4-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sock = dir.join("ernic.sock");
    let missing = dir.join("no-such-program.json");
    for (args, says) in [
        (
            vec!["--p4-program", missing.to_str().unwrap()],
            format!("--p4-program {}", missing.display()),
        ),
        (
            vec!["--p4-guest-scope", "everything"],
            "invalid value 'everything' for '--p4-guest-scope <SCOPE>'".to_string(),
        ),
    ] {
        let mut all = vec!["--socket", sock.to_str().unwrap()];
        all.extend(args);
        let out = server(&all);
        assert_eq!(
            out.status.code(),
            Some(if says.starts_with("invalid") { 2 } else { 1 })
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&says), "{all:?}: {err}");
        assert!(!sock.exists(), "{all:?} made the socket");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
