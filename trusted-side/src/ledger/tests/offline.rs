//! Offline verification with standard tools: `examples/verify-ledger.py` must reach the
//! same verdict as `verify`.

use super::*;

const SKIP: i32 = 77;

fn python_verifier() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("examples")
        .join("verify-ledger.py")
}

/// Runs the Python verifier; `None` (after printing why) if it cannot run outside CI.
fn run_python(
    ledger: &Path,
    trusted: &std::ffi::OsStr,
    pin: Option<&LedgerHead>,
) -> Option<std::process::Output> {
    let mut cmd = Command::new("python3");
    cmd.arg(python_verifier()).arg(ledger).arg(trusted);
    if let Some(pin) = pin {
        cmd.arg("--head").arg(pin.to_string());
    }
    let out = match cmd.output() {
        Ok(o) => o,
        Err(e) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set and python3 cannot run: {e}"
            );
            println!("SKIPPED: python3 not available ({e})");
            return None;
        }
    };
    if out.status.code() == Some(SKIP) {
        let why = String::from_utf8_lossy(&out.stderr);
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set and the offline ledger verifier cannot run: {why}"
        );
        println!("SKIPPED: securesystemslib not installed (pip install securesystemslib)");
        return None;
    }
    Some(out)
}

/// The Python verifier must reach the same verdict as `verify`: same head, or the same first
/// broken entry and rule.
fn assert_python_agrees(fx: &Fixture, pin: Option<&LedgerHead>) -> bool {
    let rust = match pin {
        Some(p) => verify_pinned(&fx.store, &fx.trusted(), p),
        None => fx.verify(),
    };
    let raw_hex = fx.trusted().raw_hex();
    let Some(out) = run_python(&fx.ledger_dir(), raw_hex.as_ref(), pin) else {
        return false;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match rust {
        Ok(report) => {
            assert!(
                out.status.success(),
                "python refused a good ledger:\n{stdout}\n{stderr}"
            );
            let head = report
                .head
                .map(|h| h.to_string())
                .unwrap_or_else(|| "none".into());
            let want = format!("OK: {} entries, head {head}", report.entries);
            assert!(
                stdout.contains(&want),
                "{want:?} not in:\n{stdout}\n{stderr}"
            );
        }
        Err(e) => {
            let b = broken_of(Err(e));
            assert_eq!(
                out.status.code(),
                Some(1),
                "python accepted a broken ledger ({b}):\n{stdout}\n{stderr}"
            );
            let want = format!("{}: rejected ({})", b.key, b.rule);
            assert!(
                stderr.contains(&want),
                "rust says {b}\npython says:\n{stderr}"
            );
        }
    }
    true
}

#[test]
fn offline_python_verifier_agrees_with_verify() {
    let fx = Fixture::seeded();
    if !assert_python_agrees(&fx, None) {
        return;
    }
    let head = fx.verify().unwrap().head.unwrap();
    assert_python_agrees(&fx, Some(&head));
    // The trusted key as the SPKI PEM file `airlock init` writes.
    let pem = fx.dir.path().join("trusted.pub");
    std::fs::write(&pem, fx.trusted().to_spki_pem()).unwrap();
    let out = run_python(&fx.ledger_dir(), pem.as_os_str(), None).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("OK: 5 entries, head {head}")),
        "{stdout}"
    );
    // Another key: every entry refused, the first one named.
    let other = SigningKey::generate().public().raw_hex();
    let out = run_python(&fx.ledger_dir(), other.as_ref(), None).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{}: rejected (ledger.signature)", entry_key(1))),
        "{stderr}"
    );

    // Tampering, one case at a time on fresh copies.
    type Tamper = fn(&Fixture);
    let cases: [(&str, Tamper); 9] = [
        ("resigned by another key", |fx| {
            let mut e = fx.entry(3);
            e.at += 1;
            fx.forge(&e, &SigningKey::generate());
        }),
        ("edited without resigning", |fx| {
            let original: dsse::Envelope = serde_json::from_slice(&fx.bytes(4)).unwrap();
            let mut e = fx.entry(4);
            e.job = job(9);
            let edited: dsse::Envelope =
                serde_json::from_slice(&seal(&e, &fx.key).unwrap()).unwrap();
            fx.put(
                4,
                &dsse::Envelope {
                    payload: edited.payload,
                    ..original
                }
                .to_json_pretty(),
            );
        }),
        ("dropped", |fx| fx.store.delete(&entry_key(2)).unwrap()),
        ("swapped", |fx| {
            let (a, b) = (fx.bytes(2), fx.bytes(3));
            fx.put(2, &b);
            fx.put(3, &a);
        }),
        ("trusted re-sign of an edit", |fx| {
            let mut e = fx.entry(2);
            e.job = job(8);
            fx.forge(&e, &fx.key);
        }),
        ("fork", |fx| {
            let six = LedgerEntry {
                seq: 6,
                prev: Some(fx.digest(3)),
                at: T0 + 99,
                job: job(1),
                event: fetch(),
            };
            fx.forge(&six, &fx.key);
        }),
        ("time", |fx| {
            let six = LedgerEntry {
                seq: 6,
                prev: Some(fx.digest(5)),
                at: 1,
                job: job(1),
                event: fetch(),
            };
            fx.forge(&six, &fx.key);
        }),
        ("stray", |fx| {
            fx.store.put_bytes("ledger/README", b"hi").unwrap()
        }),
        ("prompt digest", |fx| {
            let mut e = fx.entry(1);
            if let Event::Submit { prompt, .. } = &mut e.event {
                prompt.push('!');
            }
            fx.forge(&e, &fx.key);
        }),
    ];
    for (what, tamper) in cases {
        let fx = Fixture::seeded();
        tamper(&fx);
        assert!(fx.verify().is_err(), "{what}: rust accepted");
        println!("case: {what}");
        assert_python_agrees(&fx, None);
    }
    // Truncation against the pin.
    let fx = Fixture::seeded();
    let head = fx.verify().unwrap().head.unwrap();
    fx.store.delete(&entry_key(5)).unwrap();
    assert_python_agrees(&fx, None);
    assert_python_agrees(&fx, Some(&head));
}
