/* test_leaderelection.c — client-go's tryAcquireOrRenew decisions against a fake Lease
 * store with optimistic concurrency, on an injected clock. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include "gd_json.h"
#include "gd_log.h"
#include "gd_time.h"
#include <string.h>
#include <unistd.h>
#include "../../manager/leaderelection.h"
#include "../../manager/leaselock.h"
#include "../support/test_wait.h"

/* ---- injected clock ---- */
static int64_t fake_ns;
static int64_t fake_now(void) { return fake_ns; }
static void advance_ms(int64_t ms) { fake_ns += ms * 1000000; }

/* ---- fake store: one Lease, a resourceVersion, and per-client views ---- */
typedef struct {
    bool exists;
    mgr_le_record rec;
    int64_t rv;
    int writes;
} store_t;

typedef struct {
    store_t *s;
    int64_t seen_rv;        /* rv of the object this client last got/wrote */
    gd_err fail_get;        /* injected failure */
    int calls;
} view_t;

static gd_err f_get(void *ud, mgr_le_record *out)
{
    view_t *v = ud;
    v->calls++;
    if (v->fail_get) return v->fail_get;
    if (!v->s->exists) return GD_ERR_NOT_FOUND;
    *out = v->s->rec;
    v->seen_rv = v->s->rv;
    return GD_OK;
}
static gd_err f_create(void *ud, const mgr_le_record *rec)
{
    view_t *v = ud;
    v->calls++;
    if (v->s->exists) return GD_ERR_ALREADY_EXISTS;
    v->s->exists = true;
    v->s->rec = *rec;
    v->seen_rv = ++v->s->rv;
    v->s->writes++;
    return GD_OK;
}
static gd_err f_update(void *ud, const mgr_le_record *rec)
{
    view_t *v = ud;
    v->calls++;
    if (!v->s->exists || v->seen_rv != v->s->rv) return GD_ERR_CONFLICT;
    v->s->rec = *rec;
    v->seen_rv = ++v->s->rv;
    v->s->writes++;
    return GD_OK;
}

static mgr_le *elector(const char *id, view_t *v, store_t *s)
{
    memset(v, 0, sizeof *v);
    v->s = s;
    mgr_le_config c;
    mgr_le_config_default(&c);
    snprintf(c.identity, sizeof c.identity, "%s", id);
    mgr_le_lock l = {f_get, f_create, f_update, v};
    mgr_le *le = mgr_le_new(&c, &l);
    assert_non_null(le);
    return le;
}

static int setup(void **st) { (void)st; gd_log_init("test", GD_LOG_ERROR + 1, 0, 2); fake_ns = 1000000000000LL; gd_clock_set(fake_now); return 0; }
static int teardown(void **st) { (void)st; gd_clock_set(NULL); return 0; }

