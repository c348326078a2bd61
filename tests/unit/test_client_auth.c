/* test_client_auth.c — how the Kubernetes REST client authenticates, against the
 * libmicrohttpd helper on 127.0.0.1: a rotating bearer-token file, and TLS (server
 * verification, tls-server-name, client certificates). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include "k8s_client.h"
#include "gd_time.h"
#include "client_fixture.h"

/* ---- bearer token file rotation ---- */

static void write_file(const char *path, const char *text)
{
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *fp = fopen(tmp, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    assert_int_equal(rename(tmp, path), 0);      /* as kubelet swaps the projected token */
}

static void test_token_file_rotation(void **state)
{
    client_fixture *f = *state;
    char dir[] = "/tmp/gd-token-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/token", dir);
    write_file(path, "tokA\n");
    cfg_spec s = {.server = httpd_url(f->h), .token = "static", .token_file = path};
    k8s_client *c = make_client(&s, NULL);
    int64_t read_at = gd_mono_ms();             /* the file is read in this request, not before */
    assert_int_equal(k8s_request(c, "GET", "/x", NULL, NULL, NULL, NULL), GD_OK);
    assert_string_equal(httpd_request(f->h, -1)->authorization, "Bearer tokA");

    write_file(path, "tokenB\n");
    /* checked at most once a second: requests (the first one right away) use tokA until the
     * file is checked again, which happens no sooner than a second after that read. Observed
     * request by request (5 s at most), so a slow machine cannot make it look otherwise. */
    const char *auth;
    do {
        assert_int_equal(k8s_request(c, "GET", "/x", NULL, NULL, NULL, NULL), GD_OK);
        auth = httpd_request(f->h, -1)->authorization;
        if (strcmp(auth, "Bearer tokenB") == 0) break;
        assert_string_equal(auth, "Bearer tokA");
        gd_sleep_ms(50);
    } while (gd_mono_ms() - read_at < 5000);
    assert_string_equal(auth, "Bearer tokenB");
    assert_true(gd_mono_ms() - read_at >= 1000);

    /* a 401 makes the next request re-read at once */
    write_file(path, "tokC");
    client_push(f->h, 401, NULL, "{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"code\":401}");
    assert_int_equal(k8s_request(c, "GET", "/x", NULL, NULL, NULL, NULL), GD_ERR_UNAUTHORIZED);
    assert_int_equal(k8s_request(c, "GET", "/x", NULL, NULL, NULL, NULL), GD_OK);
    assert_string_equal(httpd_request(f->h, -1)->authorization, "Bearer tokC");

    /* the file vanishes or turns hostile: the last good token stays. The sleeps outlast the
     * 1 s re-check interval, so the request re-checks the file: that nothing changes then is
     * the behaviour under test (a longer sleep on a busy machine only makes it surer). */
    unlink(path);
    gd_sleep_ms(1100);
    assert_int_equal(k8s_request(c, "GET", "/x", NULL, NULL, NULL, NULL), GD_OK);
    assert_string_equal(httpd_request(f->h, -1)->authorization, "Bearer tokC");
    write_file(path, "evil\r\nX-Injected: 1\n");
    gd_sleep_ms(1100);
    assert_int_equal(k8s_request(c, "GET", "/x", NULL, NULL, NULL, NULL), GD_OK);
    assert_string_equal(httpd_request(f->h, -1)->authorization, "Bearer tokC");
    k8s_client_destroy(&c);
    unlink(path);
    rmdir(dir);

    /* an unreadable file from the start: the static token is used */
    cfg_spec s2 = {.server = httpd_url(f->h), .token = "static", .token_file = "/nonexistent/t"};
    c = make_client(&s2, NULL);
    assert_int_equal(k8s_request(c, "GET", "/x", NULL, NULL, NULL, NULL), GD_OK);
    assert_string_equal(httpd_request(f->h, -1)->authorization, "Bearer static");
    k8s_client_destroy(&c);
}


/* ---- TLS ---- */

static httpd_tls_material *M;

