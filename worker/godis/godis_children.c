/* godis_children.c — see godis_children.h. The pod contract (names, labels, env names,
 * mount path, ports) is the original Go controller's, so clusters it created keep working. */
#include "godis_children.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include "gd_hash.h"
#include "gd_json.h"
#include "gd_quantity.h"
#include "godis_reconcile.h"

#define API_GROUP_VERSION "kumkeehyun.github.com/v1"

int64_t godis_id_from_name(const char *cluster, const char *name)
{
    size_t cl = strlen(cluster);
    if (!name || strncmp(name, cluster, cl) != 0 || name[cl] != '-') return 0;
    const char *p = name + cl + 1;
    if (*p < '1' || *p > '9') return 0;
    char *end;
    errno = 0;
    long long v = strtoll(p, &end, 10);
    if (errno || *end || v <= 0) return 0;
    return v;
}

static cJSON *labels(const godis_child_spec *s)
{
    cJSON *l = cJSON_CreateObject();
    cJSON_AddStringToObject(l, "cluster-name", s->cluster);
    cJSON_AddStringToObject(l, "node-name", s->godis);
    return l;
}

static cJSON *owner_ref(const char *kind, const char *name, const char *uid)
{
    cJSON *arr = cJSON_CreateArray();
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", API_GROUP_VERSION);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddStringToObject(o, "name", name);
    cJSON_AddStringToObject(o, "uid", uid ? uid : "");
    cJSON_AddBoolToObject(o, "controller", 1);
    cJSON_AddBoolToObject(o, "blockOwnerDeletion", 1);
    cJSON_AddItemToArray(arr, o);
    return arr;
}

static cJSON *child_meta(const godis_child_spec *s, const char *name)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", s->ns);
    cJSON_AddItemToObject(m, "labels", labels(s));
    cJSON_AddItemToObject(m, "ownerReferences", owner_ref("Godis", s->godis, s->godis_uid));
    return m;
}

static cJSON *new_object(const char *api_version, const char *kind, cJSON *meta)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", api_version);
    cJSON_AddStringToObject(o, "kind", kind);
    cJSON_AddItemToObject(o, "metadata", meta);
    return o;
}

static cJSON *port(const char *name, int number)
{
    cJSON *p = cJSON_CreateObject();
    cJSON_AddStringToObject(p, "name", name);
    cJSON_AddNumberToObject(p, "port", number);
    cJSON_AddNumberToObject(p, "targetPort", number);
    cJSON_AddStringToObject(p, "protocol", "TCP");
    return p;
}

cJSON *godis_build_service(const godis_child_spec *s)
{
    char name[300];
    snprintf(name, sizeof name, "%s-endpoint", s->godis);
    cJSON *o = new_object("v1", "Service", child_meta(s, name));
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON *ports = cJSON_AddArrayToObject(spec, "ports");
    cJSON_AddItemToArray(ports, port("client", GODIS_CLIENT_PORT));
    cJSON_AddItemToArray(ports, port("peer", GODIS_PEER_PORT));
    cJSON_AddItemToObject(spec, "selector", labels(s));
    /* Headless, like a StatefulSet's governing Service: the name resolves to the member's
     * pod IP, which is all a Raft peer address needs, and no cluster IP is allocated. Before
     * Kubernetes 1.27 every cluster IP comes from one bitmap object in etcd updated with
     * compare-and-swap, so a burst of creates serialised on it (100 x 3 members: 291 of 300
     * creates took over 2 s, up to 15 s). Services adopted from the Go controller keep their
     * cluster IP: it is immutable and not drift (godis_child_drifted). */
    cJSON_AddStringToObject(spec, "clusterIP", "None");
    /* Peers must reach a member before it is Ready (Raft needs it to become Ready). */
    cJSON_AddBoolToObject(spec, "publishNotReadyAddresses", 1);
    return o;
}

cJSON *godis_build_pvc(const godis_child_spec *s)
{
    char name[300];
    snprintf(name, sizeof name, "data-%s", s->godis);
    cJSON *o = new_object("v1", "PersistentVolumeClaim", child_meta(s, name));
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON *modes = cJSON_AddArrayToObject(spec, "accessModes");
    cJSON_AddItemToArray(modes, cJSON_CreateString("ReadWriteOnce"));
    cJSON *req = cJSON_AddObjectToObject(cJSON_AddObjectToObject(spec, "resources"), "requests");
    if (s->storage_bytes > 0)          /* spec.storage.size given as an integer (bytes) */
        cJSON_AddItemToObject(req, "storage", cJSON_CreateNumber(s->storage_bytes));
    else
        cJSON_AddStringToObject(req, "storage", s->storage_size ? s->storage_size : GODIS_DEFAULT_STORAGE);
    if (s->storage_class) cJSON_AddStringToObject(spec, "storageClassName", s->storage_class);
    return o;
}

