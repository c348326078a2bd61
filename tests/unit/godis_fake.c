/* godis_fake.c — see godis_fake.h. */
#include "godis_fake.h"
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "godis_children.h"

int64_t gf_id_of(const char *name)
{
    const char *dash = strrchr(name, '-');
    return dash ? strtoll(dash + 1, NULL, 10) : 0;
}

cJSON *gf_godis(int64_t id, bool preferred)
{
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"kumkeehyun.github.com/v1\",\"kind\":\"Godis\",\"metadata\":{"
             "\"name\":\"c-%lld\",\"namespace\":\"ns\",\"uid\":\"gu%lld\",\"resourceVersion\":\"9\","
             "\"labels\":{\"cluster-name\":\"c\"},\"finalizers\":[\"" GODIS_FINALIZER "\"],"
             "\"ownerReferences\":[{\"apiVersion\":\"kumkeehyun.github.com/v1\","
             "\"kind\":\"GodisCluster\",\"name\":\"c\",\"uid\":\"cu\",\"controller\":true}]},"
             "\"spec\":{\"preferred\":%s},\"status\":{\"state\":\"Running\"}}",
             (long long)id, (long long)id, preferred ? "true" : "false");
    return cJSON_Parse(buf);
}

cJSON *gf_pod(int64_t id, const char *ip)
{
    char buf[1024];
    snprintf(buf, sizeof buf,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"c-%lld-x\","
             "\"namespace\":\"ns\",\"uid\":\"pu%lld\",\"labels\":{\"cluster-name\":\"c\","
             "\"node-name\":\"c-%lld\"}},\"spec\":{\"nodeName\":\"node-1\"},\"status\":{"
             "\"phase\":\"Running\",\"podIP\":\"%s\",\"conditions\":[{\"type\":"
             "\"Ready\",\"status\":\"True\"}]}}",
             (long long)id, (long long)id, (long long)id, ip);
    return cJSON_Parse(buf);
}

cJSON *gf_list(const char *kind, const char *key, const char *value, int n,
               int preferred_upto, bool ip_per_member)
{
    cJSON *out = cJSON_CreateArray();
    bool all = !strcmp(key ? key : "", "cluster-name");
    for (int64_t id = 1; id <= n; id++) {
        char name[32], ip[32];
        snprintf(name, sizeof name, "c-%lld", (long long)id);
        snprintf(ip, sizeof ip, "127.0.0.%lld", ip_per_member ? (long long)id : 1LL);
        if (!all && strcmp(value ? value : "", name) != 0) continue;
        if (!strcmp(kind, "Godis")) cJSON_AddItemToArray(out, gf_godis(id, id <= preferred_upto));
        if (!strcmp(kind, "Pod")) cJSON_AddItemToArray(out, gf_pod(id, ip));
    }
    return out;
}

cJSON *gf_node_ready(const char *name)
{
    char buf[256];
    snprintf(buf, sizeof buf, "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"conditions\":"
             "[{\"type\":\"Ready\",\"status\":\"True\"}]}}", name);
    return cJSON_Parse(buf);
}

int gf_closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &l) != 0) {
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}
