//! Shell completions and man pages, generated from the command line's definitions.

use assert_cmd::Command;
use predicates::str::contains;

fn netceil() -> Command {
    Command::cargo_bin("netceil").unwrap()
}

fn stdout(args: &[&str]) -> String {
    let out = netceil().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn completions_cover_the_commands_and_their_flags() {
    let bash = stdout(&["completions", "bash"]);
    for word in [
        "serve",
        "watch",
        "--duration",
        "--key-file",
        "--metrics-listen",
    ] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    // The script is valid bash.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("netceil.bash");
    std::fs::write(&f, &bash).unwrap();
    let ok = std::process::Command::new("bash")
        .arg("-n")
        .arg(&f)
        .status();
    if let Ok(status) = ok {
        assert!(status.success(), "bash -n failed");
    }
    // Fixed values are offered: the lab's topologies, the pacing modes (`sleep`, which no
    // flag is named).
    for word in ["bridge-nf", "conntrack", "macvlan", "sleep"] {
        assert!(bash.contains(word), "bash completion does not offer {word}");
    }
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let text = stdout(&["completions", shell]);
        assert!(text.contains("run") && text.contains("serve"), "{shell}");
    }
    netceil()
        .args(["completions", "tcsh"])
        .assert()
        .code(2)
        .stderr(contains("tcsh"));
}

#[test]
fn man_pages_render_and_name_their_flags() {
    let top = stdout(&["man"]);
    assert!(
        top.contains(".TH netceil 1"),
        "{}",
        &top[..top.len().min(200)]
    );
    let dir = tempfile::tempdir().unwrap();
    netceil()
        .args(["man", "--out"])
        .arg(dir.path())
        .assert()
        .success();
    for page in [
        "netceil.1",
        "netceil-run.1",
        "netceil-run-udp.1",
        "netceil-serve.1",
        "netceil-lab-up.1",
    ] {
        assert!(dir.path().join(page).exists(), "{page} missing");
    }
    let serve = std::fs::read_to_string(dir.path().join("netceil-serve.1")).unwrap();
    assert!(
        serve.contains("key\\-file"),
        "the serve page lists --key-file"
    );
    // Rendered by man(1) when it is installed.
    match std::process::Command::new("man")
        .arg("-l")
        .arg(dir.path().join("netceil-serve.1"))
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        .output()
    {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("--step-timeout"), "{text}");
        }
        _ => eprintln!("man(1) is not installed: the rendering check is skipped"),
    }
    // A directory that cannot be made there is bad input, an error naming it, not a panic.
    netceil()
        .args(["man", "--out", "/proc/netceil-man"])
        .assert()
        .code(2)
        .stderr(contains("/proc/netceil-man"));
}
