#!/usr/bin/env bash
# Install the Debian packages untorn needs, only those missing (idempotent,
# and quick when everything is there: apt-get update runs only if needed).
set -euo pipefail

PKGS=(build-essential cmake pkg-config liburing-dev libcmocka-dev sqlite3
      libsqlite3-dev liblmdb-dev librocksdb-dev qemu-system-x86 xfsprogs
      e2fsprogs busybox-static linux-source-6.12 bc bison flex libelf-dev
      libssl-dev cpio xz-utils zstd gnuplot-nox
      python3-dev python3-pytest python3-venv python3-setuptools)

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
if ((${#missing[@]})); then
	echo "install-deps: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
