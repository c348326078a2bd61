/* test_informer_watchline.c — the watch fast path (informer/watchline.c): for every line it
 * takes, the same object as the general path (cJSON parse, inf_obj_from_json: managedFields
 * dropped, everything else kept, same key, resourceVersion and shard); every line it is not
 * sure about is left to the general path. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gd_json.h"
#include "gd_proto.h"
#include "../../informer/informer.h"

/* The general path's object for a watch line (as k8s_watch_decoder + reflector make it). */
static inf_obj *slow(const char *kind, const char *line)
{
    cJSON *ev = cJSON_Parse(line);
    assert_non_null(ev);
    inf_obj *o = inf_obj_from_json(kind, cJSON_GetObjectItemCaseSensitive(ev, "object"), NULL,
                                   0, NULL);
    cJSON_Delete(ev);
    return o;
}

/* The fast path takes the line and makes the general path's object, as JSON values. */
static void same(const char *kind, const char *line, gd_ev want_ev)
{
    gd_ev ev = (gd_ev)-1;
    inf_obj *f = NULL, *s = slow(kind, line);
    assert_int_equal(inf_obj_from_watch_line(kind, line, strlen(line), &ev, &f), 1);
    assert_non_null(f);
    assert_non_null(s);
    assert_int_equal(ev, want_ev);
    assert_string_equal(f->key, s->key);
    assert_string_equal(f->rv, s->rv);
    assert_int_equal(f->shard, s->shard);
    assert_int_equal(strlen(f->body), f->body_len);
    cJSON *fj = cJSON_Parse(f->body), *sj = cJSON_Parse(s->body);
    assert_non_null(fj);
    if (strcmp(f->body, s->body) != 0 && !cJSON_Compare(fj, sj, 1))   /* duplicate keys: text */
        fail_msg("bodies differ:\n fast %s\n slow %s", f->body, s->body);
    assert_null(gd_json_path(fj, "metadata.managedFields"));
    cJSON_Delete(fj);
    cJSON_Delete(sj);
    inf_obj_unref(f);
    inf_obj_unref(s);
}

static void left(const char *line)
{
    gd_ev ev;
    inf_obj *f = (inf_obj *)1;
    assert_int_equal(inf_obj_from_watch_line("ConfigMap", line, strlen(line), &ev, &f), 0);
    assert_null(f);
}

#define MF "\"managedFields\":[{\"manager\":\"m\",\"fieldsV1\":{\"f:data\":{\".\":{}}}}]"

static void test_same_as_general_path(void **state)
{
    (void)state;
    /* managedFields in the middle, first, last, alone, absent */
    same("ConfigMap", "{\"type\":\"ADDED\",\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\","
         "\"metadata\":{\"name\":\"a\",\"namespace\":\"ns\"," MF ",\"resourceVersion\":\"7\"},"
         "\"data\":{\"k\":\"v\\n\\u00e9\\\"\"}}}", GD_EV_ADDED);
    same("ConfigMap", "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{" MF ",\"name\":\"a\","
         "\"namespace\":\"ns\",\"resourceVersion\":\"8\"}}}", GD_EV_MODIFIED);
    same("ConfigMap", "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"name\":\"a\","
         "\"resourceVersion\":\"9\"," MF "},\"x\":[1,-2.5e+3,0.25,true,false,null,[],{}]}}",
         GD_EV_DELETED);
}

static void test_same_shapes(void **state)
{
    (void)state;
    same("ConfigMap", "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"b\"}}}",
         GD_EV_ADDED);
    /* whitespace between tokens, the object before the type */
    same("ConfigMap", " { \"object\" : { \"metadata\" : { \"name\" : \"c\" , " MF " } } ,"
         " \"type\" : \"ADDED\" } ", GD_EV_ADDED);
    /* the shard from labels and from the controller owner, as the general path */
    same("ReplicaSet", "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"r\",\"namespace\":"
         "\"n\",\"labels\":{\"cluster-name\":\"g\"}," MF "}}}", GD_EV_ADDED);
    same("Pod", "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\","
         "\"ownerReferences\":[{\"kind\":\"GodisCluster\",\"name\":\"g\",\"controller\":true}]}}}",
         GD_EV_ADDED);
    /* a key with an escape below metadata is only copied */
    same("ConfigMap", "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"d\",\"labels\":"
         "{\"a\\u002fb\":\"x\"}},\"data\":{\"k\\\"q\":\"\\/\"}}}", GD_EV_ADDED);
    /* duplicate keys: the first "object" and the first "metadata" count, as in cJSON */
    same("ConfigMap", "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"e\"," MF "},"
         "\"metadata\":{\"name\":\"z\"}},\"object\":{\"metadata\":{\"name\":\"y\"}}}",
         GD_EV_ADDED);
}