static void add_env(cJSON *env, const char *name, const char *value)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "value", value);
    cJSON_AddItemToArray(env, e);
}

/* spec.godis: godis is a Go program, and these are the settings of its runtime it honours
 * (the CRD validates them; a value of the wrong type from an object that bypassed it is left
 * out, and godis_input reports it). */
static void add_settings_env(cJSON *env, const cJSON *g)
{
    char v[64];
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(g, "goMaxProcs");
    if (cJSON_IsNumber(x) && x->valuedouble >= 1 && x->valuedouble <= 1024) {
        snprintf(v, sizeof v, "%d", (int)x->valuedouble);
        add_env(env, "GOMAXPROCS", v);
    }
    x = cJSON_GetObjectItemCaseSensitive(g, "goGC");
    if (cJSON_IsNumber(x) && x->valuedouble >= 1 && x->valuedouble <= 100000) {
        snprintf(v, sizeof v, "%d", (int)x->valuedouble);
        add_env(env, "GOGC", v);
    }
    x = cJSON_GetObjectItemCaseSensitive(g, "goMemLimit");
    if (cJSON_IsString(x) && godis_go_memlimit_valid(x->valuestring))
        add_env(env, "GOMEMLIMIT", x->valuestring);
}

bool godis_go_memlimit_valid(const char *s)
{
    if (!s || *s < '0' || *s > '9') return false;
    char *end;
    errno = 0;
    unsigned long long n = strtoull(s, &end, 10);
    (void)n;
    if (errno) return false;
    static const char *units[] = {"", "B", "KiB", "MiB", "GiB", "TiB"};
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcmp(end, units[i])) return true;
    return false;
}

static cJSON *container_resources(const godis_child_spec *s)
{
    if (cJSON_IsObject(s->resources)) return cJSON_Duplicate(s->resources, 1);
    cJSON *r = cJSON_CreateObject();
    cJSON *req = cJSON_AddObjectToObject(r, "requests");
    cJSON_AddStringToObject(req, "cpu", GODIS_DEFAULT_CPU_REQUEST);
    cJSON_AddStringToObject(req, "memory", GODIS_DEFAULT_MEMORY_REQUEST);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(r, "limits"), "memory", GODIS_DEFAULT_MEMORY_LIMIT);
    return r;
}

/* Set once at start-up (the worker's --default-godis-image), before any reconcile thread. */
static const char *default_image = GODIS_DEFAULT_IMAGE;
void godis_set_default_image(const char *image) { default_image = image && *image ? image : GODIS_DEFAULT_IMAGE; }
const char *godis_default_image(void) { return default_image; }

