#ifndef GODISCTL_H
#define GODISCTL_H
typedef struct {
    const char *kubeconfig, *context, *ns;
} gdctl_opts;
/* Runs one command (argv[0] is its name). Returns the process exit code. */
int gdctl_run(const gdctl_opts *o, int argc, char **argv);
#endif
