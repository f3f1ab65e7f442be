//! netceil-lab (placeholder until its issue lands).
