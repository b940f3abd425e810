#!/usr/bin/env bash
# Installs moto's S3 server (the HTTP tests' S3 backend) with pip when missing.
set -euo pipefail
command -v moto_server >/dev/null 2>&1 && exit 0
echo "Installing moto (S3 test server) with pip" >&2
if python3 -m pip install --quiet 'moto[s3]' flask flask-cors; then exit 0; fi
# A Debian Python that refuses system-wide pip installs: install for this user.
python3 -m pip install --quiet --user --break-system-packages 'moto[s3]' flask flask-cors
