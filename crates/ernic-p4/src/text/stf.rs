//! p4c STF (placeholder)
