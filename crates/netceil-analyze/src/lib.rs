//! netceil-analyze (placeholder until its issue lands).
