//! The bin's side of `--metrics-listen` (the endpoint itself is `netceil-metrics`): the
//! start, said on stderr, with a bind error's exit code, and the linger, ended by the
//! command's stop flag.

use netceil_metrics::{Detail, MetricsServer};
use std::time::Duration;

use crate::cli::MetricsArgs;
use crate::Failure;

/// A command's `--metrics-listen`: nothing without it; with it, the started endpoint (its
/// address printed on stderr), or the bind error with its exit code.
pub(crate) fn from_flag(args: &MetricsArgs) -> Result<Option<MetricsServer>, Failure> {
    let Some(addr) = args.metrics_listen else {
        return Ok(None);
    };
    let detail = if args.metrics_detail {
        Detail::Fine
    } else {
        Detail::Coarse
    };
    let server = MetricsServer::start_with(addr, detail)
        .map_err(|e| Failure::with_code(e.exit_code().into(), e))?;
    eprintln!(
        "netceil: serving OpenMetrics at http://{}/metrics",
        server.local_addr()
    );
    Ok(Some(server))
}

/// `--metrics-linger`: serves the final findings a while more; Ctrl-C or SIGTERM ends it.
pub(crate) fn linger(server: MetricsServer, how_long: Option<Duration>) {
    server.linger(how_long.unwrap_or_default(), &crate::stop_flag(), |wake| {
        crate::on_stop(wake)
    });
}
