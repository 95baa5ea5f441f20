#!/bin/bash
# Build the untorn guest kernel, unpatched and patched, from Debian's
# linux-source-6.12 and cache both images.
#
#   build.sh                  build (or reuse from cache) both images
#   build.sh --print          print the cached paths, exit 1 if not cached
#   build.sh --unpatched-only build only the unpatched image
#
# The last two lines of output are always (on success):
#   UNPATCHED=/abs/path/bzImage-unpatched
#   PATCHED=/abs/path/bzImage-patched
#
# Environment:
#   UNTORN_KBUILD  build dir, outside the repository (/var/tmp/untorn-kbuild)
#   UNTORN_KCACHE  image cache (/var/cache/untorn/kernel)
#   UNTORN_CCACHE  ccache dir, used if ccache is installed
#                  (/var/cache/untorn/ccache); UNTORN_CCACHE=off disables
#   UNTORN_JOBS    make -j value (nproc)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
KBUILD=${UNTORN_KBUILD:-/var/tmp/untorn-kbuild}
KCACHE=${UNTORN_KCACHE:-/var/cache/untorn/kernel}
CCDIR=${UNTORN_CCACHE:-/var/cache/untorn/ccache}
JOBS=${UNTORN_JOBS:-$(nproc)}
TARBALL=/usr/src/linux-source-6.12.tar.xz
SRCPKG=linux-source-6.12
TREE=$KBUILD/linux-source-6.12
LOGDIR=$KBUILD/logs
# Bump when the way images are built changes (invalidates the cache).
RECIPE=2

MODE=build
[ "${UNTORN_BUILD_LIB:-0}" = 1 ] || case "${1:-}" in
	--print) MODE=print ;;
	--unpatched-only) MODE=unpatched ;;
	"") ;;
	-h|--help) sed -n '2,20p' "$0"; exit 0 ;;
	*) echo "usage: $0 [--print|--unpatched-only]" >&2; exit 2 ;;
esac

log() { echo "[build.sh $(date +%H:%M:%S)] $*" >&2; }

# ---------------------------------------------------------------- packages
ensure_packages() {
	local want=(linux-source-6.12 build-essential bc bison flex libelf-dev
		    libssl-dev cpio xz-utils git ccache) missing=() p
	for p in "${want[@]}"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q 'install ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		log "installing: ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq >&2
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
	fi
}

# ---------------------------------------------------------------- hash
series_patches() {
	# Patch names from the series file, ignoring comments and blanks.
	sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$HERE/series" | grep -v '^$' || true
}

tarball_id() {
	local v
	v=$(dpkg-query -W -f='${Version}' "$SRCPKG" 2>/dev/null || echo none)
	echo "$SRCPKG $v $(stat -c '%s %Y' "$TARBALL" 2>/dev/null || echo missing)"
}

compute_hash() {
	{
		echo "recipe $RECIPE"
		tarball_id
		echo "== series"; cat "$HERE/series"
		local p
		for p in $(series_patches); do
			echo "== $p"; cat "$HERE/patches/$p"
		done
		echo "== config.fragment"; cat "$HERE/config.fragment"
	} | sha256sum | cut -c1-16
}

print_paths() {
	echo "UNPATCHED=$1/bzImage-unpatched"
	echo "PATCHED=$1/bzImage-patched"
}

# ---------------------------------------------------------------- tree
# The tree is a git repository whose single commit is the pristine tarball,
# so an interrupted run is undone with a checkout instead of a re-unpack.
prepare_tree() {
	local id; id=$(tarball_id)
	if [ -d "$TREE/.git" ] && [ "$(cat "$TREE/.untorn-tarball" 2>/dev/null)" = "$id" ] &&
	   git -C "$TREE" rev-parse -q --verify refs/tags/untorn-baseline >/dev/null; then
		log "resetting $TREE to the pristine baseline"
		git -C "$TREE" checkout -q -f untorn-baseline -- . 2>/dev/null || true
		git -C "$TREE" reset -q --hard untorn-baseline
		git -C "$TREE" clean -q -fd
		return
	fi
	log "unpacking $TARBALL into $KBUILD"
	rm -rf "$TREE" "$KBUILD/unpack.tmp"
	mkdir -p "$KBUILD/unpack.tmp"
	tar -C "$KBUILD/unpack.tmp" -xf "$TARBALL"
	mv "$KBUILD/unpack.tmp/linux-source-6.12" "$TREE"
	rmdir "$KBUILD/unpack.tmp"
	log "recording the baseline (git)"
	(
		cd "$TREE"
		git init -q
		git config user.name "untorn build"
		git config user.email "dev@untorn.example"
		git config core.autocrlf false
		git add -A -f .
		git commit -q -m "linux-source-6.12 baseline ($id)"
		git tag untorn-baseline
	)
	echo "$id" > "$TREE/.untorn-tarball"
	git -C "$TREE" update-index -q --refresh >/dev/null || true
	echo ".untorn-tarball" >> "$TREE/.git/info/exclude"
}

