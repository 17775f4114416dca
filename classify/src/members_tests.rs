use super::*;

#[test]
fn workspace_members_are_read_from_each_build_system() {
    let cargo = "[package]\nmembers = [\"not-here\"]\n[workspace]\nmembers = [\"tracing\", \"crates/*\"]\n[workspace.dependencies]\nx = \"1\"\n";
    assert_eq!(members("Cargo.toml", cargo), ["tracing", "crates"]);
    let over_lines = "[workspace]\nmembers = [\n  \"a\",\n  # \"commented\",\n  'b', # why\n]\nexclude = [\"c\"]\n";
    assert_eq!(members("sub/Cargo.toml", over_lines), ["a", "b"]);
    assert_eq!(
        members(
            "package.json",
            r#"{"workspaces": ["packages/*", "./site"]}"#
        ),
        ["packages", "site"]
    );
    assert_eq!(
        members(
            "package.json",
            r#"{"workspaces": {"packages": ["apps/web"]}}"#
        ),
        ["apps/web"]
    );
    let cmake = "add_subdirectory(src)\nADD_SUBDIRECTORY( \"example\" )\n# add_subdirectory(old)\nmy_add_subdirectory(no)\nadd_subdirectory(${GEN_DIR} gen)\n";
    assert_eq!(members("CMakeLists.txt", cmake), ["src", "example"]);
    assert_eq!(
        members("cmake/x.cmake", "add_subdirectory(tools)"),
        ["tools"]
    );
    assert_eq!(
        members("meson.build", "subdir('tools')\nsubdir(\"doc\")\n"),
        ["tools", "doc"]
    );
    // Other files, and members that name nothing literal, name nothing.
    assert!(members("Makefile", "add_subdirectory(x)").is_empty());
    assert!(members("Cargo.toml", "[workspace]\nmembers = [\"*\", \"$x\"]\n").is_empty());
    assert!(members("package.json", "{not json").is_empty());
}

#[test]
fn hostile_manifests_are_read_within_limits() {
    let many: String = (0..1000)
        .map(|i| format!("add_subdirectory(d{i})\n"))
        .collect();
    assert_eq!(members("CMakeLists.txt", &many).len(), MAX_MEMBERS);
    let list: String = (0..1000).map(|i| format!("\"m{i}\",")).collect();
    assert_eq!(
        members("Cargo.toml", &format!("[workspace]\nmembers = [{list}]")).len(),
        MAX_MEMBERS
    );
    // Multi-byte text, unclosed lists and calls, NULs: no panic, nothing invented.
    for text in [
        "[workspace]\nmembers = [\"\u{202e}ä\", \"é",
        "add_subdirectory(",
        "ÄDD_SUBDIRECTORY(é)\u{0}add_subdirectory(\u{202e}x)",
        "subdir(",
        "\u{0}\u{0}[workspace\u{0}]",
    ] {
        for name in [
            "Cargo.toml",
            "CMakeLists.txt",
            "meson.build",
            "package.json",
        ] {
            let _ = members(name, text);
        }
    }
    assert_eq!(
        members("CMakeLists.txt", "add_subdirectory(\u{202e}x)"),
        ["\u{202e}x"]
    );
}
