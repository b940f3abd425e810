#!/usr/bin/env bash
# Starts a one-node Ceph cluster on loopback with a RADOS Gateway (S3) in front of it:
# one monitor, one OSD keeping its data in memory (memstore), one radosgw, no manager.
# Used by the HTTP tests (ConcordTestServers) and the backend benchmarks.
#
#   scripts/start-rgw.sh DIR RGW_PORT MON_PORT_V2 MON_PORT_V1 ACCESS_KEY SECRET_KEY
#
# Everything (config, keyrings, sockets, logs, pids) lives below DIR. When the gateway
# answers and the S3 user exists, DIR/ready is written. The script then waits; stopping
# it (TERM, INT or its end) stops the three daemons.
set -euo pipefail

dir=$1 rgw_port=$2 mon_v2=$3 mon_v1=$4 access_key=$5 secret_key=$6
mkdir -p "$dir"/{mon,osd,run,log}
conf=$dir/ceph.conf
fsid=$(cat /proc/sys/kernel/random/uuid)

cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]
mon initial members = a
public network = 127.0.0.0/8
auth cluster required = none
auth service required = none
auth client required = none
ms mon client mode = crc
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
run dir = $dir/run
admin socket = $dir/run/\$name.asok
pid file = $dir/run/\$name.pid
log file = $dir/log/\$name.log
keyring = $dir/keyring
[mon]
mon data = $dir/mon/\$name
paxos propose interval = 0.05
paxos min wait = 0.01
mon warn on pool no redundancy = false
[osd]
osd data = $dir/osd/\$name
osd objectstore = memstore
memstore device bytes = 2147483648
osd max object size = 134217728
[client.rgw.a]
rgw frontends = beast endpoint=127.0.0.1:$rgw_port tcp_nodelay=1
rgw data = $dir/rgw
rgw thread pool size = 64
EOF

pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  sleep 0.5
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
}
trap stop EXIT
trap 'exit 143' TERM INT

monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_v2,v1:127.0.0.1:$mon_v1]" "$dir/monmap" >/dev/null
ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" >"$dir/log/mkfs.log" 2>&1
ceph-mon -c "$conf" -i a -f >>"$dir/log/mon.out" 2>&1 &
pids+=($!)

osd_uuid=$(cat /proc/sys/kernel/random/uuid)
osd_id=$(timeout 60 ceph -c "$conf" osd new "$osd_uuid")
mkdir -p "$dir/osd/osd.$osd_id"
ceph-osd -c "$conf" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" >>"$dir/log/mkfs.log" 2>&1
ceph-osd -c "$conf" -i "$osd_id" -f >>"$dir/log/osd.out" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
  timeout 10 ceph -c "$conf" osd stat 2>/dev/null | grep -q " 1 up" && break
  sleep 0.1
done

mkdir -p "$dir/rgw"
radosgw -c "$conf" -n client.rgw.a -f >>"$dir/log/rgw.out" 2>&1 &
pids+=($!)
timeout 60 radosgw-admin -c "$conf" user create --uid=concord --display-name=concord \
  --access-key="$access_key" --secret="$secret_key" >/dev/null
for _ in $(seq 1 600); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$rgw_port") 2>/dev/null; then
    touch "$dir/ready"
    break
  fi
  sleep 0.1
done
[ -f "$dir/ready" ] || { echo "radosgw did not listen on $rgw_port" >&2; exit 1; }
wait
