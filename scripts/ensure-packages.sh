#!/usr/bin/env bash
# Installs the named Debian packages that are missing, and nothing else.
# Uses apt-get as root, sudo apt-get otherwise; runs `apt-get update` once, only when
# something is missing; waits for another apt process holding the lock.
set -euo pipefail

missing=()
for package in "$@"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then apt=(apt-get); else apt=(sudo apt-get); fi
export DEBIAN_FRONTEND=noninteractive

run_apt() {
  local attempt
  for attempt in $(seq 1 30); do
    if "${apt[@]}" "$@"; then return 0; fi
    status=$?
    # 100: the dpkg/apt lock is held by another process; wait and retry.
    [ "$status" -eq 100 ] || return "$status"
    echo "apt is busy (attempt $attempt); waiting…" >&2
    sleep 5
  done
  return 100
}

echo "Installing missing system packages: ${missing[*]}" >&2
run_apt update -qq
run_apt install -y -qq --no-install-recommends "${missing[@]}"