static cJSON *godis_container(const godis_child_spec *s)
{
    cJSON *c = cJSON_CreateObject();
    cJSON_AddStringToObject(c, "name", "godis");
    cJSON_AddStringToObject(c, "image", s->image ? s->image : godis_default_image());
    cJSON *args = cJSON_AddArrayToObject(c, "args");
    cJSON_AddItemToArray(args, cJSON_CreateString("cluster"));
    cJSON *env = cJSON_AddArrayToObject(c, "env");
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)s->id);
    add_env(env, "CLUSTER_ID", id);
    cJSON *ic = cJSON_CreateObject();
    cJSON_AddStringToObject(ic, "name", "CLUSTER_INITIAL-CLUSTER");
    cJSON *ref = cJSON_AddObjectToObject(cJSON_AddObjectToObject(ic, "valueFrom"), "configMapKeyRef");
    char cm[300];
    snprintf(cm, sizeof cm, "%s-config", s->cluster);
    cJSON_AddStringToObject(ref, "name", cm);
    cJSON_AddStringToObject(ref, "key", "initial-cluster");
    cJSON_AddItemToArray(env, ic);
    add_env(env, "CLUSTER_JOIN", s->preferred ? "false" : "true");
    add_env(env, "CLUSTER_WALDIR", "/tmp/godis/wal");
    add_env(env, "CLUSTER_SNAPDIR", "/tmp/godis/snap");
    add_settings_env(env, s->settings);
    cJSON *ports = cJSON_AddArrayToObject(c, "ports");
    cJSON *p1 = cJSON_CreateObject();
    cJSON_AddStringToObject(p1, "name", "client");
    cJSON_AddNumberToObject(p1, "containerPort", GODIS_CLIENT_PORT);
    cJSON_AddItemToArray(ports, p1);
    cJSON *p2 = cJSON_CreateObject();
    cJSON_AddStringToObject(p2, "name", "peer");
    cJSON_AddNumberToObject(p2, "containerPort", GODIS_PEER_PORT);
    cJSON_AddItemToArray(ports, p2);
    cJSON *mounts = cJSON_AddArrayToObject(c, "volumeMounts");
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", "data");
    cJSON_AddStringToObject(m, "mountPath", "/tmp/godis");
    cJSON_AddItemToArray(mounts, m);
    cJSON *probe = cJSON_AddObjectToObject(c, "readinessProbe");
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(probe, "tcpSocket"), "port", GODIS_CLIENT_PORT);
    cJSON_AddNumberToObject(probe, "periodSeconds", 1);
    /* Liveness on the same port, patient: a member replaying a long WAL must not be killed
     * into a restart loop; one whose client port stays dead for a minute is restarted (it
     * recovers from its WAL). */
    cJSON *live = cJSON_AddObjectToObject(c, "livenessProbe");
    cJSON_AddNumberToObject(cJSON_AddObjectToObject(live, "tcpSocket"), "port", GODIS_CLIENT_PORT);
    cJSON_AddNumberToObject(live, "initialDelaySeconds", 30);
    cJSON_AddNumberToObject(live, "periodSeconds", 10);
    cJSON_AddNumberToObject(live, "timeoutSeconds", 3);
    cJSON_AddNumberToObject(live, "failureThreshold", 6);
    cJSON_AddItemToObject(c, "resources", container_resources(s));
    /* godis is a static binary that writes only its WAL and snapshots (on the volume) and
     * listens above 1024: it needs no capability, no privilege escalation and no writable
     * root filesystem. It stays the image's user (root, no USER in the image): the volumes
     * of existing members, the Go controller's included, hold WAL files that user wrote, and
     * hostPath/local volumes ignore fsGroup. Without capabilities that root cannot override
     * file permissions, so it only writes what it owns. */
    cJSON *sc = cJSON_AddObjectToObject(c, "securityContext");
    cJSON_AddBoolToObject(sc, "allowPrivilegeEscalation", 0);
    cJSON_AddBoolToObject(sc, "privileged", 0);
    cJSON_AddBoolToObject(sc, "readOnlyRootFilesystem", 1);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(cJSON_AddObjectToObject(sc, "capabilities"), "drop"),
                         cJSON_CreateString("ALL"));
    return c;
}

/* Members of one cluster spread over nodes (kubernetes.io/hostname), so a node drain or
 * failure takes at most one of them where there are enough nodes: preferred by default (a
 * cluster still starts on fewer nodes than members), required on request (a member that
 * cannot be placed stays Pending, and a move waits for a free node), none to switch it off. */
static cJSON *anti_affinity(const godis_child_spec *s)
{
    const char *mode = s->anti_affinity ? s->anti_affinity : "preferred";
    if (!strcmp(mode, "none")) return NULL;
    cJSON *term = cJSON_CreateObject();
    cJSON_AddStringToObject(term, "topologyKey", "kubernetes.io/hostname");
    cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(term, "labelSelector"),
                                                    "matchLabels"), "cluster-name", s->cluster);
    cJSON *a = cJSON_CreateObject();
    cJSON *pa = cJSON_AddObjectToObject(a, "podAntiAffinity");
    if (!strcmp(mode, "required")) {
        cJSON_AddItemToArray(cJSON_AddArrayToObject(pa, "requiredDuringSchedulingIgnoredDuringExecution"), term);
    } else {
        cJSON *w = cJSON_CreateObject();
        cJSON_AddNumberToObject(w, "weight", 100);
        cJSON_AddItemToObject(w, "podAffinityTerm", term);
        cJSON_AddItemToArray(cJSON_AddArrayToObject(pa, "preferredDuringSchedulingIgnoredDuringExecution"), w);
    }
    return a;
}

/* Once a member has run, its pods may only run on the node that holds its data. A volume
 * that does not follow the pod (hostPath, a local disk whose PV says no node) would be an
 * empty one on any other node, and godis restarted empty under its old id is a voter that
 * lost its log: it votes twice and can elect a second leader (seen as two Raft groups in
 * one cluster by the chaos suite after a member pod was deleted and rescheduled). A member
 * whose node goes bad is migrated under a new id instead (docs/reconcile.md rules 5 and 6). */
