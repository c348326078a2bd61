/* keygen.c — `godis-manager keygen`: a CURVE key pair for the tcp:// endpoints between the
 * manager and remote workers (docs/PROTOCOL.md §3.2).
 *
 * Without --out it prints "public=<z85>" and "secret=<z85>" lines (kubectl create secret
 * generic NAME --from-env-file=-); with --out DIR [--name N] it writes DIR/N.key (0600) and
 * DIR/N.pub, the files a Secret volume mounts (kubectl create secret generic NAME
 * --from-file=DIR/N.key --from-file=DIR/N.pub). */
#include "keygen.h"
#include <stdio.h>
#include <string.h>
#include "gd_curve.h"
#include "gd_err.h"

static const char usage[] =
    "usage: godis-manager keygen [--out DIR [--name NAME]]\n"
    "  Generates a CURVE key pair (z85) for the manager (server) or a remote worker (client).\n"
    "  Without --out: prints public=<z85> and secret=<z85> (a Secret's --from-env-file form).\n"
    "  --out DIR    write DIR/NAME.key (secret key, mode 0600) and DIR/NAME.pub; never\n"
    "               overwrites a file\n"
    "  --name NAME  file name stem (default: curve)\n"
    "  The server reads --curve-server-key FILE and --curve-allow FILE (public keys of the\n"
    "  workers, one per line); a worker reads --curve-key FILE and --curve-server-public FILE.\n";

int mgr_keygen_main(int argc, char **argv)
{
    const char *out = NULL, *name = "curve";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage, stdout);
            return GD_EXIT_OK;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--name") && i + 1 < argc) {
            name = argv[++i];
        } else {
            fprintf(stderr, "godis-manager keygen: unexpected argument \"%s\"\n%s", argv[i], usage);
            return GD_EXIT_FATAL_CONFIG;
        }
    }
    if (!*name || strchr(name, '/')) {
        fprintf(stderr, "godis-manager keygen: --name must be a file name, got \"%s\"\n", name);
        return GD_EXIT_FATAL_CONFIG;
    }
    gd_curve_keys k;
    if (gd_curve_keygen(&k) != GD_OK) {
        fprintf(stderr, "godis-manager keygen: this libzmq has no CURVE support\n");
        return GD_EXIT_FAILURE;
    }
    if (!out) {
        printf("public=%s\nsecret=%s\n", k.public_z85, k.secret_z85);
        return fflush(stdout) == 0 ? GD_EXIT_OK : GD_EXIT_FAILURE;
    }
    char why[600];
    if (gd_curve_write_pair(out, name, &k, why, sizeof why) != GD_OK) {
        fprintf(stderr, "godis-manager keygen: %s\n", why);
        return GD_EXIT_FAILURE;
    }
    printf("wrote %s/%s.key and %s/%s.pub (public key %s)\n", out, name, out, name, k.public_z85);
    return GD_EXIT_OK;
}
