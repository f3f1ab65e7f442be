//! The HTML report in a real browser: headless Chromium must log nothing to its console
//! (the report has no scripts, so any line is a blocked fetch or a load error) and must
//! parse the page to its end. Skipped, with the reason printed, when chromium is not
//! installed; scripts/check-report-browser.sh does the same on fresh runs and installs it.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use netceil_model::Run;
use netceil_report::html_report;

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser"].into_iter().find(|name| {
        Command::new(name)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Loads `page` headless; returns (DOM, console lines).
fn browse(browser: &str, page: &Path, profile: &Path) -> (String, Vec<String>) {
    let out = page.with_extension("dom");
    let log = page.with_extension("log");
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .expect("start chromium");
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("chromium did not finish {} within 120 s", page.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let console = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains("CONSOLE"))
        .map(str::to_string)
        .collect();
    (std::fs::read_to_string(&out).unwrap(), console)
}

#[test]
fn report_loads_in_chromium_without_console_messages() {
    let browser = chromium();
    if netceil_testkit::skip(
        browser
            .is_none()
            .then(|| "chromium is not installed (apt-get install chromium)".into()),
    ) {
        return;
    }
    let browser = browser.expect("checked above");
    let dir = tempfile::tempdir().unwrap();

    // The check must be able to fail: a page with a fetch the policy blocks is caught.
    let control = dir.path().join("control.html");
    std::fs::write(
        &control,
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">\
         <title>c</title></head><body><img src=\"https://example.invalid/x.png\" alt=\"\">\
         </body></html>",
    )
    .unwrap();
    let (_, console) = browse(browser, &control, &dir.path().join("p0"));
    assert!(
        !console.is_empty(),
        "the console check missed a blocked fetch"
    );

    let run: Run = serde_json::from_str(include_str!("fixtures/run-udp.json")).unwrap();
    let mut noted = run.clone();
    noted.run_id = "second <run>".into();
    noted
        .notes
        .push("a note with <script>alert(1)</script> in it".into());
    let html = html_report(&[run, noted]);
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).unwrap();
    let (dom, console) = browse(browser, &page, &dir.path().join("p1"));
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    assert_eq!(
        dom.matches("<svg ").count(),
        html.matches("<svg ").count(),
        "the browser's DOM lost charts"
    );
    assert!(
        dom.contains("</footer>"),
        "the DOM does not reach the footer"
    );
    assert!(!dom.contains("<script>"), "escaped text became markup");
}
