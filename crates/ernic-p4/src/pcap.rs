//! pcap (placeholder)
