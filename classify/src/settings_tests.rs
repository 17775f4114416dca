//! The data-only reader of settings files (`settings.rs`): real shapes of data and of code.

use super::*;

#[test]
fn formats_that_cannot_name_code_are_not_read_for_it() {
    let golangci = b"linters:\n  default: none\n  settings:\n    nolintlint:\n      require-specific: false\nformatters:\n  enable:\n    - gofmt\n";
    assert!(!settings_name_code(".golangci.yaml", golangci));
    let custom =
        b"linters:\n  settings:\n    custom:\n      example:\n        path: ./example.so\n";
    assert!(settings_name_code(".golangci.yml", custom));
    assert!(!format_can_load_code(".editorconfig"));
    assert!(!format_can_load_code(".yamllint"));
    assert!(!format_can_load_code("tools/.yamllint.yml"));
    assert!(!format_can_load_code("web/.prettierignore"));
    // Ruff has no plugins (round six, from a development sample: Python's devguide).
    assert!(!format_can_load_code(".ruff.toml"));
    assert!(!format_can_load_code("ruff.toml"));
    assert!(format_can_load_code(".prettierrc"));
    assert!(format_can_load_code("pylintrc"));
}

#[test]
fn settings_that_name_code_are_told_from_plain_settings() {
    for plain in [
        &b"root = true\n[*]\nindent_style = space\n"[..],
        b"{\n  \"singleQuote\": true\n}\n",
        b"[flake8]\nmax-line-length = 80\n# plugins are not used here\n",
        b"BasedOnStyle: Google\nColumnLimit: 100\n",
        b"[*.kt]\nij_kotlin_imports_layout = *\nij_kotlin_allow_trailing_comma = true\n",
        b"<?xml version=\"1.0\"?>\n<module name=\"Checker\">\n  <module name=\"TreeWalker\">\n    <module name=\"AvoidStarImport\"/>\n  </module>\n</module>\n",
        b"linters:\n  settings:\n    depguard:\n      deny:\n        - github.com/stretchr/testify/require\n",
        b"<psalm errorLevel=\"4\" findUnusedCode=\"false\">\n  <projectFiles>\n    <directory name=\"src\"/>\n  </projectFiles>\n</psalm>\n",
        // Values of an array, and comments after them, are not keys (round six).
        b"[lint]\nselect = [\n    \"PGH\",  # pygrep-hooks\n    \"I\",    # isort\n]\n",
        b"line-length = 88  # no plugin here\n",
    ] {
        assert!(!names_code(plain), "{}", String::from_utf8_lossy(plain));
    }
    for code in [
        &b"{\n  \"plugins\": [\"./local-plugin.js\"]\n}\n"[..],
        b"[MASTER]\ninit-hook='import os; os.system(\"x\")'\n",
        b"require:\n  - ./lib/cop.rb\n",
        b"{ \"parser\": \"./my-parser.js\" }",
        b"[mypy]\nplugins = tools.mypy_plugin\n",
        b"plugins = [\"x\"]  # a plugin\n",
        b"--markup markdown\n--plugin junk\n",
        b"<psalm errorLevel=\"4\">\n  <plugins>\n    <pluginClass class=\"Psalm\\PhpUnitPlugin\\Plugin\"/>\n  </plugins>\n</psalm>\n",
        b"<psalm autoloader=\"tests/psalm-bootstrap.php\">\n</psalm>\n",
        // Vale's styles directory can hold scripts it runs (round thirteen, from round twelve's
        // set: aspect's bazel-lib).
        b"StylesPath = tools/lint/vale\nIgnoredScopes = code\n",
    ] {
        assert!(names_code(code), "{}", String::from_utf8_lossy(code));
    }
}
#[test]
fn dotfiles_of_unknown_tools_holding_data_only_are_told_from_code() {
    // Real shapes: Swift Package Index, swift-format, CLOMonitor, ignore lists of a license
    // checker and of helm-docs.
    for (path, data) in [
        (".spi.yml", &b"version: 1\nmetadata:\n  authors: \"Maintained by the Core Team.\"\nexternal_links:\n  documentation: \"https://docs.example.org\"\n"[..]),
        (".swift-format", b"{\n  \"indentation\" : {\n    \"spaces\" : 2\n  },\n  \"lineLength\" : 80,\n  \"noAssignmentInExpressions\" : {\n    \"allowedFunctions\" : [\n      \"XCTAssertNoThrow\"\n    ]\n  }\n}\n"),
        (".clomonitor.yml", b"# CLOMonitor metadata file\nexemptions:\n  - check: sbom\n    reason: \"Tracking Helm dependencies is not yet a stable practice.\"\n"),
        (".licenseignore", b".gitignore\n**/.gitignore\n*.md\nPackage@*.swift\n.github/*\n"),
        ("charts/.helmdocsignore", b"charts/fluent-bit\n# TODO\ncharts/loki\n"),
        (".empty-settings", b""),
        (".swift-format", b"{\n  \"rules\" : {\n    \"OrderedImports\" : true,\n    \"UseEarlyExits\" : false\n  }\n}\n"),
        // A filter's paths load nothing (round six, from a development sample:
        // geerlingguy/mac-dev-playbook's `.ansible-lint`).
        (".ansible-lint", b"---\nexclude_paths:\n  - roles/x.y\n  - .github/\nskip_list:\n  - yaml\n"),
        // Options files whose long options name no loader (round seven, from round six's
        // set: puppetlabs-apache's `.rspec` and `.puppet-lint.rc`).
        (".rspec", b"--color\n--format documentation\n"),
        (
            ".puppet-lint.rc",
            b"--fail-on-warnings\n--relative\n--no-80chars-check\n--no-autoloader_layout-check\n--ignore-paths=spec/**/*.pp,vendor/**/*.pp\n",
        ),
        // A comment after a list item is prose (the Salt nginx formula's `.salt-lint`).
        (
            ".salt-lint",
            b"---\nexclude_paths: []\nrules: {}\nskip_list:\n  - 205  # Use \".sls\" as a Salt State file extension\n",
        ),
    ] {
        assert!(data_only_dotfile(path, data), "{path}");
    }
    for (path, code) in [
        // Ruby run by IRB and SimpleCov, options of a test runner, an environment file.
        (".irbrc", &b"def reload!\n  load 'x.rb'\nend\n"[..]),
        (
            ".simplecov",
            b"SimpleCov.start do\n  add_filter '/spec/'\nend\n",
        ),
        (".rspec", b"--format progress\n--require spec_helper\n"),
        (".puppet-lint.rc", b"--relative\n--plugin ./lib/check.rb\n"),
        (".opts", b"-r spec_helper\n"),
        (".ackrc", b"--ignore-dir=build\n--pager=less\n"),
        (".env", b"LOG_LEVEL=debug\n"),
        (".tool.env", b"NODE_OPTIONS=--require ./hook.js\n"),
        // Keys and values that name code.
        (".mocharc.yml", b"spec: test/**/*.spec.js\ntimeout: 5000\n"),
        (".mocharc.yml", b"require: ts-node/register\n"),
        (".foo.yml", b"on_save: ./scripts/fmt\n"),
        (".foo.yml", b"tool: rm -rf /\n"),
        (".foo.yml", b"exclude_hook: ./x.sh\n"),
        (
            ".zunit.yml",
            b"tap: false\ndirectories:\n  support: tests/_support\n",
        ),
        (
            ".markdownlint-cli2.yaml",
            b"customRules:\n  - \"./doc/rules/x.js\"\n",
        ),
        (".foo.json", b"{ \"plugins\": [\"x\"] }\n"),
        (".foo.toml", b"[hooks]\npre = \"make\"\n"),
        (
            ".copier-answers.yml",
            b"_src_path: gh:org/template\npython_package_command_line_name: x\n",
        ),
        (".foo.yml", b"script: |\n  echo hi\n"),
        (".thing", b"export PATH=$PATH:./bin\n"),
        (".deployignore", b"build $(curl x)\n"),
        (".bin", b"\xff\xfe"),
        (".trufflehogignore", b"tests/fixtures/\n"),
        (".checkov.yml", b"skip-check:\n  - CKV_AWS_20\n"),
        (
            ".formatter.exs",
            b"[\n  inputs: [\"{mix,.formatter}.exs\"]\n]\n",
        ),
        (".dir-locals.el", b"((ruby-mode\n  (fill-column . 100)))\n"),
        (
            ".stestr.conf",
            b"[DEFAULT]\ntest_path=${OS_TEST_PATH:-./nova/tests}\n",
        ),
    ] {
        assert!(
            !data_only_dotfile(path, code),
            "{path}: {}",
            String::from_utf8_lossy(code)
        );
    }
}

#[test]
fn xml_rule_sets_name_code_by_element_and_attribute_names_only() {
    // Real lines (round twelve): Checkstyle's, PMD's and PHPMD's rule sets name built-in checks.
    for plain in [
        "<property name=\"fileExtensions\" value=\"java\"/>",
        "<rule ref=\"rulesets/java/junit.xml/JUnitTestsShouldIncludeAssert\"/>",
        "<!--module name=\"DesignForExtension\"/-->",
        "<description>RxJava PMD ruleset</description>",
    ] {
        assert!(!xml_names_code(plain), "{plain}");
    }
    for code in [
        "<pluginClass class=\"Psalm\\PhpUnitPlugin\\Plugin\"/>",
        "<phpunit bootstrap=\"vendor/autoload.php\">",
        "<psalm autoloader=\"x.php\">",
        "<xi:include href=\"other.xml\"/>",
        "<extensions>",
        "<rule name=\"X\" class=\"App\\Rules\\X\">",
    ] {
        assert!(xml_names_code(code), "{code}");
    }
}
