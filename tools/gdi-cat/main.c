/* gdi-cat — looks at an informer from the shell (protocol GDI1, docs/PROTOCOL.md §1).
 *
 *   gdi-cat stats SNAP_EP                 the informer's counters (Prometheus text)
 *   gdi-cat snapshot SNAP_EP [TOPICS]     one line per object, then the END frames
 *   gdi-cat sub PUB_EP [TOPIC...] [-n N]  print PUB messages (all topics by default)
 *
 * Bodies are printed as they are (compact JSON). Exit 0 on success, 1 when the informer does
 * not answer within 10 s, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

static int usage(void)
{
    fprintf(stderr, "usage: gdi-cat stats SNAP_EP | snapshot SNAP_EP [TOPICS] | "
                    "sub PUB_EP [TOPIC...] [-n N]\n");
    return 2;
}

/* Prints one multipart message as frames separated by tabs; returns the frame count. */
static int print_msg(void *s, char *second, size_t cap)
{
    int n = 0, more = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) < 0)
            return -1;
        more = zmq_msg_more(&m);
        if (n == 1 && second) {
            size_t l = zmq_msg_size(&m) < cap - 1 ? zmq_msg_size(&m) : cap - 1;
            memcpy(second, zmq_msg_data(&m), l);
            second[l] = 0;
        }
        printf("%s%.*s", n ? "\t" : "", (int)zmq_msg_size(&m), (char *)zmq_msg_data(&m));
        zmq_msg_close(&m);
        n++;
    }
    printf("\n");
    return n;
}

static int wait_in(void *s, long ms)
{
    zmq_pollitem_t pi = {.socket = s, .events = ZMQ_POLLIN};
    return zmq_poll(&pi, 1, ms) > 0;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    void *ctx = zmq_ctx_new();
    int linger = 0, rc = 0;
    if (!strcmp(argv[1], "stats") || !strcmp(argv[1], "snapshot")) {
        void *d = zmq_socket(ctx, ZMQ_DEALER);
        zmq_setsockopt(d, ZMQ_LINGER, &linger, sizeof linger);
        if (zmq_connect(d, argv[2]) != 0) {
            fprintf(stderr, "gdi-cat: %s: %s\n", argv[2], zmq_strerror(zmq_errno()));
            return 2;
        }
        int stats = !strcmp(argv[1], "stats");
        zmq_send(d, "GDI1", 4, ZMQ_SNDMORE);
        if (stats) {
            zmq_send(d, "STATS", 5, 0);
        } else {
            const char *t = argc > 3 ? argv[3] : "*";
            zmq_send(d, "SNAPSHOT", 8, ZMQ_SNDMORE);
            zmq_send(d, t, strlen(t), 0);
        }
        for (;;) {
            if (!wait_in(d, 10000)) {
                fprintf(stderr, "gdi-cat: no answer from %s\n", argv[2]);
                rc = 1;
                break;
            }
            char cmd[16] = "";
            if (stats) {
                zmq_msg_t m;
                for (int i = 0; i < 3; i++) {
                    zmq_msg_init(&m);
                    zmq_msg_recv(&m, d, 0);
                    if (i == 2)
                        fwrite(zmq_msg_data(&m), 1, zmq_msg_size(&m), stdout);
                    zmq_msg_close(&m);
                }
                break;
            }
            print_msg(d, cmd, sizeof cmd);
            if (strcmp(cmd, "OBJ") != 0)
                break;
        }
        zmq_close(d);
    } else if (!strcmp(argv[1], "sub")) {
        void *s = zmq_socket(ctx, ZMQ_SUB);
        zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
        long limit = -1;
        int topics = 0;
        for (int i = 3; i < argc; i++) {
            if (!strcmp(argv[i], "-n") && i + 1 < argc)
                limit = atol(argv[++i]);
            else {
                zmq_setsockopt(s, ZMQ_SUBSCRIBE, argv[i], strlen(argv[i]));
                topics++;
            }
        }
        if (!topics)
            zmq_setsockopt(s, ZMQ_SUBSCRIBE, "", 0);
        if (zmq_connect(s, argv[2]) != 0) {
            fprintf(stderr, "gdi-cat: %s: %s\n", argv[2], zmq_strerror(zmq_errno()));
            return 2;
        }
        for (long n = 0; limit < 0 || n < limit; n++) {
            if (print_msg(s, NULL, 0) < 0)
                break;
            fflush(stdout);
        }
        zmq_close(s);
    } else {
        return usage();
    }
    zmq_ctx_term(ctx);
    return rc;
}
