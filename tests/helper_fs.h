/*
 * tests/helper_fs.h - file-system chores shared by the tests (helper_*.c is
 * linked into every test program): scratch paths, whole files and pages
 * read and written behind the engine's back, and files changed through a
 * ut_vfs (a simdisk's, as a crash or a hand would leave them).
 *
 * Contract: every function but rm_tree and remove_db_files asserts (cmocka)
 * that each step succeeded, so a test states only what it changes; none
 * is for a forked child whose failure must be an exit code.
 */
#ifndef UT_TEST_HELPER_FS_H
#define UT_TEST_HELPER_FS_H

#include <stddef.h>
#include <stdint.h>

#include "ut_io.h"

/* Remove dir and the files directly in it (tests make no deeper trees). */
void rm_tree(const char *dir);

/* A malloc'd path "$UT_TMPDIR/PREFIX-NAME-PID.db" (UT_TMPDIR default
 * /tmp, created if missing), with no database left there. */
char *tmp_db_path(const char *prefix, const char *name);
/* As tmp_db_path, "$UT_TMPDIR/PREFIX-NAME-PID-SEQ.db", SEQ counting the
 * calls: a new path each time, even for the same name; no file there. */
char *tmp_seq_path(const char *prefix, const char *name);
/* Remove path and its "-wal" and "-dw". */
void remove_db_files(const char *path);

/* ---- files and pages behind the engine's back (POSIX) */

/* The whole file at path, malloc'd, with a NUL after its bytes; their
 * number in *len (len may be NULL). */
void *read_file(const char *path, size_t *len);
/* Make path hold exactly b[0..len) (created when missing). */
void write_file(const char *path, const void *b, size_t len);
/* The size of the file at path, bytes. */
uint64_t file_bytes(const char *path);
/* Page pgno (UT_PAGE_SIZE bytes) of the file at path into buf, or from
 * buf, as it is: no checksum is resealed (ut_page_seal first for that). */
void read_page(const char *path, uint32_t pgno, void *buf);
void write_page(const char *path, uint32_t pgno, const void *buf);

/* ---- files through a ut_vfs, each synced before it returns */

/* An empty file at path, or path as it is when it exists. */
void vfs_create_file(ut_vfs *v, const char *path);
/* Cut (or extend) the file at path to bytes, as a full disk would. */
void vfs_truncate_file(ut_vfs *v, const char *path, uint64_t bytes);
/* Make path hold exactly b[0..len) (created when missing). */
void vfs_write_file(ut_vfs *v, const char *path, const void *b, size_t len);

#endif /* UT_TEST_HELPER_FS_H */
