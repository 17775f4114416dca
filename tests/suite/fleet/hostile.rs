//! A hostile enrolled worker: its URLs, its heartbeat's lies, a job taken away from it.

use std::time::{Duration, Instant};

use airlock_tests::s3::{raw_request, with_key};
use airlock_tests::*;

use super::{wait_until, Fleet, PREFIX};

/// A hostile enrolled worker on S3: its URLs reach only its own prefix, it cannot open
/// another worker's ticket, and its heartbeat's lies get it nothing.
#[test]
fn a_hostile_worker_gets_nothing_it_was_not_given() {
    let mut f = Fleet::new(true);
    f.enroll("good");
    f.enroll("evil");
    f.serve("good", &["--max-jobs", "1"]);
    // The good worker's heartbeat lands; then one job goes to it.
    wait_until("good's heartbeat", Duration::from_secs(30), || {
        f.tick();
        f.state()["workers"]["good"]["claimed"].is_object()
    });
    // Stop good before it can take the ticket: the ticket stays in its mailbox.
    let c = &mut f.workers[0].1;
    c.kill().unwrap();
    c.wait().unwrap();
    f.submit(1, &[]);
    f.tick();
    let s3 = f.server.as_ref().unwrap();
    let good_ticket = s3
        .get(&format!("{PREFIX}/fleet/good/mailbox/0.age"))
        .expect("a sealed ticket in good's mailbox");
    assert!(good_ticket.starts_with(b"age-encryption.org/v1\n"));
    // evil's key cannot open it (seal.recipient).
    let evil_key = std::fs::read_to_string(f.key_dir("evil").join("worker.key")).unwrap();
    let evil_id = airlock_core::seal::Identity::parse(&evil_key).unwrap();
    let e = airlock_core::seal::open(&evil_id, &good_ticket, 1 << 20).unwrap_err();
    assert!(e.to_string().contains("seal.recipient"), "{e}");
    // evil's presigned URLs, pointed at good's objects, are refused by the store itself.
    let env = std::fs::read(f.enrolment("evil")).unwrap();
    let env: serde_json::Value = serde_json::from_slice(&env).unwrap();
    use base64::Engine as _;
    let payload = base64::engine::general_purpose::STANDARD
        .decode(env["payload"].as_str().unwrap())
        .unwrap();
    let statement: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    let pred = &statement["predicate"];
    let evil_get = pred["mailbox"][0].as_str().unwrap();
    let evil_put = pred["heartbeat"].as_str().unwrap();
    for (method, url) in [
        (
            "GET",
            with_key(evil_get, &format!("{PREFIX}/fleet/good/mailbox/0.age")),
        ),
        (
            "PUT",
            with_key(evil_put, &format!("{PREFIX}/fleet/good/heartbeat.json")),
        ),
        ("GET", with_key(evil_get, &format!("{PREFIX}/fleet/"))),
    ] {
        let a: airlock_tests::s3::Answer = raw_request(method, &url, &[], b"{}");
        assert_eq!(a.status, 403, "{method} {url}: {}", a.status);
    }
    // evil's heartbeat: escape-laden, then oversized, then lying about another worker.
    let hb = |body: &[u8]| {
        let a = raw_request("PUT", evil_put, &[], body);
        assert_eq!(a.status, 200);
        f.tick();
        f.fleet_status()["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["name"] == "evil")
            .unwrap()
            .clone()
    };
    let w = hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"0.7\u001b]0;pwned\u0007","writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#);
    assert_eq!(w["mark"], "refused", "{w}");
    assert!(
        w["refused"]
            .as_str()
            .unwrap()
            .contains("fleet-heartbeat-refused"),
        "{w}"
    );
    let big = format!(
        r#"{{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"1","pad":"{}"}}"#,
        "x".repeat(10_000)
    );
    let w = hb(big.as_bytes());
    assert_eq!(w["mark"], "refused", "{w}");
    let w = hb(br#"{"format":"airlock.heartbeat/v1","name":"good","state":"idle","version":"1"}"#);
    assert_eq!(w["mark"], "refused", "{w}");
    // A well-formed lie: idle, an old version, every label, formats it does not write.
    let w = hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"0.1.0","labels":["gpu"],"writes":["airlock.packet/v0"]}"#);
    assert_eq!(w["mark"], "ready", "{w}");
    f.submit(1, &[]);
    f.tick();
    assert!(
        f.state()["workers"]["evil"]["tickets"]
            .as_array()
            .unwrap()
            .is_empty(),
        "a worker whose formats cannot carry the job got it (fleet-formats)"
    );
    // Claims it writes our formats and is idle: it gets at most the mailbox's two tickets,
    // however many jobs wait and however idle it says it is.
    hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"0.1.0","writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#);
    f.submit(2, &[]);
    for _ in 0..3 {
        hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"idle","version":"0.1.0","writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#);
    }
    let tickets = f.state()["workers"]["evil"]["tickets"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(tickets, 2, "{}", f.state());
    // It cannot acknowledge good's ticket: good's books do not move.
    let good_before = f.state()["workers"]["good"]["tickets"].clone();
    hb(br#"{"format":"airlock.heartbeat/v1","name":"evil","state":"busy","version":"1","taken":[1,2,3],"writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#);
    let good_after = f.state()["workers"]["good"]["tickets"].clone();
    assert_eq!(good_before["0"], good_after["0"]);
    assert_eq!(
        good_before.as_array().map(Vec::len),
        good_after.as_array().map(Vec::len)
    );
}

/// A job re-dispatched away from a lost worker: what the lost worker drops later is refused
/// (`fleet-superseded` in the ledger), never gated; `fleet revoke` makes a worker exit.
#[test]
fn a_superseded_job_is_refused_and_a_revoked_worker_exits() {
    let mut f = Fleet::new(false);
    f.enroll("a");
    f.enroll("b");
    // a heartbeats once (written where its URL points: a file:// store), then vanishes.
    let hb = f.home.join("store/fleet/a/heartbeat.json");
    std::fs::create_dir_all(hb.parent().unwrap()).unwrap();
    std::fs::write(&hb, br#"{"format":"airlock.heartbeat/v1","name":"a","state":"idle","version":"0.7.0","writes":["airlock.packet/v1","urn:airlock:predicate:artifact:v1"]}"#).unwrap();
    let jobs = f.submit(1, &[]);
    f.tick();
    let st = f.state();
    assert_eq!(
        st["workers"]["a"]["tickets"][0]["job"],
        jobs[0].as_str(),
        "{st}"
    );
    // The ticket, opened with a's own key (what a would do), and its job run by hand later.
    let sealed = std::fs::read(f.home.join("store/fleet/a/mailbox/0.age")).unwrap();
    let a_key = std::fs::read_to_string(f.key_dir("a").join("worker.key")).unwrap();
    let id = airlock_core::seal::Identity::parse(&a_key).unwrap();
    let plain = airlock_core::seal::open(&id, &sealed, 1 << 20).unwrap();
    let ticket: serde_json::Value = serde_json::from_slice(&plain).unwrap();
    assert_eq!(ticket["job"], jobs[0].as_str());
    wait_until("a to be marked lost", Duration::from_secs(30), || {
        f.tick();
        f.state()["workers"]["a"]["lost"] == true
    });
    let st = f.state();
    let new_job = st["superseded"][&jobs[0]]
        .as_str()
        .expect("re-dispatched")
        .to_owned();
    // b serves and finishes the new job.
    f.serve("b", &[]);
    wait_until("the new job gated", Duration::from_secs(120), || {
        f.tick();
        f.decisions().contains_key(&new_job) || f.cannot_sandbox()
    });
    if f.cannot_sandbox() {
        return;
    }
    // a comes back and runs the old ticket's token: its drop lands but is refused.
    let token = f.root.join("old.token");
    std::fs::write(&token, ticket["token"].as_str().unwrap()).unwrap();
    let out = run(cmd(&bin("airlock-worker"))
        .arg("run")
        .arg("--token-file")
        .arg(&token)
        .arg("--trusted-pub")
        .arg(f.home.join("trusted.pub"))
        .arg("--work-root")
        .arg(f.root.join("work"))
        .arg("--")
        .arg(f.root.join("gen.sh")));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let out = f.tick();
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("fleet-superseded"),
        "{}",
        show(&out)
    );
    assert!(
        !f.decisions().contains_key(&jobs[0]),
        "a superseded job was gated"
    );
    let audit = run(f.airlock().args(["audit", "show", &jobs[0], "--json"]));
    assert!(
        String::from_utf8_lossy(&audit.stdout).contains("fleet-superseded"),
        "{}",
        show(&audit)
    );
    // Revoke b: it reads the signed revocation and exits 0.
    let out = run(f.airlock().args(["fleet", "revoke", "b"]));
    assert!(out.status.success(), "{}", show(&out));
    let b = &mut f.workers[0].1;
    let end = Instant::now() + Duration::from_secs(30);
    let st = loop {
        if let Some(st) = b.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < end, "b did not exit after revoke");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(st.success(), "{}", f.log("b"));
    assert!(f.log("b").contains("revoked"), "{}", f.log("b"));
}
