/* manager.h — the manager process: one main loop (nginx's master cycle) tying together
 * leader election (its own thread), the process table, the shard coordinator, the GDW1
 * control socket, informer STATS and the HTTP endpoints. */
#ifndef MGR_MANAGER_H
#define MGR_MANAGER_H
#include <signal.h>
#include "config.h"

/* Set by the signal handlers (main.c), read by the loop. */
extern volatile sig_atomic_t mgr_sig_term, mgr_sig_hup, mgr_sig_chld;
/* The main loop's eventfd while it runs (-1 otherwise): a handler pokes it, because the
 * signal may land on any thread and the loop sleeps until its next deadline. */
extern volatile sig_atomic_t mgr_sig_wake_fd;

/* Runs until stopped by SIGTERM/SIGINT or a fatal child. argv is kept for SIGHUP reloads.
 * Returns the process exit code (0, 1, or 2 for a fatal configuration). */
int mgr_run(const mgr_config *cfg, int argc, char **argv);

#endif
