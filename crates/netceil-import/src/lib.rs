//! netceil-import (placeholder until its issue lands).
