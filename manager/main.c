/* main.c — godis-manager: parse the configuration, install flag-only signal handlers, run. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "config.h"
#include "gd_err.h"
#include "gd_log.h"
#include "gd_version.h"
#include "gd_wake.h"
#include "keygen.h"
#include "manager.h"

/* Handlers only set flags; the main loop does the work (nginx's ngx_signal_handler). */
static void on_term(int sig) { (void)sig; mgr_sig_term = 1; gd_wake_poke(mgr_sig_wake_fd); }
static void on_hup(int sig) { (void)sig; mgr_sig_hup = 1; gd_wake_poke(mgr_sig_wake_fd); }
static void on_chld(int sig) { (void)sig; mgr_sig_chld = 1; gd_wake_poke(mgr_sig_wake_fd); }

static void install(int sig, void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = sig == SIGCHLD ? SA_NOCLDSTOP | SA_RESTART : SA_RESTART;
    sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
    mgr_config cfg;
    char err[512];
    if (argc > 1 && strcmp(argv[1], "keygen") == 0)
        return mgr_keygen_main(argc - 1, argv + 1);
    mgr_config_default(&cfg, argv[0]);
    if (mgr_config_parse(&cfg, argc, argv, err, sizeof err) != GD_OK) {
        fprintf(stderr, "godis-manager: %s (see godis-manager --help)\n", err);
        return GD_EXIT_FATAL_CONFIG;
    }
    if (cfg.help) {
        mgr_config_usage(stdout);
        return GD_EXIT_OK;
    }
    if (cfg.version) {
        char line[512];
        gd_version_line("godis-manager", line, sizeof line);
        fputs(line, stdout);
        return GD_EXIT_OK;
    }
    gd_log_init("manager", (gd_log_level)gd_log_level_parse(cfg.log_level),
                strcmp(cfg.log_format, "json") == 0, 2);
    install(SIGTERM, on_term);
    install(SIGINT, on_term);
    install(SIGHUP, on_hup);
    install(SIGCHLD, on_chld);
    signal(SIGPIPE, SIG_IGN);
    return mgr_run(&cfg, argc, argv);
}