configure_tree() {
	log "configuring: x86_64_defconfig + config.fragment"
	(
		cd "$TREE"
		make -s "${MAKEVARS[@]}" x86_64_defconfig >/dev/null
		scripts/kconfig/merge_config.sh -m -O . .config "$HERE/config.fragment" \
			> "$LOGDIR/merge_config.log" 2>&1
		make -s "${MAKEVARS[@]}" olddefconfig >/dev/null
		# Every option the fragment asks for must have survived olddefconfig.
		local bad=0 line opt
		while read -r line; do
			case "$line" in
			CONFIG_*=*)
				grep -qxF "$line" .config && continue ;;
			"# CONFIG_"*" is not set")
				opt=${line#\# }; opt=${opt%% *}
				grep -q "^$opt=" .config || continue ;;
			*) continue ;;
			esac
			log "config: '$line' did not survive olddefconfig"
			bad=1
		done < "$HERE/config.fragment"
		[ $bad = 0 ] || { log "config fragment not applied cleanly"; exit 1; }
	)
}

# make with the output in a log file; print a progress line every minute.
run_make() {
	local name=$1 logf="$LOGDIR/$1.log" t0 pid rc=0
	t0=$(date +%s)
	log "make -j$JOBS bzImage ($name), log: $logf"
	( cd "$TREE" && exec make -j"$JOBS" "${MAKEVARS[@]}" bzImage ) > "$logf" 2>&1 &
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		for _ in $(seq 60); do
			sleep 1
			kill -0 $pid 2>/dev/null || break
		done
		if kill -0 $pid 2>/dev/null; then
			log "  $name: $(( $(date +%s) - t0 ))s, $(grep -c '^  [A-Z]' "$logf" || true) steps, last: $(grep '^  [A-Z]' "$logf" | tail -1 | sed 's/^ *//')"
		fi
	done
	wait $pid || rc=$?
	if [ $rc -ne 0 ]; then
		log "$name build FAILED (rc=$rc); errors:"
		grep -E 'error:|Error [0-9]|undefined reference' "$logf" | head -40 >&2 || true
		tail -5 "$logf" >&2
		exit 1
	fi
	grep -E 'warning:' "$logf" | head -20 >&2 || true
	BUILD_SECS=$(( $(date +%s) - t0 ))
	log "$name build took ${BUILD_SECS}s ($(( BUILD_SECS / 60 ))m$(( BUILD_SECS % 60 ))s)"
}

store() {	# store <src> <dst> <latest-link-name>
	cp "$1" "$2.tmp.$$"
	mv -f "$2.tmp.$$" "$2"
	ln -sfn "$2" "$KCACHE/$3"
}

apply_series() {
	local p n=0
	for p in $(series_patches); do
		git -C "$TREE" apply --index "$HERE/patches/$p" ||
			{ log "patch $p does not apply"; exit 1; }
		n=$((n + 1))
	done
	log "applied $n patch(es)"
}

setup_make_env() {
	MAKEVARS=()
	if [ "$CCDIR" != off ] && command -v ccache >/dev/null; then
		mkdir -p "$CCDIR"
		export CCACHE_DIR=$CCDIR CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-5G}
		MAKEVARS+=(CC="ccache gcc")
	fi
	export KBUILD_BUILD_USER=untorn KBUILD_BUILD_HOST=untorn
}

take_lock() {
	mkdir -p "$KBUILD" "$LOGDIR"
	exec 9>"$KBUILD/.lock"
	flock -n 9 || { log "another build holds $KBUILD/.lock; waiting"; flock 9; }
}

# check-series.sh sources this file for the functions above.
[ "${UNTORN_BUILD_LIB:-0}" = 1 ] && return 0

# ---------------------------------------------------------------- main
HASH=$(compute_hash)
OUT=$KCACHE/$HASH

if [ "$MODE" = print ]; then
	if [ -f "$OUT/bzImage-unpatched" ] && [ -f "$OUT/bzImage-patched" ]; then
		print_paths "$OUT"; exit 0
	fi
	echo "not cached: $OUT" >&2; exit 1
fi

if [ "$MODE" = build ] && [ -f "$OUT/bzImage-unpatched" ] && [ -f "$OUT/bzImage-patched" ]; then
	log "cached ($HASH), nothing to build"
	print_paths "$OUT"; exit 0
fi

ensure_packages
mkdir -p "$KCACHE"
take_lock
setup_make_env

T0=$(date +%s)
prepare_tree
configure_tree
mkdir -p "$OUT"

if [ -f "$OUT/bzImage-unpatched" ]; then
	log "unpatched image already cached"
else
	run_make unpatched
	store "$TREE/arch/x86/boot/bzImage" "$OUT/bzImage-unpatched" latest-unpatched
	cp "$TREE/.config" "$OUT/config"
	UNPATCHED_SECS=$BUILD_SECS
fi

if [ "$MODE" = unpatched ]; then
	echo "UNPATCHED=$OUT/bzImage-unpatched"
	exit 0
fi

apply_series
run_make patched
store "$TREE/arch/x86/boot/bzImage" "$OUT/bzImage-patched" latest-patched
PATCHED_SECS=$BUILD_SECS

log "timings: unpatched ${UNPATCHED_SECS:-cached}s, patched (incremental) ${PATCHED_SECS}s, total $(( $(date +%s) - T0 ))s"
print_paths "$OUT"
