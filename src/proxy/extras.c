/* SPDX-License-Identifier: MIT */
/*
 * Supervisor side: the run's sandbox CA and placeholders, made before the
 * sandbox is built (its trust bundle and environment need them) and sealed
 * into the worker's configuration by px_seed_prepare() (spawn.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "proxy/placeholder.h"
#include "proxy/programs.h"
#include "proxy/proxy.h"

/* Without limits.wall the CA outlives any run that does not last a month. */
#define PX_CA_DEFAULT_LIFETIME_S (30ull * 24 * 3600)
#define PX_CA_SLACK_S		 600ull /* the wall clock ends the run, not the CA */

struct px_extras {
	char *ca_pem;
	char *ca_key;
	size_t n_creds;
	char **placeholder; /* per credential, NULL without placeholder_env */
	char **env;	    /* "NAME=placeholder", NULL-terminated */
	size_t n_env;
};

px_extras *px_extras_free(px_extras *x)
{
	if (!x)
		return NULL;
	free(x->ca_pem);
	if (x->ca_key) {
		explicit_bzero(x->ca_key, strlen(x->ca_key));
		free(x->ca_key);
	}
	for (size_t i = 0; i < x->n_creds; i++)
		free(x->placeholder[i]);
	free(x->placeholder);
	for (size_t i = 0; i < x->n_env; i++)
		free(x->env[i]);
	free(x->env);
	free(x);
	return NULL;
}

static inline void px_extras_freep(px_extras **x)
{
	px_extras_free(*x);
}

/* The names the CA may sign for: inspected rules and placeholder hosts. */
static int ca_names(const sc_plan *plan, const char ***ret, size_t *ret_n)
{
	const char **names = calloc(plan->n_egress + plan->n_credentials + 1, sizeof(*names));
	size_t n = 0;

	if (!names)
		return -ENOMEM;
	for (size_t i = 0; i < plan->n_egress; i++)
		if (plan->egress[i].inspect)
			names[n++] = plan->egress[i].host;
	for (size_t i = 0; i < plan->n_credentials; i++)
		if (plan->credentials[i].placeholder_env)
			names[n++] = plan->credentials[i].host;
	*ret = names;
	*ret_n = n;
	return 0;
}

static int make_ca(const sc_plan *plan, px_extras *x)
{
	uint64_t life = plan->wall_ns == PLAN_UNLIMITED
			    ? PX_CA_DEFAULT_LIFETIME_S
			    : plan->wall_ns / 1000000000ull + PX_CA_SLACK_S;
	_cleanup_free_ const char **names = NULL;
	size_t n = 0;
	int r;

	r = ca_names(plan, &names, &n);
	if (r < 0)
		return r;
	return px_ca_make(life, names, n, &x->ca_pem, &x->ca_key);
}

int px_extras_new(const sc_plan *plan, px_extras **ret)
{
	_cleanup_(px_extras_freep) px_extras *x = calloc(1, sizeof(*x));
	int r;

	if (!x)
		return -ENOMEM;
	x->placeholder = calloc(plan->n_credentials + 1, sizeof(*x->placeholder));
	x->env = calloc(plan->n_credentials + 1, sizeof(*x->env));
	if (!x->placeholder || !x->env)
		return -ENOMEM;
	x->n_creds = plan->n_credentials;
	for (size_t i = 0; i < plan->n_credentials; i++) {
		const char *name = plan->credentials[i].placeholder_env;
		char ph[PX_PLACEHOLDER_MAX + 1];

		if (!name)
			continue;
		r = px_placeholder_make(name, ph, sizeof(ph));
		if (r < 0)
			return r;
		x->placeholder[i] = strdup(ph);
		if (!x->placeholder[i] || asprintf(&x->env[x->n_env], "%s=%s", name, ph) < 0) {
			x->env[x->n_env] = NULL;
			return -ENOMEM;
		}
		x->n_env++;
	}
	if (plan->n_egress > 0 && plan_inspects(plan)) {
		r = make_ca(plan, x);
		if (r < 0)
			return r;
	}
	*ret = TAKE_PTR(x);
	return 0;
}

const char *px_extras_ca_pem(const px_extras *x)
{
	return x ? x->ca_pem : NULL;
}

const char *px_extras_ca_key(const px_extras *x)
{
	return x ? x->ca_key : NULL;
}

const char *px_extras_env(const px_extras *x, size_t n)
{
	return x && n < x->n_env ? x->env[n] : NULL;
}

const char *px_extras_placeholder(const px_extras *x, size_t i)
{
	return x && i < x->n_creds ? x->placeholder[i] : NULL;
}

void px_extras_forget_key(px_extras *x)
{
	if (!x || !x->ca_key)
		return;
	explicit_bzero(x->ca_key, strlen(x->ca_key));
	free(x->ca_key);
	x->ca_key = NULL;
}
