//! sysstat's `mpstat` text reports (`mpstat -P ALL`, `-I SUM|CPU|SCPU`, `-A`).
//!
//! mpstat prints sar's layout (banner, timed headers, `Average:` lines), so the sar reader
//! does the work; this module only tells mpstat from sar and names the metrics it alone has
//! `mpstat_…`. Per-CPU rows become `cpu_*_pct{cpu=N}`; the `all` row is the unlabeled total.
//!
//! Telling them apart: mpstat's CPU header puts `%irq %soft` before `%steal`
//! (`CPU %usr %nice %sys %iowait %irq %soft %steal %guest %gnice %idle`), sar -u ALL puts
//! `%steal` first; and mpstat's interrupt sections are keyed by `CPU` (`CPU intr/s`), sar's
//! by `INTR`.

use super::feed::Feed;
use super::sar::{first_section_header, import_feed, import_text, not_this};
use crate::{ImportError, ImportOptions, Imported, LogLines};

/// The format's name.
pub const NAME: &str = "mpstat";

/// Why the text is not an mpstat report.
pub fn sniff(text: &str) -> Result<(), String> {
    let Some(cols) = first_section_header(text) else {
        return Err(not_this("mpstat", text));
    };
    let pos = |c: &str| cols.iter().position(|x| x == c);
    let cpu_keyed = cols.first().is_some_and(|c| c == "CPU")
        || cols.iter().take(4).any(|c| c == "CPU")
            && cols.iter().any(|c| c == "NODE" || c == "CORE");
    let irq_before_steal = matches!((pos("%irq"), pos("%steal")), (Some(i), Some(s)) if i < s);
    let interrupt_section = cols.iter().any(|c| c == "intr/s")
        || cols.iter().any(|c| c.ends_with("/s")) && !cols.iter().any(|c| c.starts_with('%'));
    let softnet = cols.iter().any(|c| c == "dropd/s"); // sar -n SOFT is keyed by CPU too
    if cpu_keyed && !softnet && (irq_before_steal || interrupt_section) {
        Ok(())
    } else {
        Err(format!(
            "not an mpstat report: its first header is '{}', expected mpstat's 'CPU %usr %nice %sys %iowait %irq %soft %steal …' or 'CPU intr/s'",
            cols.join(" ")
        ))
    }
}

/// Imports an mpstat report.
pub fn import(text: &str, opts: &ImportOptions) -> Result<Imported, ImportError> {
    import_text(text, opts, NAME, "mpstat")
}

/// Imports an mpstat report read line by line: the same Run as [`import`] on the whole text
/// (see [`super::sar::import_lines`]).
pub fn import_lines(
    lines: &mut LogLines<impl std::io::Read>,
    opts: &ImportOptions,
) -> Result<Imported, ImportError> {
    import_feed(&mut Feed::stream(lines), opts, NAME, "mpstat")
}
