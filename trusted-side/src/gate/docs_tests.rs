//! Every reason code the gate, the policy and fetch can emit is documented in
//! `docs/FORMATS.md` ("Gate decisions and reason codes").

#[test]
fn every_reason_code_is_documented_in_formats_md() {
    let doc_path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/FORMATS.md");
    let doc = std::fs::read_to_string(&doc_path).expect("docs/FORMATS.md");
    let section = doc
        .split("## Gate decisions and reason codes")
        .nth(1)
        .expect("section present");
    let mut missing = Vec::new();
    let all = super::checks::code::ALL
        .iter()
        .chain(super::checks::FETCH_CODES)
        .chain(super::policy::REASON_CODES);
    for code in all {
        if !section.contains(&format!("| `{code}` |")) {
            missing.push(*code);
        }
    }
    assert!(missing.is_empty(), "undocumented reason codes: {missing:?}");
}