static void pin_to_node(cJSON *pspec, const char *node)
{
    cJSON *field = cJSON_CreateObject();
    cJSON_AddStringToObject(field, "key", "metadata.name");
    cJSON_AddStringToObject(field, "operator", "In");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(field, "values"), cJSON_CreateString(node));
    cJSON *term = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(term, "matchFields"), field);
    cJSON *aff = cJSON_GetObjectItemCaseSensitive(pspec, "affinity");   /* the spread's */
    if (!aff) aff = cJSON_AddObjectToObject(pspec, "affinity");
    cJSON *req = cJSON_AddObjectToObject(cJSON_AddObjectToObject(aff, "nodeAffinity"),
                                         "requiredDuringSchedulingIgnoredDuringExecution");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(req, "nodeSelectorTerms"), term);
}

/* Whether nodeAffinity na is a pin pin_to_node made (one term, one matchFields on the node's
 * name), whatever node it names. */
static bool is_pin(const cJSON *na)
{
    const cJSON *term = cJSON_GetArrayItem(gd_json_path(na, "requiredDuringSchedulingIgnoredDuringExecution."
                                                            "nodeSelectorTerms"), 0);
    const cJSON *node = cJSON_GetArrayItem(gd_json_path(cJSON_GetArrayItem(gd_json_path(term, "matchFields"), 0),
                                                        "values"), 0);
    if (!cJSON_IsString(node)) return false;
    cJSON *pspec = cJSON_CreateObject();
    pin_to_node(pspec, node->valuestring);
    bool same = cJSON_Compare(gd_json_path(pspec, "affinity.nodeAffinity"), na, 1);
    cJSON_Delete(pspec);
    return same;
}

/* One requirement of a nodeSelectorTerm admits node alone: In with node as its only value,
 * on the node's name (matchFields) or its kubernetes.io/hostname label (matchExpressions;
 * the label the kubelet sets, compared with the node's name: where a provider makes them
 * differ the pin is simply kept). */
static bool requirement_is_node(const cJSON *r, const char *key, const char *node)
{
    const cJSON *values = gd_json_path(r, "values");
    const cJSON *v = cJSON_GetArrayItem(values, 0);
    return !strcmp(gd_json_str_or(r, "key", ""), key) &&
           !strcmp(gd_json_str_or(r, "operator", ""), "In") && cJSON_GetArraySize(values) == 1 &&
           cJSON_IsString(v) && !strcmp(v->valuestring, node);
}

bool godis_pv_confines_to_node(const cJSON *pv, const char *node)
{
    if (!node || !*node) return false;
    const cJSON *terms = gd_json_path(pv, "spec.nodeAffinity.required.nodeSelectorTerms");
    if (!cJSON_IsArray(terms) || cJSON_GetArraySize(terms) == 0) return false;
    /* Terms are ORed: each must confine. A term's requirements are ANDed: one that confines
     * is enough, the others can only narrow it further. */
    const cJSON *term, *r;
    cJSON_ArrayForEach(term, terms) {
        bool confined = false;
        cJSON_ArrayForEach(r, gd_json_path(term, "matchExpressions"))
            confined |= requirement_is_node(r, "kubernetes.io/hostname", node);
        cJSON_ArrayForEach(r, gd_json_path(term, "matchFields"))
            confined |= requirement_is_node(r, "metadata.name", node);
        if (!confined) return false;
    }
    return true;
}

const char *godis_pin_node_for_claim(godis_env *e, const cJSON *pvc, const char *volume_node)
{
    if (!volume_node || !*volume_node) return NULL;
    const char *pv_name = gd_json_str_or(pvc, "spec.volumeName", "");
    const cJSON *pv = *pv_name ? e->get(e, "PersistentVolume", "", pv_name) : NULL;
    bool confined = godis_pv_confines_to_node(pv, volume_node);
    godis_drop(pv);
    return confined ? NULL : volume_node;
}

const char *godis_pin_node(godis_env *e, const char *ns, const char *godis, const char *volume_node)
{
    if (!volume_node || !*volume_node) return NULL;
    char claim[300];
    snprintf(claim, sizeof claim, "data-%s", godis);
    const cJSON *pvc = e->get(e, "PersistentVolumeClaim", ns, claim);
    const char *node = godis_pin_node_for_claim(e, pvc, volume_node);
    godis_drop(pvc);
    return node;
}

bool godis_reserved_pod_label(const char *key)
{
    return !strcmp(key, "cluster-name") || !strcmp(key, "node-name");
}

static bool name_part_valid(const char *s, size_t n, bool empty_ok)
{
    if (n == 0) return empty_ok;
    if (n > 63) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (!alnum && ((i == 0 || i == n - 1) || (c != '-' && c != '_' && c != '.'))) return false;
    }
    return true;
}

bool godis_label_value_valid(const char *v)
{
    return v && name_part_valid(v, strlen(v), true);
}

