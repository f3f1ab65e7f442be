//! The HTML report in a real browser: headless Chromium must log nothing to its console
//! (the report has no scripts, so any line is a blocked fetch or a load error) and must
//! parse the page to its end. At a desktop's width (1400 px) and a phone's (390 px) the
//! verdict comes before the first chart, no legend is a raw metric id, and nothing is wider
//! than the window; screenshots of both are kept under the test's target tmp dir. Skipped,
//! with the reason printed, when chromium is not installed; scripts/check-report-browser.sh
//! does the same on fresh runs and installs it.

mod common;

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
    chromium_run(browser, page, profile, &["--dump-dom"])
}

/// Runs headless chromium on `page` with `extra` flags, bounded to 120 s; returns its
/// stdout and the console lines of its log.
fn chromium_run(
    browser: &str,
    page: &Path,
    profile: &Path,
    extra: &[&str],
) -> (String, Vec<String>) {
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
            "--hide-scrollbars",
        ])
        .args(extra)
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

/// Measures the page as laid out: written into the DOM by a script the test adds to a copy
/// of the report (the report itself has none, and its policy would refuse one).
const PROBE: &str = r#"<script>
(function () {
  const de = document.documentElement, body = document.body;
  const limit = body.getBoundingClientRect().right + 1;
  const wide = [];
  for (const el of body.querySelectorAll('*')) {
    if (el.closest('.table-wrap') && !el.classList.contains('table-wrap')) continue;
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.right > limit) wide.push(el.tagName + '.' + el.className + ' ' + Math.round(r.right));
  }
  const scrolled = [...document.querySelectorAll('.table-wrap')]
    .filter(w => w.scrollWidth > w.clientWidth + 1)
    .map(w => w.textContent.slice(0, 60));
  const verdict = document.querySelector('.verdict');
  const chart = document.querySelector('svg');
  const first = verdict && chart
    ? !!(verdict.compareDocumentPosition(chart) & Node.DOCUMENT_POSITION_FOLLOWING) : null;
  const legends = [...document.querySelectorAll('svg text')].map(t => t.textContent);
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({ viewport: de.clientWidth, inner: window.innerWidth,
    scroll: de.scrollWidth, wide, scrolled, verdict_first: first, legends });
  body.appendChild(out);
  parent.document.getElementById('out').textContent = out.textContent;
})();
</script>"#;

#[derive(serde::Deserialize, Debug)]
struct Probe {
    viewport: u32,
    inner: u32,
    scroll: u32,
    wide: Vec<String>,
    scrolled: Vec<String>,
    verdict_first: Option<bool>,
    legends: Vec<String>,
}

/// `html` in an iframe exactly `width` px wide: headless chromium will not make its window
/// narrower than 500 px, but a frame can be, and the page inside lays out to the frame's width.
fn framed(html: &str, width: u32, height: u32) -> String {
    let srcdoc = html.replace('&', "&amp;").replace('"', "&quot;");
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"></head>\
         <body style=\"margin:0\"><iframe width=\"{width}\" height=\"{height}\" \
         style=\"border:0;display:block\" srcdoc=\"{srcdoc}\"></iframe>\
         <pre id=\"out\"></pre></body></html>"
    )
}

/// The window for a frame of `width`: wide enough for chromium to honour.
fn window(width: u32, height: u32) -> String {
    format!("--window-size={},{height}", width.max(500) + 20)
}

fn probe(browser: &str, html: &str, dir: &Path, name: &str, width: u32) -> Probe {
    let probed = html
        .replace(
            "default-src 'none'; style-src 'unsafe-inline'",
            "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'",
        )
        .replace("</body>", &format!("{PROBE}</body>"));
    assert_ne!(probed, html, "the probe could not be added to {name}");
    let page = dir.join(format!("{name}-{width}.html"));
    std::fs::write(&page, framed(&probed, width, 1000)).unwrap();
    let (dom, _) = chromium_run(
        browser,
        &page,
        &dir.join(format!("p-{name}-{width}")),
        &["--dump-dom", &window(width, 1000)],
    );
    let start = dom
        .find("<pre id=\"out\">")
        .unwrap_or_else(|| panic!("{name} at {width} px: no output element"))
        + "<pre id=\"out\">".len();
    let end = start + dom[start..].find("</pre>").unwrap();
    let json = dom[start..end]
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    assert!(
        !json.is_empty(),
        "{name} at {width} px: the probe wrote nothing"
    );
    serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e}: {json}"))
}

