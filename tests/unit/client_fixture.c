/* client_fixture.c — a k8s_client pointed at the httpd helper, for the client's unit tests
 * (test_client*.c). See client_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "client_fixture.h"

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static unsigned char *dup_pem(const char *pem, size_t *len)
{
    if (!pem) {
        *len = 0;
        return NULL;
    }
    *len = strlen(pem);
    return (unsigned char *)strdup(pem);
}

k8s_config *make_cfg(const cfg_spec *s)
{
    k8s_config *c = calloc(1, sizeof *c);
    assert_non_null(c);
    c->server = dup_or_null(s->server);
    c->token = dup_or_null(s->token);
    c->token_file = dup_or_null(s->token_file);
    c->tls_server_name = dup_or_null(s->tls_server_name);
    c->insecure_skip_tls_verify = s->insecure;
    c->ca_pem = dup_pem(s->ca, &c->ca_pem_len);
    c->cert_pem = dup_pem(s->cert, &c->cert_pem_len);
    c->key_pem = dup_pem(s->key, &c->key_pem_len);
    c->namespace_ = strdup("default");
    return c;
}

k8s_client *make_client(const cfg_spec *s, const k8s_client_opts *opts)
{
    k8s_config *cfg = make_cfg(s);
    k8s_client_opts o;
    if (!opts) {
        k8s_client_opts_default(&o);
        o.qps = -1;
        opts = &o;
    }
    k8s_client *c = k8s_client_new(&cfg, opts);
    assert_null(cfg);
    assert_non_null(c);
    return c;
}

int client_setup(void **state)
{
    client_fixture *f = calloc(1, sizeof *f);
    f->h = httpd_start(NULL);
    assert_non_null(f->h);
    cfg_spec s = {.server = httpd_url(f->h), .token = "tok123"};
    f->c = make_client(&s, NULL);
    *state = f;
    return 0;
}

int client_teardown(void **state)
{
    client_fixture *f = *state;
    k8s_client_destroy(&f->c);
    httpd_stop(&f->h);
    free(f);
    return 0;
}

void client_push(httpd *h, int status, const char *headers, const char *body)
{
    httpd_resp r = {.status = status, .headers = headers, .body = body};
    httpd_push(h, &r);
}
