//! The Docker test's store container: the in-process S3 server of the end-to-end tests
//! (`tests/s3.rs`: s3s + s3s-fs, SigV4 enforced, path-style) as a program, listening on
//! `0.0.0.0:PORT` with its data under DIR. Test-only, like the server it wraps.
//!
//!   s3-server DIR PORT        (access key, secret and bucket: see tests/s3.rs)
#![allow(clippy::unwrap_used, clippy::expect_used)] // a test fixture: a failure is the report

use std::net::Ipv4Addr;
use std::path::PathBuf;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let (Some(dir), Some(port)) = (args.next(), args.next()) else {
        eprintln!("usage: s3-server DIR PORT");
        std::process::exit(2);
    };
    let port: u16 = port.to_str().and_then(|p| p.parse().ok()).expect("PORT");
    let server =
        airlock_tests::s3::S3Server::serve_on(&PathBuf::from(dir), Ipv4Addr::UNSPECIFIED, port);
    eprintln!("s3-server: listening on 0.0.0.0:{}", server.port());
    // S3_SERVER_SUMMARY=FILE: every second, the requests so far by method and key shape (a
    // segment holding a digit is `*`), for `bench/fleet.sh`'s requests-per-job figures.
    let summary = std::env::var_os("S3_SERVER_SUMMARY");
    loop {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let Some(path) = &summary else { continue };
        let mut counts = std::collections::BTreeMap::<String, u64>::new();
        for l in server.log() {
            let shape: Vec<&str> = (l.path.split('/'))
                .map(|seg| match seg.bytes().any(|b| b.is_ascii_digit()) {
                    true => "*",
                    false => seg,
                })
                .collect();
            *counts
                .entry(format!("{} {}", l.method, shape.join("/")))
                .or_default() += 1;
        }
        let text: String = counts
            .iter()
            .map(|(k, n)| format!("{n:>8} {k}\n"))
            .collect();
        let _ = std::fs::write(path, text);
    }
}
