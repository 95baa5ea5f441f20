#!/bin/sh
# install_pkgconfig.sh BUILD_DIR - what a user does: `cmake --install` into a
# fresh prefix, then build and run a program that finds untorn through
# pkg-config alone (shared library, and the static one with --static).
set -eu
build=$1
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/share/man/man1/untorn.1" || {
	echo "cmake --install did not install share/man/man1/untorn.1" >&2
	exit 1
}
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/$(gcc -print-multiarch)/pkgconfig"
cat >"$prefix/use.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <untorn.h>
int main(int argc, char **argv)
{
	ut_db *db;
	ut_txn *t;
	void *v;
	size_t n;
	int rc;

	(void)argc;
	if ((rc = ut_open(argv[1], NULL, &db)) || (rc = ut_begin(db, 0, &t)) ||
	    (rc = ut_put(t, "key", 3, "value", 5)) || (rc = ut_commit(t)) ||
	    (rc = ut_begin(db, UT_RDONLY, &t)) || (rc = ut_get(t, "key", 3, &v, &n))) {
		fprintf(stderr, "use: %s\n", ut_strerror(rc));
		return 1;
	}
	rc = n == 5 && !memcmp(v, "value", 5) ? 0 : 1;
	free(v);
	ut_abort(t);
	return ut_close(db) || rc;
}
C
libdir=$(pkg-config --variable=libdir untorn)
gcc -Wall -Werror -o "$prefix/use" "$prefix/use.c" \
	$(pkg-config --cflags --libs untorn) -Wl,-rpath,"$libdir"
"$prefix/use" "$prefix/shared.db"
gcc -Wall -Werror -static-libgcc -o "$prefix/use_static" "$prefix/use.c" \
	$(pkg-config --cflags untorn) "$libdir/libuntorn.a" \
	$(pkg-config --static --libs-only-l untorn | sed 's/-luntorn//')
"$prefix/use_static" "$prefix/static.db"
echo "install + pkg-config: shared and static programs ran"
