use super::*;

#[test]
fn patterns_stand_for_every_file_they_could_match() {
    assert_eq!(pattern("scripts/*.sh").as_deref(), Some("scripts/*.sh"));
    assert_eq!(
        pattern("scripts/build-${lang}.sh").as_deref(),
        Some("scripts/build-*.sh")
    );
    assert_eq!(pattern("tools/$(NAME).py").as_deref(), Some("tools/*.py"));
    assert_eq!(
        pattern("lang/build-${{matrix.lang}}.sh").as_deref(),
        Some("lang/build-*.sh")
    );
    assert_eq!(pattern("%ROOT%\\ci\\x.bat").as_deref(), Some("*/ci/x.bat"));
    assert_eq!(pattern("plain/name.sh"), None);
    assert_eq!(pattern("src/${id}/"), None, "a directory");
    assert_eq!(pattern("scripts/*"), None, "nothing literal in the name");
    assert!(matches("scripts/*.sh", "scripts/a.sh"));
    assert!(!matches("scripts/*.sh", "scripts/sub/a.sh"));
    assert!(matches("**/x.sh", "a/x.sh"));
    assert!(matches("s/b?ild-*.sh", "s/build-go.sh"));
    assert!(!matches("s/build-*.sh", "s/build-go.py"));
    assert_eq!(literal_dir("a/b/*.sh"), "a/b");
    assert_eq!(literal_dir("*.sh"), "");
    // Many stars cost linear time, not exponential.
    let long = format!("{}b", "*a".repeat(200));
    assert!(!wild(&long, &"a".repeat(5000)));
}

#[test]
fn kinds_count_the_lines_that_run_something() {
    let lines = |k, t: &str| -> Vec<String> {
        counted_lines(k, t)
            .into_iter()
            .map(|(l, _)| l.into_owned())
            .collect()
    };
    let docker = "FROM alpine\nCOPY tools/setup.sh /tmp/\nCOPY main.py /app/\nRUN apk add x \\\n  && sh /tmp/setup.sh\nCMD [\"python\", \"/app/main.py\"]\n";
    assert_eq!(
        lines(Kind::Dockerfile, docker),
        [
            "RUN apk add x \\",
            "  && sh /tmp/setup.sh",
            "COPY tools/setup.sh",
            // Counted for what it configures: `main.py` is source, which reach then leaves out
            // (`copied_config`).
            "COPY main.py"
        ]
    );
    // A directory copied onto the image's root is an overlay of its file system (`image.rs`);
    // one copied elsewhere is the product.
    let overlay = counted_lines(
        Kind::Dockerfile,
        "FROM alpine\nCOPY /root /\nCOPY src/ /app/\nRUN chown root /app\n",
    );
    let overlays: Vec<&str> = overlay
        .iter()
        .filter(|(_, a)| *a == Accept::Overlay)
        .map(|(l, _)| l.as_ref())
        .collect();
    assert_eq!(overlays, ["COPY /root"]);
    assert!(copied_config("images/base/initial-condarc"));
    assert!(copied_config("images/base/Rprofile.site"));
    assert!(!copied_config("app/main.py"));
    assert!(!copied_config("static/logo.png"));
    let bazel = "cc_library(\n  srcs = [\"a.py\"],\n)\ngenrule(\n  name = \"g\",\n  tools = [\"//tools:gen.sh\", \":local.py\"],\n)\n";
    let got = lines(Kind::Bazel, bazel);
    assert!(
        got.iter()
            .any(|l| l.contains("\"tools/gen.sh\"") && l.contains("\"local.py\"")),
        "{got:?}"
    );
    assert!(!got.iter().any(|l| l.contains("a.py")), "{got:?}");
    assert_eq!(
        lines(
            Kind::Cargo,
            "[package]\nname = \"x\"\nbuild = \"src/codegen.rs\"\n"
        ),
        ["build = \"src/codegen.rs\""]
    );
    let ci = "on:\n  push:\n    paths:\n      - 'src/**/*.py'\n      - scripts/x.sh\njobs:\n  t:\n    steps:\n      - run: scripts/*.sh\n";
    let got = lines(Kind::Generic, ci);
    assert!(
        !got.iter().any(|l| l.contains("src/**"))
            && !got.iter().any(|l| l.contains("scripts/x.sh")),
        "{got:?}"
    );
    assert!(
        got.iter().any(|l| l.contains("run: scripts/*.sh")),
        "{got:?}"
    );
}

#[test]
fn imports_of_python_and_javascript_scripts() {
    let py = imports(
        "ci/run.py",
        "import helpers.net\nfrom .local import thing\nfrom ..top import x as y\n",
    );
    for want in [
        "helpers/net.py",
        "ci/helpers/net.py",
        "ci/local.py",
        "ci/local/thing.py",
        "top.py",
    ] {
        assert!(py.iter().any(|p| p == want), "{want} not in {py:?}");
    }
    let js = imports(
        "tools/build.mjs",
        "import x from './lib/util'\nconst y = require(\"../shared/z.js\")\nimport 'left-pad'\n",
    );
    assert!(js.iter().any(|p| p == "tools/./lib/util.js"), "{js:?}");
    assert!(js.iter().any(|p| p == "tools/../shared/z.js"), "{js:?}");
    assert!(!js.iter().any(|p| p.contains("left-pad")), "{js:?}");
    assert!(imports("README.md", "import x").is_empty());
}

#[test]
fn nx_commands_name_their_projects() {
    assert_eq!(
        nx_projects("      - run: npx nx run web:build --prod"),
        Some(vec!["web".to_owned()])
    );
    assert_eq!(nx_projects("nx build api"), Some(vec!["api".to_owned()]));
    assert_eq!(nx_projects("pnpm nx run-many -t test"), Some(vec![]));
    assert_eq!(nx_projects("nx affected --target=lint"), Some(vec![]));
    assert_eq!(nx_projects("echo next"), None);
}

#[test]
fn gradle_settings_name_the_projects_they_include() {
    let text = "rootProject.name = 'r'\ninclude ':retrofit'\ninclude ':retrofit:java-test'\n\
                include(\":samples\", \":app\")\nincludeBuild(\"build-logic\")\n// include ':x'\n";
    assert_eq!(
        gradle_includes("settings.gradle", text),
        [
            "retrofit",
            "retrofit/java-test",
            "samples",
            "app",
            "build-logic"
        ]
    );
    assert!(gradle_includes("build.gradle", text).is_empty());
}
