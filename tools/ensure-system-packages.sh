#!/usr/bin/env bash
# System packages the tests need and pip cannot provide: Debian's Chromium (driven by Playwright through
# executable_path, no browser download), git (the CI workflow and --changed-since tests) and curl (the workflows'
# API calls). Installed only when missing; as root directly, otherwise through sudo.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v git >/dev/null 2>&1 || need+=(git)
command -v curl >/dev/null 2>&1 || need+=(curl)
[ "${#need[@]}" -eq 0 ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
echo "installing system packages: ${need[*]}" >&2
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
