//! Azurite, Microsoft's Azure Storage emulator (the npm package `azurite`, installed by
//! `scripts/ci-install-azurite.sh`), run as a child process for the `az://` tests: the blob
//! service on `127.0.0.1:<ephemeral>` with its data in a fresh temp dir, one container
//! ([`CONTAINER`](crate::azurite::CONTAINER)) created through the Blob REST API with a Shared
//! Key request, and the environment the trusted side reads (`AZURE_STORAGE_USE_EMULATOR`,
//! `AZURITE_BLOB_STORAGE_URL`: object_store's emulator mode, account `devstoreaccount1`).
//!
//! Guards against: a test that passes without the emulator (a missing Azurite is a skip
//! through the one skip helper, so a failure under CI), a port race (Azurite binds port 0 and
//! the port is read from the line it prints), a server left running (killed on drop), and
//! telemetry leaving the machine (`--disableTelemetry`).
//!
//! Test-only: production stores are Azure Blob Storage itself (see `docs/STORES.md`).

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use object_store::azure::{MicrosoftAzure, MicrosoftAzureBuilder};
use object_store::ObjectStore;

/// The emulator's well-known account (devstoreaccount1, Microsoft's Azurite documentation).
pub const ACCOUNT: &str = "devstoreaccount1";
/// The documented key of devstoreaccount1 (public: it only opens a local emulator).
pub const ACCOUNT_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="; // devstoreaccount1
/// The container created at start.
pub const CONTAINER: &str = "airlock";
/// The Blob REST API version of our own Shared Key requests (the one object_store speaks).
const API_VERSION: &str = "2023-11-03";

/// Where `scripts/ci-install-azurite.sh` puts `azurite-blob`: `$AIRLOCK_AZURITE_DIR/bin`,
/// default `~/.airlock-agents/azurite/bin`.
pub fn binary() -> PathBuf {
    let dir = match std::env::var_os("AIRLOCK_AZURITE_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".airlock-agents/azurite"),
    };
    dir.join("bin/azurite-blob")
}

/// A running Azurite blob service. Dropping it kills the process and removes its data.
pub struct Azurite {
    child: Child,
    port: u16,
    client: Arc<MicrosoftAzure>,
    rt: tokio::runtime::Runtime,
    _dir: tempfile::TempDir,
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Azurite {
    /// Starts Azurite and creates [`CONTAINER`]; `None` when Azurite is not installed (the
    /// test was skipped through [`crate::skip`]: under CI that is a failure).
    pub fn start() -> Option<Azurite> {
        let bin = binary();
        if !bin.exists() {
            crate::skip(&format!(
                "Azurite is not installed at {}: run scripts/ci-install-azurite.sh",
                bin.display()
            ));
            return None;
        }
        let dir = tempfile::tempdir().expect("azurite data dir");
        let mut child = Command::new(&bin)
            .args(["--blobHost", "127.0.0.1", "--blobPort", "0", "--location"])
            .arg(dir.path())
            // The SAS and Shared Key requests name a service version Azurite may not list;
            // `--loose` ignores headers it does not implement instead of answering 500.
            .args([
                "--skipApiVersionCheck",
                "--loose",
                "--disableTelemetry",
                "--silent",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn azurite-blob");
        // The port it bound, from "... successfully listens on http://127.0.0.1:PORT"; the
        // reader then drains stdout until the process ends.
        let stdout = child.stdout.take().expect("azurite stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Some((_, port)) = line.split_once("listens on http://127.0.0.1:") {
                    let _ = tx.send(port.trim().parse::<u16>().ok());
                }
            }
        });
        let port = match rx.recv_timeout(Duration::from_secs(90)) {
            Ok(Some(p)) => p,
            other => {
                let _ = child.kill();
                panic!("Azurite did not say which port it listens on: {other:?}");
            }
        };
        crate::s3::install_tls_provider();
        let client = MicrosoftAzureBuilder::new()
            .with_account(ACCOUNT)
            .with_access_key(ACCOUNT_KEY)
            .with_container_name(CONTAINER)
            .with_endpoint(format!("http://127.0.0.1:{port}/{ACCOUNT}"))
            .with_allow_http(true)
            .build()
            .expect("azure client");
        let az = Azurite {
            child,
            port,
            client: Arc::new(client),
            rt: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime"),
            _dir: dir,
        };
        az.create_container();
        Some(az)
    }