static void test_left_to_general_path(void **state)
{
    (void)state;
    left("{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"5\"}}}");
    left("{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"namespace\":\"n\"}}}");   /* no name */
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{" MF "},\"metadata\":{}}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":[]}}");
    left("{\"type\":\"ADDED\"}");
    left("{\"type\":7,\"object\":{\"metadata\":{\"name\":\"a\"}}}");
    left("{\"type\":\"ADD\\u0045D\",\"object\":{\"metadata\":{\"name\":\"a\"}}}");
    /* keys with escapes where we look, which cJSON would decode */
    left("{\"type\":\"ADDED\",\"object\":{\"meta\\u0064ata\":{\"name\":\"a\"}}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\",\"m\\u0061nagedFields\":[]}}}");
    /* surrogates, control characters, bad escapes, non-strict numbers and literals */
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"s\":\"\\ud83d\\ude00\"}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"s\":\"a\tb\"}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"s\":\"\\x\"}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"n\":01}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"n\":1.}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"n\":+1}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"n\":tru}}");
    /* not one JSON value */
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}}}x");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},}}");
    left("{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"}} {}");
    left("[]");
    left("");
}

static void test_deep_nesting_left(void **state)
{
    (void)state;
    enum { D = 600 };
    char *line = malloc(2 * D + 128);
    int n = sprintf(line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"a\"},\"x\":");
    for (int i = 0; i < D; i++)
        line[n++] = '[';
    for (int i = 0; i < D; i++)
        line[n++] = ']';
    strcpy(line + n, "}}");
    left(line);
    free(line);
}

/* Strings are scanned 8 bytes at a time: a quote, backslash or control character at every
 * offset of a long value is still seen. */
static void test_long_strings(void **state)
{
    (void)state;
    for (int at = 0; at < 24; at++) {
        char v[64], line[256];
        memset(v, 'a', 40);
        v[40] = '\0';
        memcpy(v + at, "\\\"", 2);                   /* an escaped quote: kept */
        snprintf(line, sizeof line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":"
                 "\"n\"},\"s\":\"%s\",\"t\":\"%s\"}}", v, v + at);
        same("ConfigMap", line, GD_EV_ADDED);
        memset(v, 'a', 40);
        v[at] = '\x01';                              /* a raw control character: left */
        snprintf(line, sizeof line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":"
                 "\"n\"},\"s\":\"%s\"}}", v);
        left(line);
        v[at] = '"';                                  /* a quote ends the string early: invalid */
        snprintf(line, sizeof line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":"
                 "\"n\"},\"s\":\"%s\"}}", v);
        left(line);
        v[at] = (char)0xc3;                           /* UTF-8 bytes are plain */
        v[at + 1] = (char)0xa9;
        snprintf(line, sizeof line, "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":"
                 "\"n\"},\"s\":\"%s\"}}", v);
        same("ConfigMap", line, GD_EV_ADDED);
    }
}

/* ---- list pages: the same objects as reflector.c's add_page (type meta added when missing,
 * then inf_obj_from_json), the same resourceVersion and continue token */
