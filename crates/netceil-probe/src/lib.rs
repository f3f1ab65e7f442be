//! netceil-probe (placeholder until its issue lands).