bool godis_metadata_key_valid(const char *key)
{
    if (!key) return false;
    const char *slash = strchr(key, '/');
    const char *name = slash ? slash + 1 : key;
    if (slash) {
        size_t pl = (size_t)(slash - key);
        if (pl == 0 || pl > 253) return false;
        for (const char *p = key; p < slash; p++) {
            char c = *p;
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.')) return false;
        }
        if (key[0] == '-' || key[0] == '.' || slash[-1] == '-' || slash[-1] == '.') return false;
    }
    return name_part_valid(name, strlen(name), false);
}

/* Member pods' metadata: the user's labels and annotations (spec.podMetadata, string values
 * only, never our own keys), ours, and the template hash when known. */
static cJSON *template_meta(const godis_child_spec *s, const char *hash)
{
    cJSON *m = cJSON_CreateObject();
    cJSON *l = labels(s);
    const cJSON *kv;
    cJSON_ArrayForEach(kv, gd_json_path(s->pod_metadata, "labels"))
        if (cJSON_IsString(kv) && !godis_reserved_pod_label(kv->string) &&
            godis_metadata_key_valid(kv->string) && godis_label_value_valid(kv->valuestring))
            cJSON_AddStringToObject(l, kv->string, kv->valuestring);
    cJSON_AddItemToObject(m, "labels", l);
    cJSON *a = cJSON_CreateObject();
    cJSON_ArrayForEach(kv, gd_json_path(s->pod_metadata, "annotations"))
        if (cJSON_IsString(kv) && strcmp(kv->string, GODIS_ANN_TEMPLATE_HASH) &&
            godis_metadata_key_valid(kv->string))
            cJSON_AddStringToObject(a, kv->string, kv->valuestring);
    if (hash) cJSON_AddStringToObject(a, GODIS_ANN_TEMPLATE_HASH, hash);
    if (cJSON_GetArraySize(a)) cJSON_AddItemToObject(m, "annotations", a);
    else cJSON_Delete(a);
    return m;
}

static cJSON *build_template(const godis_child_spec *s, const char *hash)
{
    cJSON *tpl = cJSON_CreateObject();
    cJSON_AddItemToObject(tpl, "metadata", template_meta(s, hash));
    cJSON *pspec = cJSON_AddObjectToObject(tpl, "spec");
    cJSON_AddItemToArray(cJSON_AddArrayToObject(pspec, "containers"), godis_container(s));
    cJSON *vol = cJSON_CreateObject();
    cJSON_AddStringToObject(vol, "name", "data");
    char claim[300];
    snprintf(claim, sizeof claim, "data-%s", s->godis);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(vol, "persistentVolumeClaim"), "claimName", claim);
    cJSON_AddItemToArray(cJSON_AddArrayToObject(pspec, "volumes"), vol);
    cJSON_AddNumberToObject(pspec, "terminationGracePeriodSeconds", 10);
    cJSON *aff = anti_affinity(s);
    if (aff) cJSON_AddItemToObject(pspec, "affinity", aff);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(cJSON_AddObjectToObject(pspec, "securityContext"),
                                                    "seccompProfile"), "type", "RuntimeDefault");
    if (s->node && *s->node) pin_to_node(pspec, s->node);
    return tpl;
}

/* The member-specific inputs replaced by fixed ones: what is left is the spec's doing. */
void godis_template_hash(const godis_child_spec *s, char out[GODIS_HASH_LEN + 1])
{
    godis_child_spec canon = *s;
    char godis[300];
    snprintf(godis, sizeof godis, "%s-0", s->cluster ? s->cluster : "");
    canon.godis = godis;
    canon.godis_uid = "";
    canon.id = 0;
    canon.preferred = false;
    canon.node = NULL;
    cJSON *tpl = build_template(&canon, NULL);
    char *text = cJSON_PrintUnformatted(tpl);
    uint64_t h = gd_fnv1a64(text ? text : "", text ? strlen(text) : 0);
    snprintf(out, GODIS_HASH_LEN + 1, "%0*llx", GODIS_HASH_LEN,
             (unsigned long long)(h & ((1ULL << (4 * GODIS_HASH_LEN)) - 1)));
    cJSON_free(text);
    cJSON_Delete(tpl);
}

const char *godis_object_hash(const cJSON *obj)
{
    return gd_meta_annotation(obj, GODIS_ANN_TEMPLATE_HASH);
}

