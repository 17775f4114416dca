#!/usr/bin/env bash
# Installs the `airlock` CLI on a CI runner and restores its home (.airlock/) from secrets.
#
# Environment (set from repository secrets and variables in the workflow):
#   AIRLOCK_GIT          git URL of the airlock repository to build from
#   AIRLOCK_REF          tag or commit to build (pin it)
#   AIRLOCK_TRUSTED_KEY  the trusted private key, PKCS#8 PEM (a secret: .airlock/trusted.key)
#   AIRLOCK_TRUSTED_PUB  the trusted public key, SPKI PEM (.airlock/trusted.pub)
#   AIRLOCK_CONFIG       config.toml (store URL; a secret if the URL names anything private)
# Store credentials (AWS_*, GOOGLE_*, AZURE_*) are read by airlock from the environment.
set -euo pipefail
: "${AIRLOCK_GIT:?set the AIRLOCK_GIT repository secret}"
: "${AIRLOCK_REF:?set the AIRLOCK_REF repository secret (a tag or commit)}"
if ! command -v airlock >/dev/null 2>&1; then
    cargo install --locked --git "$AIRLOCK_GIT" --rev "$AIRLOCK_REF" airlock
fi
home="${AIRLOCK_HOME:-.airlock}"
mkdir -p "$home"
umask 077
printf '%s\n' "$AIRLOCK_TRUSTED_KEY" > "$home/trusted.key"
printf '%s\n' "$AIRLOCK_TRUSTED_PUB" > "$home/trusted.pub"
printf '%s\n' "$AIRLOCK_CONFIG" > "$home/config.toml"
airlock --version
