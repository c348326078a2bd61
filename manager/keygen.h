/* keygen.h — the `godis-manager keygen` subcommand (CURVE key pairs, PROTOCOL.md §3.2). */
#ifndef MGR_KEYGEN_H
#define MGR_KEYGEN_H
/* argv[0] is "keygen". Returns the process exit code. */
int mgr_keygen_main(int argc, char **argv);
#endif
