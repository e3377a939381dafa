//! The exporter's HTTP side, on `tiny_http`: `/metrics` answers a fresh
//! scrape of the stats files, `/` a page with a link to it, anything else
//! 404. One request at a time: a scrape reads a few small files, and a
//! request's body is never read.

use std::path::PathBuf;
use std::time::Duration;

use super::encode::{Format, encode};

/// What the server serves.
#[derive(Clone, Debug)]
pub struct Config {
    /// The stats files, in the order given.
    pub paths: Vec<PathBuf>,
    /// A file written longer ago than this is down.
    pub stale_after: Duration,
}

const INDEX: &str = "<html><head><title>ernic-exporter</title></head><body>\
<h1>ernic-exporter</h1><p><a href=\"/metrics\">Metrics</a></p></body></html>\n";

fn header(name: &str, value: &str) -> tiny_http::Header {
    // Only our own constant names and content types come here.
    tiny_http::Header::from_bytes(name.as_bytes(), value.as_bytes())
        .unwrap_or_else(|()| unreachable!("a constant header is valid"))
}

/// Answers one request.
pub fn respond(config: &Config, req: tiny_http::Request) {
    let path = req.url().split('?').next().unwrap_or("");
    let get = matches!(
        req.method(),
        tiny_http::Method::Get | tiny_http::Method::Head
    );
    let resp = match (get, path) {
        (true, "/metrics") => {
            let accept = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Accept"))
                .map(|h| h.value.as_str());
            let format = Format::negotiate(accept);
            let body = encode(super::scrape(&config.paths, config.stale_after), format);
            tiny_http::Response::from_string(body)
                .with_header(header("Content-Type", format.content_type()))
        }
        (true, "/") => tiny_http::Response::from_string(INDEX)
            .with_header(header("Content-Type", "text/html; charset=utf-8")),
        _ => tiny_http::Response::from_string("404 page not found\n")
            .with_status_code(404)
            .with_header(header("Content-Type", "text/plain; charset=utf-8")),
    };
    if let Err(e) = req.respond(resp) {
        tracing::debug!(error = %e, "a scrape's client went away");
    }
}

/// Serves `server`'s requests until it fails.
pub fn serve(server: &tiny_http::Server, config: &Config) {
    for req in server.incoming_requests() {
        respond(config, req);
    }
}
