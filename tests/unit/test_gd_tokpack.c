/* test_gd_tokpack.c — the token packer: what it packs (random hex and base64 tokens in
 * real object shapes) and what it leaves (words, paths, numbers, short runs), lossless round
 * trips of random and adversarial input, and corrupt text or side data refused. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "gd_tokpack.h"

typedef struct {
    char *text;
    unsigned char *side;
    size_t tn, sn;
} split_t;

/* Splits s, checks that neither part outgrows it and that it joins back to s exactly. */
static split_t split_ok(const char *s, size_t n)
{
    split_t r = {malloc(n + 1), malloc(n + 1), 0, 0};
    r.tn = gd_tokpack_split(s, n, NULL, r.text, r.side, &r.sn);
    assert_true(r.tn <= n);
    assert_true(r.sn <= n);
    char *back = malloc(n + 1);
    assert_int_equal(gd_tokpack_join(r.text, r.tn, r.side, r.sn, back, n), 0);
    assert_memory_equal(back, s, n);
    free(back);
    return r;
}

static void split_free(split_t *r)
{
    free(r->text);
    free(r->side);
}

static size_t count_byte(const char *s, size_t n, char c)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += s[i] == c;
    return k;
}

static void test_packs_digests_and_keys(void **state)
{
    (void)state;
    char hex1[65], hex2[65], key[45], pod[512];
    for (int i = 0; i < 64; i++) {
        hex1[i] = "0123456789abcdef"[(i * 7 + 3) % 16];
        hex2[i] = "0123456789abcdef"[(i * 5 + 1) % 16];
    }
    for (int i = 0; i < 44; i++)
        key[i] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[(i * 37) % 64];
    hex1[64] = hex2[64] = key[44] = 0;
    int n = snprintf(pod, sizeof pod, "{\"containerID\":\"containerd://%s\",\"imageID\":"
                     "\"docker.io/library/nginx@sha256:%s\",\"token\":\"%s\",\"uid\":"
                     "\"26241f2c-4798-4a5a-8e7c-b9b2d58f1079\"}", hex1, hex2, key);
    split_t r = split_ok(pod, (size_t)n);
    assert_int_equal(count_byte(r.text, r.tn, GD_TOKPACK_HEX), 2);
    assert_int_equal(count_byte(r.text, r.tn, GD_TOKPACK_B64), 1);
    assert_non_null(memmem(r.text, r.tn, "containerd://\x01\"", 15));
    assert_non_null(memmem(r.text, r.tn, "sha256:\x01\"", 9));
    assert_non_null(memmem(r.text, r.tn, "\"uid\":\"\x03\"", 9));
    /* each token is its bits and a length byte: 64 hex digits 32 bytes, 44 base64
     * characters 33; the UUID its 16 bytes */
    assert_int_equal(r.sn, 2 * (1 + 32) + 1 + 33 + 16);
    assert_int_equal(r.tn, (size_t)n - 2 * 64 - 44 - 36 + 4);
    split_free(&r);
}

/* A token seen again in the same text is a reference to the first copy; a token in the
 * keep set stays in the text. */
