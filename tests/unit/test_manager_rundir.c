/* test_manager_rundir.c — the manager's runtime directory: its own directory is used and
 * made private; one that belongs to someone else (a Kubernetes emptyDir: root-owned, 0777,
 * while the manager runs as uid 65532) only hosts a private subdirectory of ours; a
 * planted symlink or another user's subdirectory is refused. The "someone else" cases need
 * chown, so they run as root (as `make test` does) and are reported skipped otherwise. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gd_log.h"
#include "../../manager/rundir.h"

static char base[64];

static int setup(void **state)
{
    (void)state;
    gd_log_init("test", GD_LOG_ERROR, 0, 2);
    snprintf(base, sizeof base, "/tmp/rundir-test-XXXXXX");
    return mkdtemp(base) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
    return system(cmd) == 0 ? 0 : -1;
}

static mode_t mode_of(const char *p)
{
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    return st.st_mode & 07777;
}

static void test_own_dir_created_and_made_private(void **state)
{
    (void)state;
    char dir[128], out[200];
    bool made = false;
    snprintf(dir, sizeof dir, "%s/mine", base);
    assert_true(mgr_rundir_make(dir, out, sizeof out, &made));
    assert_true(made);
    assert_string_equal(out, dir);
    assert_int_equal(mode_of(dir), 0700);
    mgr_rundir_remove(out, made);
    assert_int_equal(access(dir, F_OK), -1);

    /* an existing directory of ours, too open: used and made 0700, not removed later */
    assert_int_equal(mkdir(dir, 0777), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    assert_true(mgr_rundir_make(dir, out, sizeof out, &made));
    assert_false(made);
    assert_string_equal(out, dir);
    assert_int_equal(mode_of(dir), 0700);
    mgr_rundir_remove(out, made);
    assert_int_equal(access(dir, F_OK), 0);
}

static void test_path_too_long_refused(void **state)
{
    (void)state;
    char dir[200], out[200];
    bool made = false;
    snprintf(dir, sizeof dir, "%s/%0100d", base, 7);
    assert_false(mgr_rundir_make(dir, out, sizeof out, &made));
    assert_int_equal(access(dir, F_OK), -1);
}

/* The Deployment's case: --runtime-dir on an emptyDir owned by root, mode 0777. */
static void test_foreign_dir_hosts_private_subdir(void **state)
{
    (void)state;
    if (getuid() != 0) {
        printf("  skipped: needs root to make a directory owned by another user\n");
        skip();
    }
    char dir[128], want[160], out[200];
    bool made = false;
    snprintf(dir, sizeof dir, "%s/emptydir", base);
    assert_int_equal(mkdir(dir, 0777), 0);
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(chown(dir, 65532, 65532), 0);      /* someone else's (we are root) */
    assert_true(mgr_rundir_make(dir, out, sizeof out, &made));
    snprintf(want, sizeof want, "%s/godis-operator-%d", dir, (int)getuid());
    assert_string_equal(out, want);
    assert_true(made);
    assert_int_equal(mode_of(out), 0700);
    assert_int_equal(mode_of(dir), 0777);                /* the volume itself is left alone */
    /* a restarted container finds its subdirectory and reuses it */
    assert_true(mgr_rundir_make(dir, out, sizeof out, &made));
    assert_false(made);
    assert_string_equal(out, want);

    /* planted by another user: a symlink, or a directory that is not ours */
    assert_int_equal(rmdir(want), 0);
    assert_int_equal(symlink("/tmp", want), 0);
    assert_false(mgr_rundir_make(dir, out, sizeof out, &made));
    assert_int_equal(unlink(want), 0);
    assert_int_equal(mkdir(want, 0700), 0);
    assert_int_equal(chown(want, 65532, 65532), 0);
    assert_false(mgr_rundir_make(dir, out, sizeof out, &made));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_dir_created_and_made_private),
        cmocka_unit_test(test_path_too_long_refused),
        cmocka_unit_test(test_foreign_dir_hosts_private_subdir),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