static void test_config_validation(void **st)
{
    (void)st;
    char err[160];
    mgr_le_config c;
    mgr_le_config_default(&c);
    assert_int_equal(c.lease_duration_ms, 15000);
    assert_int_equal(c.renew_deadline_ms, 10000);
    assert_int_equal(c.retry_period_ms, 2000);
    assert_int_equal(mgr_le_config_validate(&c, err, sizeof err), GD_ERR_CONFIG); /* no identity */
    mgr_le_make_identity(c.identity, sizeof c.identity);
    assert_non_null(strchr(c.identity, '_'));
    assert_int_equal(mgr_le_config_validate(&c, err, sizeof err), GD_OK);

    mgr_le_config b = c;
    b.renew_deadline_ms = 15000;            /* lease must exceed renew deadline */
    assert_int_equal(mgr_le_config_validate(&b, err, sizeof err), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "greater than leader-elect-renew-deadline"));
    b = c;
    b.renew_deadline_ms = 2400;             /* 2400 <= 1.2 × 2000 */
    assert_int_equal(mgr_le_config_validate(&b, err, sizeof err), GD_ERR_CONFIG);
    assert_non_null(strstr(err, "1.2"));
    b.renew_deadline_ms = 2401;
    assert_int_equal(mgr_le_config_validate(&b, err, sizeof err), GD_OK);
    b = c;
    b.lease_duration_ms = 15500;            /* the record holds whole seconds */
    assert_int_equal(mgr_le_config_validate(&b, err, sizeof err), GD_ERR_CONFIG);
    b = c;
    b.retry_period_ms = 0;
    assert_int_equal(mgr_le_config_validate(&b, err, sizeof err), GD_ERR_CONFIG);
    b = c;
    b.retry_period_ms = -5;
    assert_int_equal(mgr_le_config_validate(&b, err, sizeof err), GD_ERR_CONFIG);
    /* the identity goes into User-Agent headers: no control characters, spaces, parens */
    const char *bad_ids[] = {"a b", "a\r\nX-Evil: 1", "mgr(a)", "a;b", "a\\b", "\x7f", "caf\xc3\xa9"};
    for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
        b = c;
        snprintf(b.identity, sizeof b.identity, "%s", bad_ids[i]);
        assert_int_equal(mgr_le_config_validate(&b, err, sizeof err), GD_ERR_CONFIG);
        assert_non_null(strstr(err, "User-Agent"));
    }
    b = c;
    memset(b.identity, 'x', 254);            /* 254 > 253 */
    b.identity[254] = '\0';
    assert_int_equal(mgr_le_config_validate(&b, err, sizeof err), GD_ERR_CONFIG);
    b.identity[253] = '\0';
    assert_int_equal(mgr_le_config_validate(&b, err, sizeof err), GD_OK);
    b = c;
    b.identity[0] = '\0';
    assert_null(mgr_le_new(&b, &(mgr_le_lock){f_get, f_create, f_update, NULL}));
    assert_null(mgr_le_new(&c, &(mgr_le_lock){NULL, f_create, f_update, NULL}));
}

static void test_create_when_absent(void **st)
{
    (void)st;
    store_t s = {0};
    view_t va;
    mgr_le *a = elector("a_1", &va, &s);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));
    assert_true(s.exists);
    assert_string_equal(s.rec.holder, "a_1");
    assert_int_equal(s.rec.lease_duration_s, 15);
    assert_int_equal(s.rec.transitions, 0);
    assert_string_equal(s.rec.acquire_time, s.rec.renew_time);
    assert_int_equal(strlen(s.rec.renew_time), 27);   /* 2026-11-22T11:02:03.123456Z */
    assert_true(mgr_le_is_leader(a));
    mgr_le_destroy(&a);
    assert_null(a);
}

static void test_standby_waits_for_expiry_on_its_own_clock(void **st)
{
    (void)st;
    store_t s = {0};
    view_t va, vb;
    mgr_le *a = elector("a", &va, &s), *b = elector("b", &vb, &s);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));
    assert_false(mgr_le_try_acquire_or_renew(b, 0));   /* first sight: valid for 15 s */
    advance_ms(14000);
    assert_false(mgr_le_try_acquire_or_renew(b, 0));   /* unchanged record, 14 s < 15 s */
    int writes = s.writes;
    advance_ms(999);
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    assert_int_equal(s.writes, writes);               /* never wrote while it was valid */
    advance_ms(1);
    assert_true(mgr_le_try_acquire_or_renew(b, 0));    /* 15 s on b's clock */
    assert_string_equal(s.rec.holder, "b");
    assert_int_equal(s.rec.transitions, 1);
    /* a comes back: its fast path is invalid (15 s since it observed), the slow path sees b */
    assert_false(mgr_le_try_acquire_or_renew(a, 0));
    assert_false(mgr_le_is_leader(a));
    assert_string_equal(s.rec.holder, "b");
    mgr_le_destroy(&a);
    mgr_le_destroy(&b);
}