static void page_same(const char *res_kind, const char *body, size_t want_n, const char *want_rv,
                      const char *want_cont)
{
    inf_obj **v = NULL;
    size_t n = 99;
    char rv[64], cont[64];
    assert_int_equal(inf_list_page_scan("ConfigMap", res_kind, body, strlen(body), &v, &n, rv,
                                        sizeof rv, cont, sizeof cont), 1);
    assert_int_equal(n, want_n);
    assert_string_equal(rv, want_rv);
    assert_string_equal(cont, want_cont);
    cJSON *page = cJSON_Parse(body), *item;
    const char *api = gd_json_str_or(page, "apiVersion", ""), *lk = gd_json_str_or(page, "kind", "");
    char kind[128];
    size_t kl = strlen(lk);
    if (kl > 4 && kl < sizeof kind && strcmp(lk + kl - 4, "List") == 0)
        snprintf(kind, sizeof kind, "%.*s", (int)(kl - 4), lk);
    else
        snprintf(kind, sizeof kind, "%s", res_kind);
    size_t i = 0;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(page, "items")) {
        if (!cJSON_GetObjectItemCaseSensitive(item, "kind") && *kind)
            cJSON_AddStringToObject(item, "kind", kind);
        if (!cJSON_GetObjectItemCaseSensitive(item, "apiVersion") && *api)
            cJSON_AddStringToObject(item, "apiVersion", api);
        inf_obj *s = inf_obj_from_json("ConfigMap", item, NULL, 0, NULL);
        assert_non_null(s);
        assert_true(i < n);
        assert_string_equal(v[i]->key, s->key);
        assert_string_equal(v[i]->rv, s->rv);
        assert_int_equal(v[i]->shard, s->shard);
        assert_int_equal(strlen(v[i]->body), v[i]->body_len);
        cJSON *fj = cJSON_Parse(v[i]->body), *sj = cJSON_Parse(s->body);
        assert_non_null(fj);
        if (!cJSON_Compare(fj, sj, 1))
            fail_msg("bodies differ:\n fast %s\n slow %s", v[i]->body, s->body);
        cJSON_Delete(fj);
        cJSON_Delete(sj);
        inf_obj_unref(s);
        inf_obj_unref(v[i]);
        i++;
    }
    assert_int_equal(i, n);
    cJSON_Delete(page);
    free(v);
}

static void page_left(const char *body)
{
    inf_obj **v = (inf_obj **)1;
    size_t n = 99;
    char rv[64], cont[8];
    if (inf_list_page_scan("ConfigMap", "ConfigMap", body, strlen(body), &v, &n, rv, sizeof rv,
                           cont, sizeof cont) != 0)
        fail_msg("taken: %s", body);
    assert_null(v);
    assert_int_equal(n, 0);
}

static void test_list_pages(void **state)
{
    (void)state;
    page_same("ConfigMap", "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":"
              "{\"resourceVersion\":\"77\",\"continue\":\"abc\"},\"items\":[{\"metadata\":"
              "{\"name\":\"a\",\"namespace\":\"n\"," MF ",\"resourceVersion\":\"5\"},\"data\":"
              "{\"k\":\"v\"}},{\"kind\":\"X\",\"metadata\":{\"name\":\"b\"}},{\"apiVersion\":"
              "\"v2\",\"metadata\":{" MF ",\"name\":\"c\"} }]}", 3, "77", "abc");
    /* no List suffix: the resource's kind; no apiVersion: none added; no metadata */
    page_same("Pod", "{\"kind\":\"List\",\"items\":[{\"metadata\":{\"name\":\"p\"}}]}", 1, "", "");
    page_same("Pod", "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":[]}",
              0, "", "");
    page_same("Pod", "{\"items\":null,\"metadata\":{\"resourceVersion\":\"9\"}}", 0, "9", "");
    page_left("{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"namespace\":\"n\"}}]}");
    page_left("{\"kind\":\"PodList\",\"items\":[7]}");
    /* an object as items: cJSON would iterate its members */
    page_left("{\"kind\":\"PodList\",\"items\":{\"x\":{\"metadata\":{\"name\":\"a\"}}}}");
    page_left("{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"a\"}}]");
    page_left("{\"kind\":\"Pod\\\"List\",\"items\":[]}");
    page_left("{\"metadata\":{\"continue\":\"a-token-longer-than-eight\"},\"items\":[]}");
    page_left("{\"metadata\":{\"continue\":\"a\\u0062\"},\"items\":[]}");
    page_left("");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_general_path), cmocka_unit_test(test_same_shapes),
        cmocka_unit_test(test_left_to_general_path), cmocka_unit_test(test_deep_nesting_left),
        cmocka_unit_test(test_long_strings),         cmocka_unit_test(test_list_pages),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    inf_watch_line_release();
    inf_obj_scratch_release();
    return rc;
}
