/* gd_wake.h — a wake-up one thread sleeps on and another thread (or a signal handler)
 * pokes: an eventfd, so it sits in a zmq_poll, poll(2) or curl_multi_poll item list next to
 * sockets. Why one helper: the manager's loop, the informer's publisher and reflector, and
 * the worker's subscriber threads all sleep until "something changed" and were each
 * polling on a short timer (or carrying their own copy of these lines) before.
 *
 * The counter is level-triggered: a poke makes the fd readable until it is drained, and
 * pokes between drains merge into one wake-up. A wake-up that only says "stop" is never
 * drained, so every later wait ends at once too. */
#ifndef GD_WAKE_H
#define GD_WAKE_H
#include <stdint.h>

/* A new wake fd (non-blocking, close-on-exec), or -1 with errno set. */
int  gd_wake_open(void);
/* Makes fd readable. Async-signal-safe; fd < 0 is a no-op; errno is preserved (a signal
 * handler may call it). A full counter (EAGAIN) means a wake-up is pending already. */
void gd_wake_poke(int fd);
/* Clears fd's pending wake-ups (fd < 0: a no-op). */
void gd_wake_drain(int fd);
/* Sleeps up to ms, less if fd is (or turns) readable: 1 if it was, else 0 (the time ran
 * out, or a signal came: a caller with a deadline loops, as the reflector's nap does).
 * fd < 0: a plain sleep. */
int  gd_wake_wait(int fd, int64_t ms);
/* Closes *fd (if >= 0) and sets it to -1. */
void gd_wake_close(int *fd);

#endif