cJSON *godis_build_replicaset(const godis_child_spec *s)
{
    char hash[GODIS_HASH_LEN + 1];
    godis_template_hash(s, hash);
    cJSON *meta = child_meta(s, s->godis);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(meta, "annotations"), GODIS_ANN_TEMPLATE_HASH, hash);
    cJSON *o = new_object("apps/v1", "ReplicaSet", meta);
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddNumberToObject(spec, "replicas", 1);
    cJSON_AddItemToObject(cJSON_AddObjectToObject(spec, "selector"), "matchLabels", labels(s));
    cJSON_AddItemToObject(spec, "template", build_template(s, hash));
    return o;
}

void godis_child_spec_from_cluster(godis_child_spec *s, const cJSON *cluster)
{
    s->image = gd_json_str_or(cluster, "spec.image", NULL);
    s->storage_size = gd_json_str_or(cluster, "spec.storage.size", NULL);
    const cJSON *bytes = gd_json_path(cluster, "spec.storage.size");
    s->storage_bytes = cJSON_IsNumber(bytes) && bytes->valuedouble >= 1 ? bytes->valuedouble : 0;
    s->storage_class = gd_json_str_or(cluster, "spec.storage.storageClassName", NULL);
    s->resources = gd_json_path(cluster, "spec.resources");
    s->anti_affinity = gd_json_str_or(cluster, "spec.antiAffinity", NULL);
    s->pod_metadata = gd_json_path(cluster, "spec.podMetadata");
    s->settings = gd_json_path(cluster, "spec.godis");
}

cJSON *godis_build_godis(const godis_child_spec *s, const char *cluster_uid)
{
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", s->godis);
    cJSON_AddStringToObject(m, "namespace", s->ns);
    cJSON *l = cJSON_AddObjectToObject(m, "labels");
    cJSON_AddStringToObject(l, "cluster-name", s->cluster);
    cJSON_AddItemToObject(m, "ownerReferences", owner_ref("GodisCluster", s->cluster, cluster_uid));
    cJSON_AddItemToArray(cJSON_AddArrayToObject(m, "finalizers"), cJSON_CreateString(GODIS_FINALIZER));
    cJSON *o = new_object(API_GROUP_VERSION, "Godis", m);
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddBoolToObject(spec, "preferred", s->preferred);
    return o;
}

cJSON *godis_build_configmap(const char *ns, const char *cluster, const char *cluster_uid,
                             const char *initial_cluster)
{
    char name[300];
    snprintf(name, sizeof name, "%s-config", cluster);
    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "name", name);
    cJSON_AddStringToObject(m, "namespace", ns);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(m, "labels"), "cluster-name", cluster);
    cJSON_AddItemToObject(m, "ownerReferences", owner_ref("GodisCluster", cluster, cluster_uid));
    cJSON *o = new_object("v1", "ConfigMap", m);
    cJSON_AddStringToObject(cJSON_AddObjectToObject(o, "data"), "initial-cluster", initial_cluster);
    return o;
}

/* Compares one owned path; absent-vs-absent is equal. */
static bool path_differs(const cJSON *a, const cJSON *b, const char *path)
{
    const cJSON *x = gd_json_path(a, path), *y = gd_json_path(b, path);
    if (!x && !y) return false;
    if (!x || !y) return true;
    return !cJSON_Compare(x, y, 1);
}

bool godis_quantity_equal(const cJSON *a, const cJSON *b)
{
    long double x, y;
    if (!gd_quantity_parse(a, &x) || !gd_quantity_parse(b, &y)) return cJSON_Compare(a, b, 1);
    long double d = x > y ? x - y : y - x, m = x > y ? x : y;
    return d <= m * 1e-12L;
}

/* {requests, limits}: the same keys with equal quantities (absent and empty alike). */
static bool resources_equal(const cJSON *want, const cJSON *have)
{
    static const char *parts[] = {"requests", "limits"};
    for (int p = 0; p < 2; p++) {
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(want, parts[p]);
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(have, parts[p]);
        if (cJSON_GetArraySize(w) != cJSON_GetArraySize(h)) return false;
        const cJSON *q;
        cJSON_ArrayForEach(q, w)
            if (!godis_quantity_equal(q, cJSON_GetObjectItemCaseSensitive(h, q->string))) return false;
    }
    return true;
}

/* Containers are compared by the fields we set; the API server adds defaults
 * (terminationMessagePath, imagePullPolicy, probe thresholds...) that are not drift. */