static void test_renewal_restarts_standby_clock(void **st)
{
    (void)st;
    store_t s = {0};
    view_t va, vb;
    mgr_le *a = elector("a", &va, &s), *b = elector("b", &vb, &s);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));
    char acquired[MGR_LE_TIME_MAX];
    memcpy(acquired, s.rec.acquire_time, sizeof acquired);
    for (int i = 0; i < 20; i++) {                    /* 40 s of renewals every 2 s */
        advance_ms(2000);
        usleep(2);                    /* renewTime (wall µs) must change: the clock is the condition */
        assert_false(mgr_le_try_acquire_or_renew(b, 0));
        assert_true(mgr_le_try_acquire_or_renew(a, 0));
    }
    assert_string_equal(s.rec.acquire_time, acquired); /* a renewal keeps acquireTime */
    assert_int_equal(s.rec.transitions, 0);
    /* a stops renewing; b first sees a's last renewal 1 s after it was written, and
     * counts 15 s from that sighting, not from the record's renewTime */
    advance_ms(1000);
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    advance_ms(14999);
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    advance_ms(1);
    assert_true(mgr_le_try_acquire_or_renew(b, 0));
    assert_int_equal(s.rec.transitions, 1);
    mgr_le_destroy(&a);
    mgr_le_destroy(&b);
}

static void test_record_timestamps_not_trusted(void **st)
{
    (void)st;
    store_t s = {0};
    view_t vb;
    mgr_le *b = elector("b", &vb, &s);
    /* a record written by a clock far in the past: still valid for 15 s of OUR time */
    s.exists = true;
    s.rv = 7;
    snprintf(s.rec.holder, sizeof s.rec.holder, "a");
    s.rec.lease_duration_s = 15;
    snprintf(s.rec.renew_time, sizeof s.rec.renew_time, "1999-01-01T00:00:00.000000Z");
    snprintf(s.rec.acquire_time, sizeof s.rec.acquire_time, "1999-01-01T00:00:00.000000Z");
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    advance_ms(10000);
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    /* and one from the far future expires after 15 s all the same */
    snprintf(s.rec.renew_time, sizeof s.rec.renew_time, "2999-01-01T00:00:00.000000Z");
    s.rv++;
    assert_false(mgr_le_try_acquire_or_renew(b, 0));   /* changed: clock restarts */
    advance_ms(15000);
    assert_true(mgr_le_try_acquire_or_renew(b, 0));
    mgr_le_destroy(&b);
}

static void test_race_for_expired_lease_one_winner(void **st)
{
    (void)st;
    store_t s = {0};
    view_t va, vb, vc;
    mgr_le *a = elector("a", &va, &s), *b = elector("b", &vb, &s), *c = elector("c", &vc, &s);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    assert_false(mgr_le_try_acquire_or_renew(c, 0));
    advance_ms(16000);
    /* b and c both read the expired record, then both write with what they read */
    mgr_le_record r;
    assert_int_equal(f_get(&vb, &r), GD_OK);
    assert_int_equal(f_get(&vc, &r), GD_OK);
    bool wb = mgr_le_try_acquire_or_renew(b, 0);
    vc.seen_rv = vb.seen_rv - 1;                      /* c's view predates b's write */
    bool wc = f_update(&vc, &(mgr_le_record){.holder = "c"}) == GD_OK;
    assert_true(wb);
    assert_false(wc);
    assert_false(mgr_le_try_acquire_or_renew(c, 0));   /* c re-reads: b holds it */
    assert_string_equal(s.rec.holder, "b");
    mgr_le_destroy(&a);
    mgr_le_destroy(&b);
    mgr_le_destroy(&c);
}

static void test_release_lets_standby_take_at_once(void **st)
{
    (void)st;
    store_t s = {0};
    view_t va, vb;
    mgr_le *a = elector("a", &va, &s), *b = elector("b", &vb, &s);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    assert_true(mgr_le_release(a));
    assert_string_equal(s.rec.holder, "");
    assert_int_equal(s.rec.lease_duration_s, 1);
    assert_int_equal(s.rec.transitions, 0);
    assert_false(mgr_le_is_leader(a));
    assert_true(mgr_le_release(a));                    /* not leader: nothing to do */
    assert_true(mgr_le_try_acquire_or_renew(b, 0));    /* no waiting for expiry */
    assert_string_equal(s.rec.holder, "b");
    assert_int_equal(s.rec.transitions, 1);
    assert_int_equal(s.rec.lease_duration_s, 15);
    mgr_le_destroy(&a);
    mgr_le_destroy(&b);
}

