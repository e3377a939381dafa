//! perftest-shaped tables, or one JSON object per size.

use serde_json::json;

use super::Plan;
use super::Test;
use super::tests::Measure;

const MB: f64 = (1 << 20) as f64;
const RULE: &str =
    "---------------------------------------------------------------------------------------";

/// One size's result.
#[derive(Debug, Clone)]
pub struct Row {
    pub test: Test,
    pub size: u64,
    pub iters: u64,
    pub measure: Measure,
    /// Baseline: bytes per second (bandwidth) or microseconds (latency).
    pub baseline: Option<f64>,
}

/// Latency statistics in microseconds, as perftest prints them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatStats {
    pub min: f64,
    pub max: f64,
    pub typical: f64,
    pub avg: f64,
    pub stdev: f64,
    pub p99: f64,
    pub p999: f64,
}

impl LatStats {
    pub fn from_samples(samples: &mut [f64]) -> LatStats {
        samples.sort_by(|a, b| a.total_cmp(b));
        let n = samples.len().max(1);
        let at = |q: f64| {
            samples
                .get(((n as f64 * q) as usize).min(n - 1))
                .copied()
                .unwrap_or(0.0)
        };
        let avg = samples.iter().sum::<f64>() / n as f64;
        let var = samples.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / n as f64;
        LatStats {
            min: samples.first().copied().unwrap_or(0.0),
            max: samples.last().copied().unwrap_or(0.0),
            typical: at(0.5),
            avg,
            stdev: var.sqrt(),
            p99: at(0.99),
            p999: at(0.999),
        }
    }
}

impl Row {
    pub fn new(test: Test, size: u64, iters: u64, measure: Measure, baseline: Option<f64>) -> Row {
        Row {
            test,
            size,
            iters,
            measure,
            baseline,
        }
    }
}

pub struct Reporter {
    test: Test,
    json: bool,
    baseline: bool,
    transport: String,
    /// Two processes: the baselines are TCP, not memcpy and threads.
    remote: bool,
    /// The JSON `transport`: loopback, mesh or ionic.
    kind: &'static str,
    /// Figures are both directions' sum.
    bidir: bool,
}

impl Reporter {
    /// The same reporter, naming its transport `kind` in JSON.
    pub fn kind(mut self, kind: &'static str) -> Reporter {
        self.kind = kind;
        self
    }

    /// The same reporter, for figures that add both directions.
    pub fn bidirectional(mut self, bidir: bool) -> Reporter {
        self.bidir = bidir;
        self
    }

    pub fn new(
        test: Test,
        json: bool,
        baseline: bool,
        transport: String,
        remote: bool,
    ) -> Reporter {
        Reporter {
            test,
            json,
            baseline,
            transport,
            remote,
            kind: if remote { "mesh" } else { "loopback" },
            bidir: false,
        }
    }

    fn base_names(&self) -> (&'static str, &'static str) {
        if self.remote {
            ("tcp[MB/sec]", "tcp[usec]")
        } else {
            ("memcpy[MB/sec]", "threads[usec]")
        }
    }

    pub fn header(&self, plan: &Plan) {
        if self.json {
            return;
        }
        println!("{RULE}");
        println!("                    {}", self.test.banner());
        println!(" Transport       : {}", self.transport);
        println!(" Connection type : RC");
        if self.test.is_bw() {
            println!(" TX depth        : {}", plan.tx_depth);
            if plan.bidir {
                println!(" Directions      : both at once; figures are their sum");
            }
        }
        println!("{RULE}");
        if self.test.is_bw() {
            print!(
                " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
            );
            if self.baseline {
                print!("   {:<16} ratio", self.base_names().0);
            }
        } else {
            print!(
                " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec]"
            );
            if self.baseline {
                print!("   {:<15} ratio", self.base_names().1);
            }
        }
        println!();
    }

    pub fn row(&mut self, row: &Row) {
        match &row.measure {
            Measure::Bw {
                avg,
                peak,
                msg_rate,
            } => {
                let ratio = row.baseline.map(|b| avg / b);
                if self.json {
                    let mut o = json!({
                        "test": row.test.to_string(),
                        "size": row.size,
                        "iters": row.iters,
                        "bw_gbps": avg * 8.0 / 1e9,
                        "bw_peak_gbps": peak * 8.0 / 1e9,
                        "bw_MBps": avg / MB,
                        "msg_rate_mpps": msg_rate / 1e6,
                        "transport": self.kind,
                    });
                    if self.bidir {
                        o["bidirectional"] = json!(true);
                    }
                    if let (Some(b), Some(r)) = (row.baseline, ratio) {
                        o["baseline_gbps"] = json!(b * 8.0 / 1e9);
                        o["baseline"] = json!(if self.remote { "tcp stream" } else { "memcpy" });
                        o["ratio"] = json!(r);
                    }
                    println!("{o}");
                } else {
                    print!(
                        " {:<10} {:<14} {:<18.2} {:<20.2} {:<.6}",
                        row.size,
                        row.iters,
                        peak / MB,
                        avg / MB,
                        msg_rate / 1e6
                    );
                    if let (Some(b), Some(r)) = (row.baseline, ratio) {
                        print!("   {:<16.2} {:.3}", b / MB, r);
                    }
                    println!();
                }
            }
            Measure::Lat(samples) => {
                let mut s = samples.clone();
                let st = LatStats::from_samples(&mut s);
                let ratio = row.baseline.map(|b| st.typical / b);
                if self.json {
                    let mut o = json!({
                        "test": row.test.to_string(),
                        "size": row.size,
                        "iters": row.iters,
                        "lat_us_min": st.min,
                        "lat_us_max": st.max,
                        "lat_us_typical": st.typical,
                        "lat_us_avg": st.avg,
                        "lat_us_stdev": st.stdev,
                        "lat_us_p99": st.p99,
                        "lat_us_p999": st.p999,
                        "transport": self.kind,
                    });
                    if let (Some(b), Some(r)) = (row.baseline, ratio) {
                        o["baseline_us"] = json!(b);
                        o["baseline"] = json!(if self.remote {
                            "tcp ping-pong"
                        } else {
                            "thread ping-pong"
                        });
                        o["ratio"] = json!(r);
                    }
                    println!("{o}");
                } else {
                    print!(
                        " {:<6} {:<11} {:<14.2} {:<12.2} {:<16.2} {:<14.2} {:<15.2} {:<22.2} {:<.2}",
                        row.size,
                        row.iters,
                        st.min,
                        st.max,
                        st.typical,
                        st.avg,
                        st.stdev,
                        st.p99,
                        st.p999
                    );
                    if let (Some(b), Some(r)) = (row.baseline, ratio) {
                        print!("   {:<15.3} {:.2}", b, r);
                    }
                    println!();
                }
            }
        }
    }

    pub fn footer(&self) {
        if !self.json {
            println!("{RULE}");
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn latency_statistics() {
        let mut s: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        let st = LatStats::from_samples(&mut s);
        assert_eq!((st.min, st.max), (1.0, 1000.0));
        assert_eq!(st.typical, 501.0);
        assert_eq!(st.p99, 991.0);
        assert_eq!(st.p999, 1000.0);
        assert!((st.avg - 500.5).abs() < 1e-9);
    }
}
