/* gd_httpd.c — see gd_httpd.h. */
#include "gd_httpd.h"
#include <stdlib.h>
#include <string.h>

gd_mhd_ret gd_httpd_reply(struct MHD_Connection *c, unsigned code, const char *type, char *body,
                          bool owned)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        strlen(body), body, owned ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
    if (!r) {
        if (owned) free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, "Content-Type", type);
    MHD_add_response_header(r, "Cache-Control", "no-store");
    gd_mhd_ret ret = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ret;
}