static void test_watch_observation_times_expiry(void **st)
{
    (void)st;
    store_t s = {0};
    view_t va, vb;
    mgr_le *a = elector("a", &va, &s), *b = elector("b", &vb, &s);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    advance_ms(1500);
    usleep(2);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));    /* a renews … */
    mgr_le_observe(b, &s.rec);                         /* … and b's watch sees it at once */
    int64_t obs;
    mgr_le_observed(b, NULL, &obs);
    assert_int_equal(obs, gd_mono_ms());
    advance_ms(14999);
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    advance_ms(1);
    assert_true(mgr_le_try_acquire_or_renew(b, 0));    /* 15 s after the watched renewal */
    mgr_le_destroy(&a);
    mgr_le_destroy(&b);
}

static void test_fast_path_conflict_falls_back(void **st)
{
    (void)st;
    store_t s = {0};
    view_t va;
    mgr_le *a = elector("a", &va, &s);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));
    s.rv += 5;                                        /* someone touched the object */
    va.calls = 0;
    advance_ms(2000);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));    /* update→Conflict, get, update */
    assert_int_equal(va.calls, 3);
    assert_string_equal(s.rec.holder, "a");
    assert_int_equal(s.rec.transitions, 0);
    va.calls = 0;
    advance_ms(2000);
    assert_true(mgr_le_try_acquire_or_renew(a, 0));    /* fast path again: one request */
    assert_int_equal(va.calls, 1);
    mgr_le_destroy(&a);
}

static void test_errors_and_deadline(void **st)
{
    (void)st;
    store_t s = {0};
    view_t vb;
    mgr_le *b = elector("b", &vb, &s);
    vb.fail_get = GD_ERR_TRANSPORT;
    assert_false(mgr_le_try_acquire_or_renew(b, 0));
    assert_false(s.exists);                           /* a failed get never creates */
    vb.fail_get = GD_OK;
    vb.calls = 0;
    assert_false(mgr_le_try_acquire_or_renew(b, gd_mono_ms() - 1));
    assert_int_equal(vb.calls, 0);                    /* past the deadline: no request */
    mgr_le_destroy(&b);
}

/* ---- the Lease object <-> record ---- */
static void test_lease_json_roundtrip_and_hostile(void **st)
{
    (void)st;
    cJSON *l = cJSON_Parse("{\"metadata\":{\"name\":\"x\",\"resourceVersion\":\"7\"},"
                           "\"spec\":{\"holderIdentity\":\"h_1\",\"leaseDurationSeconds\":15,"
                           "\"acquireTime\":\"2026-11-22T11:00:00.000000Z\","
                           "\"renewTime\":\"2026-11-22T11:00:02.000000Z\",\"leaseTransitions\":4}}");
    mgr_le_record r;
    assert_int_equal(mgr_leaselock_record_from_lease(l, &r), GD_OK);
    assert_string_equal(r.holder, "h_1");
    assert_int_equal(r.lease_duration_s, 15);
    assert_int_equal(r.transitions, 4);
    assert_string_equal(r.renew_time, "2026-11-22T11:00:02.000000Z");
    /* written back: the same record, metadata (resourceVersion) untouched */
    snprintf(r.holder, sizeof r.holder, "other");
    r.acquire_time[0] = '\0';
    assert_int_equal(mgr_leaselock_record_to_lease(l, &r), GD_OK);
    mgr_le_record back;
    assert_int_equal(mgr_leaselock_record_from_lease(l, &back), GD_OK);
    assert_true(mgr_le_record_equal(&r, &back));
    assert_true(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(l, "spec"), "acquireTime")));
    assert_string_equal(gd_meta_rv(l), "7");
    cJSON_Delete(l);

    const char *bad[] = {
        "{\"spec\":{\"holderIdentity\":5}}",
        "{\"spec\":{\"leaseDurationSeconds\":\"15\"}}",
        "{\"spec\":{\"leaseDurationSeconds\":1.5}}",
        "{\"spec\":[]}",
        "[]",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cJSON *b = cJSON_Parse(bad[i]);
        assert_int_not_equal(mgr_leaselock_record_from_lease(b, &r), GD_OK);
        cJSON_Delete(b);
    }
    /* an over-long holder is refused, not truncated into someone else's name */
    char big[600];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    cJSON *b = cJSON_CreateObject();
    cJSON_AddStringToObject(cJSON_AddObjectToObject(b, "spec"), "holderIdentity", big);
    assert_int_equal(mgr_leaselock_record_from_lease(b, &r), GD_ERR_TOO_LARGE);
    cJSON_Delete(b);
    /* no spec at all: an empty record (nobody holds it) */
    b = cJSON_Parse("{\"metadata\":{}}");
    assert_int_equal(mgr_leaselock_record_from_lease(b, &r), GD_OK);
    assert_string_equal(r.holder, "");
    cJSON_Delete(b);
    assert_null(mgr_leaselock_new(NULL, "ns", "x"));
}