static bool container_differs(const cJSON *want, const cJSON *have)
{
    static const char *owned[] = {"name", "image", "args", "env", "volumeMounts",
                                  "readinessProbe.tcpSocket", "livenessProbe.tcpSocket",
                                  "securityContext"};
    for (size_t i = 0; i < sizeof owned / sizeof *owned; i++)
        if (path_differs(want, have, owned[i])) return true;
    if (!resources_equal(cJSON_GetObjectItemCaseSensitive(want, "resources"),
                         cJSON_GetObjectItemCaseSensitive(have, "resources")))
        return true;
    const cJSON *wp = cJSON_GetObjectItemCaseSensitive(want, "ports");
    const cJSON *hp = cJSON_GetObjectItemCaseSensitive(have, "ports");
    if (cJSON_GetArraySize(wp) != cJSON_GetArraySize(hp)) return true;
    for (int i = 0; i < cJSON_GetArraySize(wp); i++)
        if (path_differs(cJSON_GetArrayItem(wp, i), cJSON_GetArrayItem(hp, i), "containerPort"))
            return true;
    return false;
}


/* A pin is never taken away: desired without one (its PV keeps the pod on the node by
 * itself, godis_pin_node) leaves a ReplicaSet pinned before as it is, as no write at all. */
static bool keeps_pin(const cJSON *desired, const cJSON *actual)
{
    const cJSON *have = gd_json_path(actual, GODIS_RS_PIN);
    return !gd_json_path(desired, GODIS_RS_PIN) && have && is_pin(have);
}

static bool pin_differs(const cJSON *desired, const cJSON *actual)
{
    return !keeps_pin(desired, actual) && path_differs(desired, actual, GODIS_RS_PIN);
}

static bool labels_missing(const cJSON *desired, const cJSON *actual)
{
    const cJSON *want = gd_json_path(desired, "metadata.labels");
    const cJSON *l;
    cJSON_ArrayForEach(l, want) {
        const char *have = gd_meta_label(actual, l->string);
        if (!have || strcmp(have, l->valuestring) != 0) return true;
    }
    return false;
}

bool godis_child_drifted(const char *kind, const cJSON *desired, const cJSON *actual)
{
    if (labels_missing(desired, actual)) return true;
    if (strcmp(kind, "Service") == 0) {
        if (path_differs(desired, actual, "spec.selector")) return true;
        const cJSON *wp = gd_json_path(desired, "spec.ports"), *hp = gd_json_path(actual, "spec.ports");
        if (cJSON_GetArraySize(wp) != cJSON_GetArraySize(hp)) return true;
        for (int i = 0; i < cJSON_GetArraySize(wp); i++) {
            const cJSON *a = cJSON_GetArrayItem(wp, i), *b = cJSON_GetArrayItem(hp, i);
            if (path_differs(a, b, "port") || path_differs(a, b, "name")) return true;
        }
        return false;
    }
    if (strcmp(kind, "ReplicaSet") == 0) {
        if (path_differs(desired, actual, "spec.replicas")) return true;
        if (path_differs(desired, actual, "spec.template.spec.securityContext.seccompProfile") ||
            pin_differs(desired, actual))
            return true;
        if (path_differs(desired, actual, "spec.template.spec.volumes")) {
            /* the API server defaults nothing inside persistentVolumeClaim volumes */
            return true;
        }
        const cJSON *wc = gd_json_path(desired, "spec.template.spec.containers");
        const cJSON *hc = gd_json_path(actual, "spec.template.spec.containers");
        if (cJSON_GetArraySize(wc) != cJSON_GetArraySize(hc)) return true;
        for (int i = 0; i < cJSON_GetArraySize(wc); i++)
            if (container_differs(cJSON_GetArrayItem(wc, i), cJSON_GetArrayItem(hc, i))) return true;
        return false;
    }
    /* PVC specs are immutable once bound; only labels can be repaired. */
    return false;
}

cJSON *godis_child_repair(const char *kind, const cJSON *desired, const cJSON *actual)
{
    cJSON *fixed = cJSON_Duplicate(actual, 1);
    cJSON *labels_have = gd_json_path(fixed, "metadata.labels");
    if (!labels_have) labels_have = cJSON_AddObjectToObject(cJSON_GetObjectItem(fixed, "metadata"), "labels");
    const cJSON *l;
    cJSON_ArrayForEach(l, gd_json_path(desired, "metadata.labels")) {
        cJSON_DeleteItemFromObjectCaseSensitive(labels_have, l->string);
        cJSON_AddStringToObject(labels_have, l->string, l->valuestring);
    }
    if (strcmp(kind, "Service") == 0) {
        gd_json_set(fixed, "spec.selector", cJSON_Duplicate(gd_json_path(desired, "spec.selector"), 1));
        gd_json_set(fixed, "spec.ports", cJSON_Duplicate(gd_json_path(desired, "spec.ports"), 1));
    } else if (strcmp(kind, "ReplicaSet") == 0) {
        gd_json_set(fixed, "spec.replicas", cJSON_CreateNumber(1));
        gd_json_set(fixed, "spec.template", cJSON_Duplicate(gd_json_path(desired, "spec.template"), 1));
        if (keeps_pin(desired, actual))
            gd_json_set(fixed, GODIS_RS_PIN, cJSON_Duplicate(gd_json_path(actual, GODIS_RS_PIN), 1));
        const char *hash = godis_object_hash(desired);
        cJSON *ann = gd_json_path(fixed, "metadata.annotations");
        if (hash && !cJSON_IsObject(ann)) {
            cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItem(fixed, "metadata"), "annotations");
            ann = cJSON_AddObjectToObject(cJSON_GetObjectItem(fixed, "metadata"), "annotations");
        }
        if (hash) {
            cJSON_DeleteItemFromObjectCaseSensitive(ann, GODIS_ANN_TEMPLATE_HASH);
            cJSON_AddStringToObject(ann, GODIS_ANN_TEMPLATE_HASH, hash);
        }
    }
    return fixed;
}

