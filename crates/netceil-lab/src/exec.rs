//! Running `ip`, `nft` and friends, with their output kept for the error.

use std::process::{Command, Stdio};

use crate::{LabError, Result};

/// The Debian package that provides a program, for the error that says how to get it.
fn package_of(program: &str) -> &'static str {
    match program {
        "nft" => "nftables",
        "ethtool" => "ethtool",
        _ => "iproute2",
    }
}

/// Runs `program args…`, feeding `stdin` if given; its stdout on success.
pub fn run_with_input(program: &str, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let words = || format!("{program} {}", args.join(" "));
    let mut cmd = Command::new(program);
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| LabError::Missing {
        program: program.into(),
        package: package_of(program).into(),
        error: e.to_string(),
    })?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        use std::io::Write;
        pipe.write_all(text.as_bytes())
            .map_err(|e| LabError::Command {
                command: words(),
                output: format!("writing its input: {e}"),
            })?;
    }
    let out = child.wait_with_output().map_err(|e| LabError::Command {
        command: words(),
        output: e.to_string(),
    })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let mut output = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if output.is_empty() {
            output = format!("exit status {}", out.status);
        }
        Err(LabError::Command {
            command: words(),
            output,
        })
    }
}

/// Runs `program args…`; its stdout on success.
pub fn run(program: &str, args: &[&str]) -> Result<String> {
    run_with_input(program, args, None)
}

/// `ip netns exec NS program args…`: runs in the namespace, with its own /sys mounted.
pub fn in_ns(ns: &str, program: &str, args: &[&str]) -> Result<String> {
    let mut all = vec!["netns", "exec", ns, program];
    all.extend_from_slice(args);
    run("ip", &all)
}

/// The namespaces that exist (`ip netns list`), names only.
pub fn namespaces() -> Result<Vec<String>> {
    Ok(run("ip", &["netns", "list"])?
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect())
}

/// Reads a file as seen from inside a namespace (`None`: the host's view).
pub fn read_file(ns: Option<&str>, path: &str) -> Result<String> {
    match ns {
        None => std::fs::read_to_string(path).map_err(|e| LabError::Command {
            command: format!("reading {path}"),
            output: e.to_string(),
        }),
        Some(ns) => in_ns(ns, "cat", &[path]),
    }
    .map(|s| s.trim_end().to_string())
}

/// Writes a value to a file as seen from inside a namespace (`None`: the host's view).
pub fn write_file(ns: Option<&str>, path: &str, value: &str) -> Result<()> {
    match ns {
        None => std::fs::write(path, value).map_err(|e| LabError::Command {
            command: format!("writing '{value}' to {path}"),
            output: e.to_string(),
        }),
        // The value and path go as arguments, never through the shell's parser.
        Some(ns) => in_ns(
            ns,
            "sh",
            &[
                "-c",
                "printf '%s\\n' \"$1\" > \"$2\"",
                "netceil",
                value,
                path,
            ],
        )
        .map(|_| ()),
    }
}