/* ---- the loop, on the real clock with short periods ---- */
static mgr_le *fast_elector(const char *id, view_t *v, store_t *s)
{
    memset(v, 0, sizeof *v);
    v->s = s;
    mgr_le_config c;
    mgr_le_config_default(&c);
    snprintf(c.identity, sizeof c.identity, "%s", id);
    c.lease_duration_ms = 1000;
    c.renew_deadline_ms = 600;
    c.retry_period_ms = 100;
    mgr_le *le = mgr_le_new(&c, &(mgr_le_lock){f_get, f_create, f_update, v});
    assert_non_null(le);
    return le;
}

static mgr_le_status_t status_of(mgr_le *le)
{
    mgr_le_status_t st;
    mgr_le_status(le, &st);
    return st;
}

static bool wait_leading(mgr_le *le, bool want, int ms)
{
    WAIT_UNTIL(status_of(le).leading == want, ms);
    return status_of(le).leading == want;
}

static void test_loop_acquire_renew_release(void **st)
{
    (void)st;
    gd_clock_set(NULL);
    store_t s = {0};
    view_t va;
    mgr_le *a = fast_elector("a", &va, &s);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, mgr_le_thread_main, a), 0);
    assert_true(wait_leading(a, true, 2000));
    assert_true(mgr_le_fence_at_mono_ms(a) > gd_mono_ms());
    WAIT_UNTIL(status_of(a).renewals >= 3, 2000);
    mgr_le_status_t ls = status_of(a);
    assert_true(ls.renewals >= 3);                    /* renewed every 100 ms */
    assert_int_equal(ls.acquisitions, 1);
    mgr_le_stop(a);
    pthread_join(th, NULL);
    assert_string_equal(s.rec.holder, "");            /* released on stop */
    mgr_le_status(a, &ls);
    assert_false(ls.leading);
    assert_int_equal(mgr_le_fence_at_mono_ms(a), 0);
    mgr_le_destroy(&a);
}

static void test_loop_loses_lease_when_store_fails(void **st)
{
    (void)st;
    gd_clock_set(NULL);
    store_t s = {0};
    view_t va;
    mgr_le *a = fast_elector("a", &va, &s);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, mgr_le_thread_main, a), 0);
    assert_true(wait_leading(a, true, 2000));
    int64_t fence = mgr_le_fence_at_mono_ms(a);
    s.rv += 100;                                      /* every update now conflicts … */
    va.fail_get = GD_ERR_TRANSPORT;                   /* … and every get fails */
    assert_true(wait_leading(a, false, 2000));
    assert_true(gd_mono_ms() <= fence + 700);         /* stepped down by the renew deadline (+ one retry) */
    mgr_le_stop(a);
    pthread_join(th, NULL);
    mgr_le_destroy(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_config_validation, setup, teardown),
        cmocka_unit_test_setup_teardown(test_create_when_absent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_standby_waits_for_expiry_on_its_own_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_renewal_restarts_standby_clock, setup, teardown),
        cmocka_unit_test_setup_teardown(test_record_timestamps_not_trusted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_race_for_expired_lease_one_winner, setup, teardown),
        cmocka_unit_test_setup_teardown(test_release_lets_standby_take_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_watch_observation_times_expiry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fast_path_conflict_falls_back, setup, teardown),
        cmocka_unit_test_setup_teardown(test_errors_and_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_lease_json_roundtrip_and_hostile, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_acquire_renew_release, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loop_loses_lease_when_store_fails, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