int godis_parse_initial_cluster(const char *value, int64_t *ids, int cap)
{
    int n = 0;
    const char *p = value;
    if (!p) return -1;
    while (*p) {
        char *end;
        long long id = strtoll(p, &end, 10);
        if (end == p || *end != '@' || id <= 0 || n >= cap) return -1;
        ids[n++] = id;
        p = strchr(end, ',');
        if (!p) break;
        p++;
    }
    return n;
}

bool godis_pod_on_template(const cJSON *pod, const char *want, const cJSON *rs)
{
    const char *have = godis_object_hash(pod);
    if (!have) have = rs ? gd_meta_annotation(rs, GODIS_ANN_UNHASHED_PODS) : NULL;
    return have && want && !strcmp(have, want);
}

cJSON *godis_replicaset_fix(const cJSON *desired, const cJSON *actual)
{
    const char *want = godis_object_hash(desired), *have = godis_object_hash(actual);
    bool drifted = godis_child_drifted("ReplicaSet", desired, actual);
    if (have && want && !strcmp(have, want))
        return drifted ? godis_child_repair("ReplicaSet", desired, actual) : NULL;
    if (!have && want) {                         /* made before template hashes: adopt it */
        cJSON *fixed = godis_child_repair("ReplicaSet", desired, actual);
        cJSON *ann = gd_json_path(fixed, "metadata.annotations");
        cJSON_DeleteItemFromObjectCaseSensitive(ann, GODIS_ANN_UNHASHED_PODS);
        cJSON_AddStringToObject(ann, GODIS_ANN_UNHASHED_PODS, want);
        return fixed;
    }
    /* Out of date: the rollout's. Replicas and the node pin only, in place. */
    cJSON *fixed = cJSON_Duplicate(actual, 1);
    bool changed = false;
    if (path_differs(desired, actual, "spec.replicas")) {
        gd_json_set(fixed, "spec.replicas", cJSON_CreateNumber(1));
        changed = true;
    }
    const cJSON *want_pin = gd_json_path(desired, GODIS_RS_PIN);
    if (want_pin && path_differs(desired, actual, GODIS_RS_PIN)) {
        gd_json_set(fixed, GODIS_RS_PIN, cJSON_Duplicate(want_pin, 1));
        changed = true;
    }
    if (labels_missing(desired, actual)) {
        cJSON *l = cJSON_Duplicate(gd_json_path(actual, "metadata.labels"), 1);
        if (!cJSON_IsObject(l)) { cJSON_Delete(l); l = cJSON_CreateObject(); }
        const cJSON *kv;
        cJSON_ArrayForEach(kv, gd_json_path(desired, "metadata.labels")) {
            cJSON_DeleteItemFromObjectCaseSensitive(l, kv->string);
            cJSON_AddStringToObject(l, kv->string, kv->valuestring);
        }
        gd_json_set(fixed, "metadata.labels", l);
        changed = true;
    }
    if (!changed) cJSON_Delete(fixed);
    return changed ? fixed : NULL;
}

bool godis_replicaset_pin_only(const cJSON *desired, const cJSON *actual)
{
    const cJSON *want_pin = gd_json_path(desired, GODIS_RS_PIN);
    if (!want_pin || gd_json_path(actual, GODIS_RS_PIN)) return false;
    cJSON *pinned = cJSON_Duplicate(actual, 1);
    gd_json_set(pinned, GODIS_RS_PIN, cJSON_Duplicate(want_pin, 1));
    cJSON *more = godis_replicaset_fix(desired, pinned);
    bool only = more == NULL;
    cJSON_Delete(more);
    cJSON_Delete(pinned);
    return only;
}