    /// `http://127.0.0.1:<port>`: what `AZURITE_BLOB_STORAGE_URL` says.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The blob's URL without a signature: `http://127.0.0.1:<port>/devstoreaccount1/airlock/<key>`.
    pub fn blob_url(&self, key: &str) -> String {
        format!("{}/{ACCOUNT}/{CONTAINER}/{key}", self.endpoint())
    }

    /// The store URL for `airlock init --store`: `az://airlock/<prefix>`.
    pub fn store_url(&self, prefix: &str) -> String {
        format!("az://{CONTAINER}/{prefix}")
    }

    /// What the trusted side's environment needs: object_store's emulator mode pointed at
    /// this instance, with the emulator's account and key spelled out.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AZURE_STORAGE_USE_EMULATOR", "true".to_owned()),
            ("AZURITE_BLOB_STORAGE_URL", self.endpoint()),
            ("AZURE_STORAGE_ACCOUNT_NAME", ACCOUNT.to_owned()),
            ("AZURE_STORAGE_ACCOUNT_KEY", ACCOUNT_KEY.to_owned()),
        ]
    }

    /// Every blob under `prefix` and its size, as the account key sees the container.
    pub fn list(&self, prefix: &str) -> BTreeMap<String, u64> {
        use futures::StreamExt;
        let p = (!prefix.is_empty()).then(|| object_store::path::Path::from(prefix));
        self.rt.block_on(async {
            let mut out = BTreeMap::new();
            let mut stream = self.client.list(p.as_ref());
            while let Some(m) = stream.next().await {
                let m = m.expect("list");
                out.insert(m.location.to_string(), m.size);
            }
            out
        })
    }

    /// A blob's bytes, or `None` when it does not exist.
    pub fn get(&self, key: &str) -> Option<Vec<u8>> {
        let path = object_store::path::Path::from(key);
        self.rt.block_on(async {
            match object_store::ObjectStoreExt::get(self.client.as_ref(), &path).await {
                Ok(r) => Some(r.bytes().await.expect("read blob").to_vec()),
                Err(object_store::Error::NotFound { .. }) => None,
                Err(e) => panic!("get {key}: {e}"),
            }
        })
    }

    /// Create Container with a Shared Key request, retried until Azurite answers (it prints
    /// its port a moment before it serves).
    fn create_container(&self) {
        let url = format!(
            "{}/{ACCOUNT}/{CONTAINER}?restype=container",
            self.endpoint()
        );
        let mut last = String::new();
        for _ in 0..100 {
            let date = http_date(airlock_core::clock::now_unix());
            let to_sign = format!(
                "PUT\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:{date}\nx-ms-version:{API_VERSION}\n/{ACCOUNT}/{ACCOUNT}/{CONTAINER}\nrestype:container"
            );
            let auth = format!("SharedKey {ACCOUNT}:{}", shared_key_signature(&to_sign));
            let a = crate::s3::raw_request(
                "PUT",
                &url,
                &[
                    ("x-ms-date", &date),
                    ("x-ms-version", API_VERSION),
                    ("authorization", &auth),
                ],
                &[],
            );
            match a.status {
                201 => return,
                409 if a.code == "ContainerAlreadyExists" => return,
                _ => last = format!("{} {} {}", a.status, a.code, a.body),
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("Azurite did not create the container: {last}");
    }
}

/// Base64 of HMAC-SHA256(account key, `to_sign`): a Shared Key signature.
fn shared_key_signature(to_sign: &str) -> String {
    use base64::Engine as _;
    use sha2::{Digest, Sha256};
    let key = base64::engine::general_purpose::STANDARD
        .decode(ACCOUNT_KEY)
        .expect("account key");
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(&key);
    let mut inner = Sha256::new();
    inner.update(block.map(|b| b ^ 0x36));
    inner.update(to_sign.as_bytes());
    let mut outer = Sha256::new();
    outer.update(block.map(|b| b ^ 0x5c));
    outer.update(inner.finalize());
    base64::engine::general_purpose::STANDARD.encode(outer.finalize())
}

/// RFC 1123 date (`Sun, 06 Dec 2026 18:40:00 GMT`) of unix seconds `t`.
fn http_date(t: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = t / 86_400;
    let secs = t % 86_400;
    // Howard Hinnant's civil-from-days, for days since 1970-01-01.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn http_dates() {
        assert_eq!(super::http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            super::http_date(1_796_582_400),
            "Sun, 06 Dec 2026 18:40:00 GMT"
        );
        assert_eq!(
            super::http_date(951_782_400 + 3_723),
            "Tue, 29 Feb 2000 01:02:03 GMT"
        );
    }
}
