/*
 * tests/helper_fs.h - file-system chores shared by the tests (helper_*.c is
 * linked into every test program).
 */
#ifndef UT_TEST_HELPER_FS_H
#define UT_TEST_HELPER_FS_H

/* Remove dir and the files directly in it (tests make no deeper trees). */
void rm_tree(const char *dir);

#endif /* UT_TEST_HELPER_FS_H */
