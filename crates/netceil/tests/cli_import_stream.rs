//! `netceil analyze` on a Linux vmstat log longer than the head it detects formats from
//! (netceil_import::HEAD_BYTES): read line by line, imported whole, a bad line named.

use assert_cmd::Command;

/// A `vmstat -w` log of `rows` samples, its header every 21 rows.
fn vmstat_log(rows: usize) -> String {
    let mut s = String::with_capacity(rows * 125);
    for i in 0..rows {
        if i % 21 == 0 {
            s.push_str("--procs-- -----------------------memory---------------------- ---swap-- -----io---- -system-- ----------cpu----------\n   r    b         swpd         free         buff        cache   si   so    bi    bo   in   cs  us  sy  id  wa  st  gu\n");
        }
        let k = i % 40;
        s.push_str(&format!(
            "{:4} {:4} {:12} {:12} {:12} {:12} {:4} {:4} {:5} {:5} {:4} {:4} {:3} {:3} {:3} {:3} {:3} {:3}\n",
            k % 9, 0, 0, 7_800_000 + k, 264_152, 15_081_420, 0, 0, k, 90 * k, 500 + k, 900 + k, 20 + k, 10, 70 - k, 0, 0, 0
        ));
    }
    s
}

fn analyze(path: &std::path::Path) -> std::process::Output {
    Command::cargo_bin("netceil")
        .expect("binary built")
        .args(["analyze", "--no-store"])
        .arg(path)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs")
}

#[test]
fn a_vmstat_log_longer_than_the_head_is_streamed_and_a_bad_line_named() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 90_000; // ~11 MB: more than the 8 MiB head
    let text = vmstat_log(rows);
    assert!(text.len() > netceil_import::HEAD_BYTES);
    let path = dir.path().join("vmstat.log");
    std::fs::write(&path, &text).unwrap();
    let out = analyze(&path);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Every sample but the first (vmstat's averages since boot).
    assert!(
        stdout.contains(&format!("(vmstat-linux): {} intervals", rows - 1)),
        "{stdout}"
    );
    // A bad number far past the head: the file, the line and what was expected.
    let lines: Vec<&str> = text.lines().collect();
    let at = lines.len() - 10;
    let mut bad: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
    bad[at] = bad[at].replacen(" 264152 ", " 26x152 ", 1);
    std::fs::write(&path, bad.join("\n") + "\n").unwrap();
    let out = analyze(&path);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "vmstat.log: line {}, column 5: expected a number, found '26x152'",
            at + 1
        )),
        "{stderr}"
    );
}
