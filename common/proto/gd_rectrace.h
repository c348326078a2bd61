/* gd_rectrace.h — a trace of reconciles, for checking from outside that no key is ever
 * reconciled by two workers or two threads at once (the chaos suite, tools/chaos).
 *
 * With GODIS_RECONCILE_TRACE=<file> in the environment (the manager's workers inherit it),
 * every reconcile appends "B <wall µs> <pid> <tid> <controller> <key>" to the file before
 * it starts and "E ..." after it returns, each line with one write(2) on an O_APPEND
 * descriptor: the file's order is the order in which the calls happened, across all the
 * processes writing it. Off (the default), a call costs one predictable branch. */
#ifndef GD_RECTRACE_H
#define GD_RECTRACE_H

#define GD_RECTRACE_ENV "GODIS_RECONCILE_TRACE"

/* what: 'B' (begin) or 'E' (end). */
void gd_rectrace(char what, const char *controller, const char *key);

#endif
