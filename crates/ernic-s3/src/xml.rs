//! S3's XML bodies (placeholder until the writers and readers land).
