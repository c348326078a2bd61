/* client_fixture.h — a k8s_client against the scriptable httpd helper on 127.0.0.1, for the
 * client's unit tests (test_client.c, test_client_watch.c, test_client_auth.c). */
#ifndef CLIENT_FIXTURE_H
#define CLIENT_FIXTURE_H
#include <stdbool.h>
#include "k8s_client.h"
#include "httpd_helper.h"

/* What goes into a k8s_config (every string copied; NULL: unset). */
typedef struct {
    const char *server, *token, *token_file, *tls_server_name;
    const char *ca, *cert, *key;
    bool insecure;
} cfg_spec;

k8s_config *make_cfg(const cfg_spec *s);
/* A client of make_cfg(s); opts NULL: defaults without a rate limit. Asserts success. */
k8s_client *make_client(const cfg_spec *s, const k8s_client_opts *opts);

/* Per-test state of client_setup: a plain-HTTP server and a client of it (token tok123). */
typedef struct {
    httpd *h;
    k8s_client *c;
} client_fixture;
int client_setup(void **state);
int client_teardown(void **state);
/* Queues one response (headers NULL: JSON). */
void client_push(httpd *h, int status, const char *headers, const char *body);
#endif
