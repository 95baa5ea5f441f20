/*
 * tests/helper_fs.h - file-system chores shared by the tests (helper_*.c is
 * linked into every test program).
 */
#ifndef UT_TEST_HELPER_FS_H
#define UT_TEST_HELPER_FS_H

/* Remove dir and the files directly in it (tests make no deeper trees). */
void rm_tree(const char *dir);

/* A malloc'd path "$UT_TMPDIR/PREFIX-NAME-PID.db" (UT_TMPDIR default
 * /tmp, created if missing), with no database left there. */
char *tmp_db_path(const char *prefix, const char *name);
/* Remove path and its "-wal" and "-dw". */
void remove_db_files(const char *path);

#endif /* UT_TEST_HELPER_FS_H */
