/* gd_wake.c — see gd_wake.h. */
#include "gd_wake.h"
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "gd_time.h"

int gd_wake_open(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

void gd_wake_poke(int fd)
{
    if (fd < 0)
        return;
    int saved = errno;
    const uint64_t one = 1;
    ssize_t n = write(fd, &one, sizeof one);
    (void)n;                        /* EAGAIN: the counter is full, a wake-up is pending */
    errno = saved;
}

void gd_wake_drain(int fd)
{
    if (fd < 0)
        return;
    uint64_t v;
    ssize_t n = read(fd, &v, sizeof v);   /* an eventfd reads its whole count at once */
    (void)n;
}

int gd_wake_wait(int fd, int64_t ms)
{
    if (fd < 0) {
        gd_sleep_ms(ms);
        return 0;
    }
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, ms <= 0 ? 0 : ms > INT_MAX ? INT_MAX : (int)ms) > 0;
}

void gd_wake_close(int *fd)
{
    if (fd && *fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}