static void test_repeats_and_keep(void **state)
{
    (void)state;
    const char *digest = "0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31";
    const char *uid = "26241f2c-4798-4a5a-8e7c-b9b2d58f1079";
    char s[512];
    int n = snprintf(s, sizeof s, "{\"image\":\"r@sha256:%s\",\"uid\":\"%s\",\"imageID\":"
                     "\"r@sha256:%s\",\"owner\":\"%s\"}", digest, uid, digest, uid);
    split_t r = split_ok(s, (size_t)n);
    assert_int_equal(count_byte(r.text, r.tn, GD_TOKPACK_HEX), 1);
    assert_int_equal(count_byte(r.text, r.tn, GD_TOKPACK_UUID), 1);
    assert_int_equal(count_byte(r.text, r.tn, GD_TOKPACK_REF), 2);
    /* the digest (1 + 32 bytes), the uid (16), and a one-byte index for each copy */
    assert_int_equal(r.sn, 1 + 32 + 16 + 1 + 1);
    split_free(&r);

    uint64_t h[2] = {gd_tokpack_hash(digest, strlen(digest)), gd_tokpack_hash(uid, strlen(uid))};
    if (h[0] < h[1]) {                          /* out of order, for gd_tokpack_sort */
        uint64_t x = h[0];
        h[0] = h[1];
        h[1] = x;
    }
    gd_tokpack_sort(h, 2);
    assert_true(h[0] < h[1]);
    gd_tokpack_keep keep = {h, 2};
    char text[512], back[512];
    unsigned char side[512];
    size_t sn = 1;
    size_t tn = gd_tokpack_split(s, (size_t)n, &keep, text, side, &sn);
    assert_int_equal(sn, 0);                    /* both kept: the text is the input */
    assert_int_equal(tn, (size_t)n);
    assert_memory_equal(text, s, tn);
    keep.n = 0;
    tn = gd_tokpack_split(s, (size_t)n, &keep, text, side, &sn);
    assert_true(sn > 0);
    assert_int_equal(gd_tokpack_join(text, tn, side, sn, back, (size_t)n), 0);
    assert_memory_equal(back, s, (size_t)n);
    /* the hashes a split would take out, repeats included */
    uint64_t got[8];
    assert_int_equal(gd_tokpack_hashes(s, (size_t)n, got, 8), 4);
    assert_int_equal(gd_tokpack_hashes(s, (size_t)n, got, 3), 3);
    assert_true(got[0] == got[2] && got[1] != got[0]);
}

static void test_leaves_words_paths_numbers(void **state)
{
    (void)state;
    /* words and paths of base64 characters, a long decimal number (no hex letter), a
     * short hex id, a JSON escape before a run: nothing here looks random enough */
    const char *s = "{\"selfLink\":\"/api/v1/namespaces/kube-system/configmaps/x\","
                    "\"creationTimestamp\":\"2026-11-27T12:20:01Z\",\"n\":12345678901234567890,"
                    "\"notuid\":\"26241F2C-4798-4A5A-8E7C-B9B2D58F1079\",\"kubernetesVersion"
                    "Information\":\"\\nabcdefabcdef\",\"deadbeef\":\"abcdeffedcbaabcdef\"}";
    split_t r = split_ok(s, strlen(s));
    assert_int_equal(r.sn, 0);
    assert_int_equal(r.tn, strlen(s));
    assert_memory_equal(r.text, s, r.tn);
    split_free(&r);
}

static void test_input_with_marker_bytes_is_kept(void **state)
{
    (void)state;
    char s[] = "x\x03y 0123456789abcdef0123456789abcdef";
    split_t r = split_ok(s, sizeof s - 1);
    assert_int_equal(r.sn, 0);
    assert_memory_equal(r.text, s, sizeof s - 1);
    split_free(&r);
}