static int tls_group_setup(void **state)
{
    (void)state;
    M = httpd_tls_material_new();
    return M ? 0 : -1;
}

static int tls_group_teardown(void **state)
{
    (void)state;
    httpd_tls_material_destroy(&M);
    return 0;
}

static gd_err tls_get(const cfg_spec *s, k8s_status *st)
{
    k8s_client *c = make_client(s, NULL);
    gd_err e = k8s_request(c, "GET", "/api", NULL, NULL, NULL, st);
    k8s_client_destroy(&c);
    return e;
}

static void test_tls_verification(void **state)
{
    (void)state;
    httpd_tls t = {.cert_pem = M->server_cert_pem, .key_pem = M->server_key_pem};
    httpd *h = httpd_start(&t);
    assert_non_null(h);
    k8s_status st;
    cfg_spec ok = {.server = httpd_url(h), .ca = M->ca_pem};
    assert_int_equal(tls_get(&ok, &st), GD_OK);

    cfg_spec wrong = {.server = httpd_url(h), .ca = M->other_ca_pem};
    assert_int_equal(tls_get(&wrong, &st), GD_ERR_TRANSPORT);
    assert_int_equal(st.http_status, 0);
    assert_true(strlen(st.message) > 0);

    cfg_spec insecure = {.server = httpd_url(h), .ca = M->other_ca_pem, .insecure = true};
    assert_int_equal(tls_get(&insecure, &st), GD_OK);

    /* tls-server-name: SNI and the name check use it, the connection goes to 127.0.0.1 */
    cfg_spec sni = {.server = httpd_url(h), .ca = M->ca_pem, .tls_server_name = "kubernetes.test"};
    assert_int_equal(tls_get(&sni, &st), GD_OK);
    cfg_spec badname = {.server = httpd_url(h), .ca = M->ca_pem, .tls_server_name = "other.test"};
    assert_int_equal(tls_get(&badname, &st), GD_ERR_TRANSPORT);
    httpd_stop(&h);
}

static void test_tls_client_certificate(void **state)
{
    (void)state;
    httpd_tls t = {.cert_pem = M->server_cert_pem, .key_pem = M->server_key_pem,
                   .client_ca_pem = M->ca_pem};
    httpd *h = httpd_start(&t);
    assert_non_null(h);
    k8s_status st;
    cfg_spec good = {.server = httpd_url(h), .ca = M->ca_pem, .cert = M->client_cert_pem,
                     .key = M->client_key_pem};
    assert_int_equal(tls_get(&good, &st), GD_OK);
    assert_true(httpd_request(h, -1)->client_cert_ok);

    cfg_spec none = {.server = httpd_url(h), .ca = M->ca_pem};
    assert_int_equal(tls_get(&none, &st), GD_ERR_UNAUTHORIZED);

    cfg_spec rogue = {.server = httpd_url(h), .ca = M->ca_pem, .cert = M->rogue_cert_pem,
                      .key = M->rogue_key_pem};
    gd_err e = tls_get(&rogue, &st);
    assert_true(e == GD_ERR_UNAUTHORIZED || e == GD_ERR_TRANSPORT);

    /* a key that does not match the certificate is a transport error, not a crash */
    cfg_spec mismatch = {.server = httpd_url(h), .ca = M->ca_pem, .cert = M->client_cert_pem,
                         .key = M->rogue_key_pem};
    assert_int_equal(tls_get(&mismatch, &st), GD_ERR_TRANSPORT);
    httpd_stop(&h);
}


int main(void)
{
    const struct CMUnitTest plain[] = {
        cmocka_unit_test_setup_teardown(test_token_file_rotation, client_setup, client_teardown),
    };
    const struct CMUnitTest tls[] = {
        cmocka_unit_test(test_tls_verification),
        cmocka_unit_test(test_tls_client_certificate),
    };
    int fails = cmocka_run_group_tests_name("plain_http", plain, NULL, NULL);
    fails += cmocka_run_group_tests_name("tls", tls, tls_group_setup, tls_group_teardown);
    return fails ? 1 : 0;
}