/// Checks one page at one width; returns what is wrong with it, if anything.
fn problems(p: &Probe, width: u32) -> Vec<String> {
    let mut out = Vec::new();
    if p.inner != width {
        out.push(format!("measured at {} px, not {width}", p.inner));
    }
    if p.scroll > p.viewport {
        out.push(format!(
            "the page scrolls sideways: {} px wide in a {} px viewport",
            p.scroll, p.viewport
        ));
    }
    if !p.wide.is_empty() {
        out.push(format!("wider than the body: {:?}", p.wide));
    }
    if !p.scrolled.is_empty() {
        out.push(format!(
            "tables that need their scroll bar: {:?}",
            p.scrolled
        ));
    }
    if p.verdict_first != Some(true) {
        out.push(format!(
            "verdict before the first chart: {:?}",
            p.verdict_first
        ));
    }
    for text in &p.legends {
        let raw = text.contains("{iface=")
            || text.contains("{cpu=")
            || netceil_model::names::ALL
                .iter()
                .any(|(name, _)| text.contains(name));
        if raw {
            out.push(format!("a chart text is a raw metric id: {text:?}"));
        }
    }
    out
}

/// The pages the layout test loads: a real UDP run alone, the synthetic run with every
/// field, a sweep with its knee table, and several runs overlaid (two of them repeats of
/// one workload).
fn pages() -> Vec<(&'static str, String)> {
    let udp: Run = serde_json::from_str(include_str!("fixtures/run-udp.json")).unwrap();
    let mut repeat = udp.clone();
    repeat.run_id = format!("{}-repeat", udp.run_id);
    // A made-up repeat (this is a layout test): the same workload, 4 % slower.
    if let Some(r) = repeat.results.as_mut() {
        r.rx_app_bits_per_s *= 0.96;
    }
    vec![
        ("udp", html_report(std::slice::from_ref(&udp))),
        ("full", html_report(&[common::full_run()])),
        ("sweep", html_report(&[common::sweep_run()])),
        ("several", html_report(&[udp, repeat, common::full_run()])),
    ]
}

#[test]
fn report_reads_in_order_and_fits_a_desktop_and_a_phone() {
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

    // The checks must be able to fail: a page that is too wide, with its chart before its
    // verdict and a metric id in a legend, fails every one of them.
    let bad = "<!DOCTYPE html><html><head><meta charset=\"utf-8\">\
        <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\
        </head><body><svg width=\"10\" height=\"10\"><text>iface_rx_bits_per_s{iface=lo}</text></svg>\
        <h3 class=\"verdict\">Verdict</h3><table style=\"width:2000px\"><tr><td>x</td></tr></table>\
        </body></html>";
    let found = problems(&probe(browser, bad, dir.path(), "control", 390), 390);
    assert!(
        found.len() >= 3,
        "the layout checks missed a bad page: {found:?}"
    );

    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-browser");
    std::fs::create_dir_all(&artifacts).unwrap();
    let mut failures = Vec::new();
    for (name, html) in pages() {
        for (width, height) in [(1400u32, 2200u32), (390, 2200)] {
            let p = probe(browser, &html, dir.path(), name, width);
            for problem in problems(&p, width) {
                failures.push(format!("{name} at {width} px: {problem}"));
            }
            std::fs::write(artifacts.join(format!("{name}.html")), &html).unwrap();
            let page = artifacts.join(format!("{name}-{width}-framed.html"));
            std::fs::write(&page, framed(&html, width, height)).unwrap();
            let shot = artifacts.join(format!("{name}-{width}.png"));
            let _ = std::fs::remove_file(&shot);
            let (_, console) = chromium_run(
                browser,
                &page,
                &dir.path().join(format!("s-{name}-{width}")),
                &[
                    &format!("--screenshot={}", shot.display()),
                    &window(width, height),
                ],
            );
            assert!(shot.exists(), "no screenshot at {}", shot.display());
            for line in console {
                failures.push(format!("{name} at {width} px: console: {line}"));
            }
            println!("screenshot: {}", shot.display());
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