static uint64_t rnd(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Random texts drawn from alphabets that make runs of every kind and length, and runs cut
 * by escapes and odd lengths: every one joins back exactly. */
static void test_random_round_trips(void **state)
{
    (void)state;
    static const char *alpha[] = {"0123456789abcdef", "0123456789abcdef-:\\\"", "0123456789abcdef-",
                                  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/",
                                  "Aa0+/=\\n\" .", "abcdefghijklmnopqrstuvwxyz0123456789/_"};
    uint64_t x = 88172645463325252ull;
    char buf[4096];
    size_t packed = 0, refs = 0;
    for (int iter = 0; iter < 3000; iter++) {
        size_t n = rnd(&x) % sizeof buf;
        for (size_t i = 0; i < n;) {
            if (rnd(&x) % 7 == 0 && n - i > 37) {   /* a UUID, sometimes spoilt */
                for (int k = 0; k < 36; k++)
                    buf[i + (size_t)k] = (k == 8 || k == 13 || k == 18 || k == 23) ? '-' :
                                         "0123456789abcdef"[rnd(&x) % 16];
                if (rnd(&x) % 3 == 0)
                    buf[i + rnd(&x) % 37] = "Gz-/"[rnd(&x) % 4];
                i += 36;
                continue;
            }
            if (rnd(&x) % 9 == 0 && i > 100) {      /* a stretch seen before: repeats */
                size_t from = rnd(&x) % (i - 90), len = 16 + rnd(&x) % 70;
                for (; len && i < n; len--)
                    buf[i++] = buf[from++];
                continue;
            }
            const char *a = alpha[rnd(&x) % 6];
            size_t run = 1 + rnd(&x) % 200, al = strlen(a);
            for (; run && i < n; run--)
                buf[i++] = a[rnd(&x) % al];
        }
        split_t r = split_ok(buf, n);
        packed += r.sn > 0;
        refs += count_byte(r.text, r.tn, GD_TOKPACK_REF) > 0;
        split_free(&r);
    }
    assert_true(packed > 1000);     /* the round trips did exercise the packing */
    assert_true(refs > 300);        /* and references to repeated tokens */
}

static void test_corrupt_input_refused(void **state)
{
    (void)state;
    const char *s = "a=\"0d17b565c37bcbd895e9d92315a05c1c\" b=\"Zm9vYmFyQmF6cXV4MTIz\"";
    size_t n = strlen(s);
    split_t r = split_ok(s, n);
    assert_int_equal(count_byte(r.text, r.tn, GD_TOKPACK_HEX) +
                     count_byte(r.text, r.tn, GD_TOKPACK_B64), 2);
    char out[256];
    /* one side byte short, one too many, out one byte short or long */
    assert_int_equal(gd_tokpack_join(r.text, r.tn, r.side, r.sn - 1, out, n), -1);
    unsigned char more[256];
    memcpy(more, r.side, r.sn);
    more[r.sn] = 0;
    assert_int_equal(gd_tokpack_join(r.text, r.tn, more, r.sn + 1, out, n), -1);
    assert_int_equal(gd_tokpack_join(r.text, r.tn, r.side, r.sn, out, n - 1), -1);
    assert_int_equal(gd_tokpack_join(r.text, r.tn, r.side, r.sn, out, n + 1), -1);
    /* a length of zero, a varint that never ends, an extra marker in the text */
    memcpy(more, r.side, r.sn);
    more[0] = 0;
    assert_int_equal(gd_tokpack_join(r.text, r.tn, more, r.sn, out, n), -1);
    memset(more, 0xff, r.sn);
    assert_int_equal(gd_tokpack_join(r.text, r.tn, more, r.sn, out, n), -1);
    char text[256];
    memcpy(text, r.text, r.tn);
    text[r.tn] = GD_TOKPACK_B64;
    assert_int_equal(gd_tokpack_join(text, r.tn + 1, r.side, r.sn, out, n), -1);
    /* a reference to a token that was never packed */
    char refd[4] = {'a', GD_TOKPACK_REF, 'b', 0};
    unsigned char zero = 0;
    assert_int_equal(gd_tokpack_join(refd, 3, &zero, 1, out, 2 + 16), -1);
    /* no side: the text must be the whole output */
    assert_int_equal(gd_tokpack_join(s, n, NULL, 0, out, n - 1), -1);
    assert_int_equal(gd_tokpack_join(s, n, NULL, 0, out, n), 0);
    split_free(&r);
}

/* Ascending over the whole 64-bit range (a signed or truncated compare would misorder the
 * top half), repeats kept, and 0 or 1 items left alone. */
static void test_sort(void **state)
{
    (void)state;
    uint64_t h[6] = {UINT64_MAX, 5, 1ull << 63, 5, 0, (1ull << 63) - 1};
    gd_tokpack_sort(h, 6);
    const uint64_t want[6] = {0, 5, 5, (1ull << 63) - 1, 1ull << 63, UINT64_MAX};
    assert_memory_equal(h, want, sizeof want);
    uint64_t one = 7;
    gd_tokpack_sort(&one, 1);
    gd_tokpack_sort(NULL, 0);
    assert_int_equal(one, 7);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort),
        cmocka_unit_test(test_packs_digests_and_keys),
        cmocka_unit_test(test_repeats_and_keep),
        cmocka_unit_test(test_leaves_words_paths_numbers),
        cmocka_unit_test(test_input_with_marker_bytes_is_kept),
        cmocka_unit_test(test_random_round_trips),
        cmocka_unit_test(test_corrupt_input_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
