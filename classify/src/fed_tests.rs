//! Tests of `fed.rs`: what command lines hand programs.
use super::*;

fn files(line: &str) -> Vec<String> {
    fed(line).files
}

#[test]
fn files_handed_to_a_program_as_its_code_or_its_dependencies() {
    assert_eq!(files("pip install -r app/reqs.txt"), ["app/reqs.txt"]);
    assert_eq!(
        files("uv pip install -c constraints/ci.txt -e ."),
        ["constraints/ci.txt"]
    );
    assert_eq!(
        files("python -m pip install --requirement=deps/x.in"),
        ["deps/x.in"]
    );
    assert_eq!(
        files("psql -v ON_ERROR_STOP=1 -f db/seed.sql"),
        ["db/seed.sql"]
    );
    assert_eq!(files("just -f app/jf build"), ["app/jf"]);
    assert_eq!(files("cmake -P cmake/gen.cmake"), ["cmake/gen.cmake"]);
    assert_eq!(files("sh < app/install.txt"), ["app/install.txt"]);
    assert_eq!(files("python3 - <app/inline"), ["app/inline"]);
    assert_eq!(
        files(r#"bash -c "$(cat app/setup.txt)""#),
        ["app/setup.txt"]
    );
    assert_eq!(files("source <(cat app/env.txt)"), ["app/env.txt"]);
    assert_eq!(files("- run: source app/vars.txt"), ["app/vars.txt"]);
    assert_eq!(files("cd x && . ./env.sh.in"), ["./env.sh.in"]);
    assert_eq!(files("bash --rcfile ci/rc"), ["ci/rc"]);
    assert_eq!(files(r#"Rscript -e 'source("app/a.txt")'"#), ["app/a.txt"]);
    assert_eq!(
        files(r#"python -c "exec(open('app/b.txt').read())""#),
        ["app/b.txt"]
    );
    assert_eq!(files("ruby -r ./app/c.txt -e 1"), ["./app/c.txt"]);
    assert_eq!(files("xargs -a app/e.txt -n1 pip install"), ["app/e.txt"]);
    assert_eq!(
        files("bundle install --gemfile app/Gemfile.ci"),
        ["app/Gemfile.ci"]
    );
    assert_eq!(files("conda env create -f app/env.ci"), ["app/env.ci"]);
    assert_eq!(files("export BASH_ENV=app/f.txt"), ["app/f.txt"]);
    assert_eq!(
        files("terraform apply -var-file=app/vars.txt"),
        ["app/vars.txt"]
    );
}

#[test]
fn data_read_by_other_commands_is_not_fed() {
    assert!(files("gcc -c src/a.c -o a.o").is_empty());
    assert!(files("rm -f out.txt").is_empty());
    assert!(files("tar -xf x.tar").is_empty());
    assert!(files("wc -l < data/x.txt").is_empty());
    assert!(files("echo $(cat VERSION)").is_empty());
    assert!(files("cat <<EOF").is_empty());
    assert!(files("git commit -F msg.txt").is_empty());
    assert!(files("pytest --junit-xml=out.xml --log-file=test.log").is_empty());
}

#[test]
fn a_deno_configuration_is_read_for_its_tasks_only() {
    let conf = r#"{"exports": "./mod.ts", "tasks": {"gen": "deno run -A tools/gen.ts"}}"#;
    assert!(deno_tasks(conf).contains("tools/gen.ts"));
    assert!(!deno_tasks(conf).contains("mod.ts"));
    assert!(deno_tasks("// comment\n{\"tasks\": {\"a\": \"sh x.sh\"}}").contains("x.sh"));
    // What does not parse names everything it says.
    let odd = "{\"tasks\": {\"a\": \"sh x.sh\"} /* c */}";
    assert_eq!(deno_tasks(odd), odd);
}

#[test]
fn cargo_run_names_the_binary_or_example_by_cargos_layout() {
    assert_eq!(
        files("cargo run --release --bin gen -- --out x"),
        ["src/bin/gen.rs", "src/bin/gen/main.rs"]
    );
    assert_eq!(
        files("cargo run --example=demo"),
        ["examples/demo.rs", "examples/demo/main.rs"]
    );
    assert!(files("cargo build --bin gen").is_empty());
    assert!(files("cargo run --bin ../x").is_empty());
}

#[test]
fn go_run_names_a_file_or_a_package_directory() {
    assert_eq!(
        fed("go run ./cmd/gen").packages,
        [("./cmd/gen".to_owned(), false)]
    );
    assert_eq!(
        fed("go run -tags x ./tools/...").packages,
        [("./tools".to_owned(), true)]
    );
    assert_eq!(fed("go run gen/main.go -out x").files, ["gen/main.go"]);
    assert!(fed("go run golang.org/x/tools/cmd/stringer")
        .packages
        .is_empty());
    let mut tree = crate::tree::MemTree::new();
    for p in [
        "cmd/gen/main.go",
        "cmd/gen/main_test.go",
        "cmd/gen/sub/x.go",
        "cmd/genx/y.go",
    ] {
        tree.add(p, false, b"package main\n");
    }
    let all = Paths::new(&tree, &[]);
    let files = |dir, deep| package_files(dir, deep, "", &all).map(|f| f.0);
    assert_eq!(
        files("./cmd/gen", false),
        Some(vec!["cmd/gen/main.go".to_owned()])
    );
    assert_eq!(
        files("cmd/gen", true),
        Some(vec![
            "cmd/gen/main.go".to_owned(),
            "cmd/gen/sub/x.go".to_owned()
        ])
    );
    assert_eq!(files("./cmd/none", false), None);
}

#[test]
fn launchers_playbooks_and_curl_options_are_fed() {
    assert_eq!(
        files("java -cp lib tools/Gen.java --out x"),
        ["tools/Gen.java"]
    );
    assert_eq!(files("swift scripts/gen.swift"), ["scripts/gen.swift"]);
    assert_eq!(
        files("kotlinc -script ci/check.main.kts"),
        ["ci/check.main.kts"]
    );
    assert_eq!(files("dotnet run tools/seed.cs"), ["tools/seed.cs"]);
    assert!(files("javac src/Main.java").is_empty());
    assert!(files("dotnet format --include src/a.cs").is_empty());
    assert!(files("dotnet build app/App.csproj").is_empty());
    assert_eq!(
        files("ansible-playbook -i deploy/hosts -e @deploy/vars.txt --limit web --check deploy/site.txt"),
        ["deploy/hosts", "deploy/vars.txt", "deploy/site.txt"]
    );
    assert_eq!(
        files("ansible-playbook --vault-password-file ci/pass play.yml"),
        ["ci/pass", "play.yml"]
    );
    assert!(files("ansible-playbook --tags web --user deploy").is_empty());
    assert_eq!(
        files("curl -sS -K ci/curlrc https://example.com"),
        ["ci/curlrc"]
    );
    assert!(files("tar -K x").is_empty());
}

#[test]
fn cargo_run_p_names_the_packages_binaries_and_build_script() {
    assert_eq!(fed("cargo run -p gen-docs --release").crates, ["gen-docs"]);
    assert_eq!(fed("cargo run --package=seed -- x").crates, ["seed"]);
    assert!(fed("cargo test -p gen").crates.is_empty());
    let mut tree = crate::tree::MemTree::new();
    for p in [
        "Cargo.toml",
        "crates/gen_docs/Cargo.toml",
        "crates/gen_docs/build.rs",
        "crates/gen_docs/src/main.rs",
        "crates/gen_docs/src/bin/extra.rs",
        "crates/gen_docs/src/lib.rs",
        "crates/gen_docs_x/Cargo.toml",
        "crates/gen_docs_x/src/main.rs",
        "gen-docs/README.md",
    ] {
        tree.add(p, false, b"x\n");
    }
    let all = Paths::new(&tree, &[]);
    let found = crate_files("gen-docs", &all);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].1, "crates/gen_docs");
    assert_eq!(
        found[0].0,
        [
            "crates/gen_docs/build.rs",
            "crates/gen_docs/src/bin/extra.rs",
            "crates/gen_docs/src/main.rs"
        ]
    );
    assert!(crate_files("none", &all).is_empty());
}

#[test]
fn go_run_of_an_import_path_names_the_trees_package() {
    assert_eq!(
        fed("go run -tags ci example.com/acme/tool/cmd/gen -out x").modules,
        [("example.com/acme/tool/cmd/gen".to_owned(), false)]
    );
    assert!(fed("go run golang.org/x/tools/cmd/stringer@v0.20.0")
        .modules
        .is_empty());
    let mut tree = crate::tree::MemTree::new();
    for p in [
        "go.mod",
        "cmd/gen/main.go",
        "cmd/gen/main_test.go",
        "vendor/golang.org/x/tools/cmd/stringer/stringer.go",
        "docs/cmd/README.md",
    ] {
        tree.add(p, false, b"package main\n");
    }
    let all = Paths::new(&tree, &[]);
    let built_by = |line: &str| built(&fed(line), "", &all, || true);
    assert_eq!(
        built_by("go run example.com/acme/tool/cmd/gen"),
        [(vec!["cmd/gen/main.go".to_owned()], "cmd/gen".to_owned())]
    );
    assert_eq!(
        built_by("go run golang.org/x/tools/cmd/stringer -type T"),
        [(
            vec!["vendor/golang.org/x/tools/cmd/stringer/stringer.go".to_owned()],
            "vendor/golang.org/x/tools/cmd/stringer".to_owned()
        )]
    );
    assert!(built_by("go run example.com/acme/tool/cmd/other").is_empty());
}
