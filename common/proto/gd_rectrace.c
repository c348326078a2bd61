/* gd_rectrace.c — see gd_rectrace.h. */
#include "gd_rectrace.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <time.h>

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int trace_fd = -1;

static void open_trace(void)
{
    const char *path = getenv(GD_RECTRACE_ENV);
    if (path && *path)
        trace_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

void gd_rectrace(char what, const char *controller, const char *key)
{
    pthread_once(&once, open_trace);
    if (trace_fd < 0)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char line[640];
    int n = snprintf(line, sizeof line, "%c %lld %d %d %s %s\n", what,
                     (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000,
                     (int)getpid(), (int)gettid(), controller ? controller : "-", key ? key : "-");
    if (n > 0 && (size_t)n < sizeof line && write(trace_fd, line, (size_t)n) < 0) {
        /* a trace that cannot be written is not worth failing a reconcile for */
    }
}
