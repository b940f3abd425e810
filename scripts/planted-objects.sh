#!/usr/bin/env bash
# Peak memory, local disk and time of the replica that meets planted objects and a hostile
# WebDAV server (figures for README "What Concord survives"; not part of `make test`):
#   CONCORD=.build/release/concord scripts/planted-objects.sh
# Uses a key file (no Argon2id: its 64 MiB would hide what a sync costs) and a folder
# remote; the HTTP cases run scripts/hostile-webdav.py over that folder. Prints one line
# per case from /usr/bin/time (elapsed, peak resident) and the local blob directory's size.
set -euo pipefail
C=${CONCORD:-$(pwd)/.build/release/concord}
HOSTILE=$(cd "$(dirname "$0")" && pwd)/hostile-webdav.py
W=$(mktemp -d "${TMPDIR:-/tmp}/concord-planted.XXXXXX"); cd "$W"
trap 'rm -rf "$W"' EXIT
K="--key-file $W/store.key"
measure() { local label=$1; shift; /usr/bin/time -f "$label: %e s, %M KB peak" "$@" >/dev/null 2>>time.log || true; tail -1 time.log; }
$C init --name a --store a.db >/dev/null
$C remote set "file://$W/remote" --create $K --store a.db >/dev/null
head -c 4194304 /dev/urandom > four.bin
$C attach saves s1 data four.bin --store a.db >/dev/null
for i in 1 2 3 4 5 6 7; do $C put notes n$i title=t$i --store a.db >/dev/null; $C sync --store a.db >/dev/null; done
measure "baseline: a plain sync" $C sync --store a.db
blob=$(cd remote && find blobs -type f | head -1)
cp "remote/$blob" "$W/blob.good"
for n in b c; do $C init --name $n --store $n.db >/dev/null; $C remote set "file://$W/remote" $K --store $n.db >/dev/null; done

# HTTP: an endless body at the file's name; then 200 MiB answers to every Depth 1 PROPFIND.
for mode in endless bigpropfind; do
  port=$((20000 + RANDOM % 20000))
  python3 "$HOSTILE" "$W/remote/" $port $mode & pid=$!
  sleep 1
  $C init --name h-$mode --store h-$mode.db >/dev/null
  $C remote set "http://127.0.0.1:$port/dav/" $K --store h-$mode.db >/dev/null 2>&1 || true
  measure "WebDAV, $mode: sync --pull-only" $C sync --pull-only --store h-$mode.db
  echo "  local blob directory: $(du -sk h-$mode.db.blobs 2>/dev/null | cut -f1) KB"
  kill $pid
done

# A 3 GiB sparse file at the file's name; b syncs twice.
truncate -s 0 "remote/$blob"; truncate -s 3G "remote/$blob"
measure "folder, 3 GiB sparse file at a file's name: sync" $C sync --store b.db
measure "  again" $C sync --store b.db
echo "  local blob directory: $(du -sk b.db.blobs | cut -f1) KB"
# A 4 GiB one; a new replica c syncs.
truncate -s 4G "remote/$blob"
measure "folder, 4 GiB sparse file at a file's name: a new replica's sync" $C sync --store c.db
echo "  local blob directory: $(du -sk c.db.blobs | cut -f1) KB"
measure "folder, 4 GiB sparse file at a file's name: doctor" $C doctor --store a.db
# a compacts, its heads are deleted, its snapshot becomes a 4 GiB sparse file; a syncs.
cp "$W/blob.good" "remote/$blob"
$C compact --store a.db >/dev/null || true
snap=$(cd remote && find snapshots -type f | head -1)
rm -f remote/heads/*
truncate -s 0 "remote/$snap"; truncate -s 4G "remote/$snap"
measure "folder, own heads deleted and a 4 GiB sparse file at its own snapshot: sync" $C sync --store a.db
measure "  doctor" $C doctor --store a.db
