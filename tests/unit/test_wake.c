/* test_wake.c — gd_wake: a poke wakes a waiter (from a thread and from a signal handler),
 * pokes between drains merge, an undrained wake stays readable (a stop), and the fd < 0
 * forms are harmless. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <cmocka.h>
#include "gd_time.h"
#include "gd_wake.h"

static void test_poke_wait_drain(void **state)
{
    (void)state;
    int fd = gd_wake_open();
    assert_true(fd >= 0);
    assert_int_equal(gd_wake_wait(fd, 0), 0);          /* nothing pending */
    gd_wake_poke(fd);
    gd_wake_poke(fd);
    assert_int_equal(gd_wake_wait(fd, 0), 1);
    assert_int_equal(gd_wake_wait(fd, 0), 1);          /* level: still readable */
    gd_wake_drain(fd);                                 /* both pokes go in one drain */
    assert_int_equal(gd_wake_wait(fd, 0), 0);
    gd_wake_drain(fd);                                 /* draining an empty one is fine */
    assert_int_equal(gd_wake_wait(fd, 20), 0);         /* the time runs out */
    gd_wake_close(&fd);
    assert_int_equal(fd, -1);
    gd_wake_close(&fd);                                /* twice: a no-op */
}

typedef struct {
    int fd;
    int64_t poked_at;
} poker;

static void *poke_later(void *arg)
{
    poker *p = arg;
    gd_sleep_ms(50);
    p->poked_at = gd_mono_ms();
    gd_wake_poke(p->fd);
    return NULL;
}

/* A 60 s wait that returns 1 was ended by the poke: the time alone would give 0. */
static void test_poke_from_thread_ends_wait(void **state)
{
    (void)state;
    poker p = {.fd = gd_wake_open()};
    assert_true(p.fd >= 0);
    pthread_t t;
    pthread_create(&t, NULL, poke_later, &p);
    assert_int_equal(gd_wake_wait(p.fd, 60000), 1);
    pthread_join(t, NULL);
    assert_true(p.poked_at > 0);
    gd_wake_close(&p.fd);
}

static int g_sig_fd = -1;
static void on_usr1(int sig)
{
    (void)sig;
    errno = 0;
    gd_wake_poke(g_sig_fd);
}

/* The informer's signal handler pokes: the wake-up lands, and errno is the handler's own. */
static void test_poke_from_signal_handler(void **state)
{
    (void)state;
    g_sig_fd = gd_wake_open();
    assert_true(g_sig_fd >= 0);
    struct sigaction sa = {.sa_handler = on_usr1}, old;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, &old);
    raise(SIGUSR1);
    assert_int_equal(gd_wake_wait(g_sig_fd, 0), 1);
    sigaction(SIGUSR1, &old, NULL);
    errno = EBADF;
    gd_wake_poke(g_sig_fd);                            /* poke leaves errno as it was */
    assert_int_equal(errno, EBADF);
    gd_wake_close(&g_sig_fd);
}

static void test_no_fd_is_harmless(void **state)
{
    (void)state;
    gd_wake_poke(-1);
    gd_wake_drain(-1);
    int64_t t0 = gd_mono_ms();
    assert_int_equal(gd_wake_wait(-1, 10), 0);         /* a plain sleep */
    assert_true(gd_mono_ms() - t0 >= 10);
    int fd = -1;
    gd_wake_close(&fd);
    assert_int_equal(fd, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_poke_wait_drain),
        cmocka_unit_test(test_poke_from_thread_ends_wait),
        cmocka_unit_test(test_poke_from_signal_handler),
        cmocka_unit_test(test_no_fd_is_harmless),
    };
    return cmocka_run_group_tests_name("wake", tests, NULL, NULL);
}
