/* godis_env_api.h — a godis_env reading from the API server directly (tests, reference). */
#ifndef GODIS_ENV_API_H
#define GODIS_ENV_API_H
#include "godis_reconcile.h"
void godis_env_api_init(godis_env *e, k8s_client *client);
#endif
