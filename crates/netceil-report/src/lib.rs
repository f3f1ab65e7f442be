//! netceil-report (placeholder until its issue lands).
