/* gd_httpd.h — the small part of serving HTTP with libmicrohttpd that the manager's probes
 * and metrics (manager/http.c) and the eviction webhook (webhook/server.c) share. */
#ifndef GD_HTTPD_H
#define GD_HTTPD_H
#include <stdbool.h>
#include <microhttpd.h>

/* libmicrohttpd 0.9.71 turned the handlers' int into enum MHD_Result. */
#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result gd_mhd_ret;
#else
typedef int gd_mhd_ret;
#endif

/* Queues body (a C string) with code and Content-Type type, and Cache-Control: no-store
 * (probes, metrics and admission answers are never to be cached). owned: the response
 * takes body and frees it, also when queueing fails; else it is copied. */
gd_mhd_ret gd_httpd_reply(struct MHD_Connection *c, unsigned code, const char *type, char *body,
                          bool owned);

#endif
