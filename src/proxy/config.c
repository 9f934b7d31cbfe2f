/* SPDX-License-Identifier: MIT */
/*
 * The worker's configuration: the net part of the plan plus the credential
 * values, serialised by the supervisor into a sealed memfd. The parser is
 * strict although the producer is trusted: it is the only input the worker
 * gets from outside before it drops privileges.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/io.h"
#include "proxy/px.h"

int px_format_secret(const char *format, const char *secret, char **ret_value)
{
	size_t fl = strlen(format ? format : "%s"), sl = strlen(secret), n = 0, cap;
	const char *f = format ? format : "%s";
	_cleanup_free_ char *out = NULL;
	unsigned used = 0;

	if (sl > PX_MAX_SECRET || fl > PX_MAX_SECRET)
		return -E2BIG;
	for (size_t i = 0; i < sl; i++)
		/* a secret with CR/LF would inject headers */
		if (secret[i] == '\r' || secret[i] == '\n' || (unsigned char)secret[i] < 0x20)
			return -EINVAL;
	cap = fl + sl + 1;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < fl; i++) {
		if (f[i] == '\r' || f[i] == '\n')
			return -EINVAL;
		if (f[i] != '%') {
			out[n++] = f[i];
			continue;
		}
		if (f[i + 1] == '%') {
			out[n++] = '%';
			i++;
		} else if (f[i + 1] == 's' && used == 0) {
			memcpy(out + n, secret, sl);
			n += sl;
			used++;
			i++;
		} else
			return -EINVAL;
	}
	if (used != 1)
		return -EINVAL;
	out[n] = 0;
	*ret_value = TAKE_PTR(out);
	return 0;
}

static json_t *u64_or_null(uint64_t v)
{
	return v == PLAN_UNLIMITED ? json_null() : json_integer((json_int_t)v);
}

static json_t *paths_json(char *const *paths, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(paths[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static int read_secret(const plan_credential *c, char **ret)
{
	if (c->value_env) {
		const char *v = getenv(c->value_env);

		/* The CLI refuses this before the run (plan_check_secret); a
		 * sub-sandbox started over the spawn socket comes here first. */
		if (!v || !*v)
			return -ENOKEY;
		*ret = strdup(v);
		return *ret ? 0 : -ENOMEM;
	}
	if (c->value_file) {
		_cleanup_free_ char *buf = NULL;
		size_t len = 0;
		int r = io_read_file_at(AT_FDCWD, c->value_file, PX_MAX_SECRET, &buf, &len);

		if (r == -ENOENT)
			return -ENOKEY;
		if (r < 0)
			return r;
		if (strlen(buf) != len)
			return -EINVAL;
		/* one trailing newline is what editors and `echo` leave */
		while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
			buf[--len] = 0;
		if (len == 0)
			return -ENOKEY;
		*ret = TAKE_PTR(buf);
		return 0;
	}
	return -ENOKEY;
}

int px_config_from_plan(const sc_plan *plan, json_t **ret_json)
{
	return px_config_from_run(plan, NULL, ret_json);
}

/* One credential: the formatted header value and/or the placeholder and raw value. */
static json_t *credential_json(const plan_credential *c, const char *secret,
			       const char *placeholder, int *ret)
{
	_cleanup_free_ char *value = NULL;
	json_t *o;

	*ret = 0;
	if (c->header) {
		*ret = px_format_secret(c->format, secret, &value);
		if (*ret < 0)
			return NULL;
	}
	o = json_pack("{s:s, s:s, s:o, s:o, s:b, s:o, s:I, s:I, s:o, s:I, s:o, s:o}", "name",
		      c->name ? c->name : c->host, "host", c->host, "header",
		      c->header ? json_string(c->header) : json_null(), "value",
		      value ? json_string(value) : json_null(), "upstream_https", c->upstream_https,
		      "max_requests", u64_or_null(c->max_requests), "rate_count",
		      (json_int_t)c->rate.count, "rate_per_ns", (json_int_t)c->rate.per_ns,
		      "max_bytes", u64_or_null(c->max_bytes), "methods", (json_int_t)c->methods,
		      "paths", paths_json(c->paths, c->n_paths), "expires_ns",
		      u64_or_null(c->expires_ns));
	if (value)
		explicit_bzero(value, strlen(value));
	if (o && c->placeholder_env && placeholder &&
	    (json_object_set_new(o, "placeholder_env", json_string(c->placeholder_env)) < 0 ||
	     json_object_set_new(o, "placeholder", json_string(placeholder)) < 0 ||
	     json_object_set_new(o, "secret", json_string(secret)) < 0 ||
	     json_object_set_new(o, "in_query", json_boolean(c->in_query)) < 0)) {
		json_decref(o);
		o = NULL;
	}
	if (!o)
		*ret = -ENOMEM;
	return o;
}

int px_config_from_run(const sc_plan *plan, const px_extras *x, json_t **ret_json)
{
	_cleanup_json_ json_t *root = json_object(), *egress = json_array(), *priv = json_array(),
			      *creds = json_array();
	int r;

	if (!root || !egress || !priv || !creds)
		return -ENOMEM;
	for (size_t i = 0; i < plan->n_egress; i++) {
		const plan_egress *e = &plan->egress[i];
		json_t *ports = json_array();

		if (!ports)
			return -ENOMEM;
		for (size_t k = 0; k < e->n_ports && k < POLICY_MAX_PORTS; k++)
			json_array_append_new(ports, json_integer(e->ports[k]));
		if (json_array_append_new(egress,
					  json_pack("{s:s, s:b, s:o, s:I, s:o, s:b}", "host",
						    e->host, "wildcard", e->wildcard, "ports",
						    ports, "methods", (json_int_t)e->methods,
						    "paths", paths_json(e->paths, e->n_paths),
						    "inspect", e->inspect)) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; i < plan->n_allow_private; i++) {
		const plan_cidr *c = &plan->allow_private[i];
		char s[INET6_ADDRSTRLEN];

		if (!inet_ntop(c->family, c->addr, s, sizeof(s)))
			return -EINVAL;
		if (json_array_append_new(
			priv, json_pack("{s:s, s:i}", "addr", s, "prefix", (int)c->prefix)) < 0)
			return -ENOMEM;
	}
	for (size_t i = 0; i < plan->n_credentials; i++) {
		const plan_credential *c = &plan->credentials[i];
		_cleanup_free_ char *secret = NULL;
		const char *ph = px_extras_placeholder(x, i);
		json_t *o;

		if (c->placeholder_env && !ph)
			return -EINVAL; /* a placeholder credential needs the run's extras */
		r = read_secret(c, &secret);
		if (r < 0)
			return r;
		/* the value replaces the placeholder as is: it must fit in a header */
		for (const char *p = secret; c->placeholder_env && *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				r = -EINVAL;
		o = r < 0 ? NULL : credential_json(c, secret, ph, &r);
		explicit_bzero(secret, strlen(secret));
		if (r < 0)
			return r;
		if (json_array_append_new(creds, o) < 0)
			return -ENOMEM;
	}
	if (json_object_set_new(root, "egress", TAKE_PTR(egress)) < 0 ||
	    json_object_set_new(root, "allow_private", TAKE_PTR(priv)) < 0 ||
	    json_object_set_new(root, "credentials", TAKE_PTR(creds)) < 0 ||
	    json_object_set_new(root, "rate_count", json_integer((json_int_t)plan->rate.count)) <
		0 ||
	    json_object_set_new(root, "rate_per_ns", json_integer((json_int_t)plan->rate.per_ns)) <
		0 ||
	    json_object_set_new(root, "bandwidth", u64_or_null(plan->bandwidth)) < 0 ||
	    json_object_set_new(root, "max_request_body", u64_or_null(plan->max_request_body)) <
		0 ||
	    json_object_set_new(root, "max_response_body", u64_or_null(plan->max_response_body)) <
		0 ||
	    json_object_set_new(root, "egress_budget", u64_or_null(plan->egress_budget)) < 0 ||
	    json_object_set_new(root, "upstream_ca",
				plan->upstream_ca ? json_string(plan->upstream_ca) : json_null()) <
		0 ||
	    json_object_set_new(root, "dns", plan->dns ? json_string(plan->dns) : json_null()) <
		0 ||
	    json_object_set_new(root, "ca_cert",
				px_extras_ca_pem(x) ? json_string(px_extras_ca_pem(x))
						    : json_null()) < 0 ||
	    json_object_set_new(root, "ca_key",
				px_extras_ca_key(x) ? json_string(px_extras_ca_key(x))
						    : json_null()) < 0 ||
	    json_object_set_new(root, "parent_pid", json_integer((json_int_t)getpid())) < 0)
		return -ENOMEM;
	*ret_json = TAKE_PTR(root);
	return 0;
}

static void free_paths(char **paths, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(paths[i]);
	free(paths);
}

static void wipe_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

px_config *px_config_free(px_config *c)
{
	if (!c)
		return NULL;
	for (size_t i = 0; i < c->n_egress; i++) {
		free(c->egress[i].host);
		free_paths(c->egress[i].paths, c->egress[i].n_paths);
	}
	free(c->egress);
	free(c->allow_private);
	for (size_t i = 0; i < c->n_creds; i++) {
		free(c->creds[i].name);
		free(c->creds[i].host);
		free(c->creds[i].header);
		free_paths(c->creds[i].paths, c->creds[i].n_paths);
		wipe_free(c->creds[i].value);
		wipe_free(c->creds[i].secret);
		free(c->creds[i].placeholder_env);
		free(c->creds[i].placeholder);
	}
	free(c->creds);
	free(c->upstream_ca);
	free(c->dns);
	free(c->ca_cert);
	wipe_free(c->ca_key);
	free(c);
	return NULL;
}

static int get_u64(json_t *root, const char *key, bool nullable, uint64_t *ret)
{
	json_t *v = json_object_get(root, key);

	if (nullable && json_is_null(v)) {
		*ret = PLAN_UNLIMITED;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -EINVAL;
	*ret = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_str(json_t *obj, const char *key, bool nullable, char **ret)
{
	json_t *v = json_object_get(obj, key);

	if (nullable && json_is_null(v)) {
		*ret = NULL;
		return 0;
	}
	if (!json_is_string(v) || json_string_length(v) == 0 ||
	    json_string_length(v) > POLICY_MAX_STRING ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return -EINVAL;
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

/* "paths": an array of normalised prefixes (the policy checked them), empty
 * for any path. Always present: a list lost on the way must not open it. */
static int get_paths(json_t *obj, char ***ret, size_t *ret_n)
{
	json_t *a = json_object_get(obj, "paths"), *p;
	size_t i;

	if (!json_is_array(a) || json_array_size(a) > POLICY_MAX_PATHS)
		return -EINVAL;
	if (json_array_size(a) == 0)
		return 0;
	*ret = calloc(json_array_size(a), sizeof(**ret));
	if (!*ret)
		return -ENOMEM;
	json_array_foreach(a, i, p)
	{
		if (!json_is_string(p) || json_string_value(p)[0] != '/' ||
		    strlen(json_string_value(p)) != json_string_length(p) ||
		    json_string_length(p) > POLICY_MAX_PATH_PREFIX)
			return -EINVAL;
		(*ret)[i] = strdup(json_string_value(p));
		if (!(*ret)[i])
			return -ENOMEM;
		(*ret_n)++;
	}
	return 0;
}

/* PEM text is longer than POLICY_MAX_STRING allows for a policy string. */
static int get_pem(json_t *obj, const char *key, char **ret)
{
	json_t *v = json_object_get(obj, key);

	*ret = NULL;
	if (json_is_null(v))
		return 0;
	if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 65536 ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return -EINVAL;
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

static inline void px_config_freep(px_config **c)
{
	px_config_free(*c);
}

int px_config_parse(const char *buf, size_t len, px_config **ret)
{
	_cleanup_json_ json_t *root = NULL;
	_cleanup_(px_config_freep) px_config *c = NULL;
	json_t *arr, *item;
	size_t i;
	int r;

	if (len > PX_CONFIG_MAX_BYTES)
		return -E2BIG;
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, NULL);
	if (!json_is_object(root))
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;

	arr = json_object_get(root, "egress");
	if (!json_is_array(arr) || json_array_size(arr) > POLICY_MAX_EGRESS)
		return -EINVAL;
	c->egress = calloc(json_array_size(arr) + 1, sizeof(*c->egress));
	if (!c->egress)
		return -ENOMEM;
	json_array_foreach(arr, i, item)
	{
		plan_egress *e = &c->egress[c->n_egress];
		json_t *ports = json_object_get(item, "ports"), *p;
		size_t k;

		r = get_str(item, "host", false, &e->host);
		if (r < 0)
			return r;
		c->n_egress++;
		e->wildcard = json_is_true(json_object_get(item, "wildcard"));
		e->inspect = json_is_true(json_object_get(item, "inspect"));
		if (!json_is_integer(json_object_get(item, "methods")))
			return -EINVAL;
		e->methods = (uint32_t)json_integer_value(json_object_get(item, "methods"));
		if (!json_is_array(ports) || json_array_size(ports) > POLICY_MAX_PORTS)
			return -EINVAL;
		json_array_foreach(ports, k, p)
		{
			if (!json_is_integer(p) || json_integer_value(p) < 1 ||
			    json_integer_value(p) > 65535)
				return -EINVAL;
			e->ports[e->n_ports++] = (uint16_t)json_integer_value(p);
		}
		r = get_paths(item, &e->paths, &e->n_paths);
		if (r < 0)
			return r;
	}

	arr = json_object_get(root, "allow_private");
	if (!json_is_array(arr) || json_array_size(arr) > POLICY_MAX_CIDRS)
		return -EINVAL;
	c->allow_private = calloc(json_array_size(arr) + 1, sizeof(*c->allow_private));
	if (!c->allow_private)
		return -ENOMEM;
	json_array_foreach(arr, i, item)
	{
		plan_cidr *cd = &c->allow_private[c->n_allow_private];
		json_t *a = json_object_get(item, "addr"), *p = json_object_get(item, "prefix");

		if (!json_is_string(a) || !json_is_integer(p))
			return -EINVAL;
		if (inet_pton(AF_INET, json_string_value(a), cd->addr) == 1)
			cd->family = AF_INET;
		else if (inet_pton(AF_INET6, json_string_value(a), cd->addr) == 1)
			cd->family = AF_INET6;
		else
			return -EINVAL;
		if (json_integer_value(p) < 0 ||
		    json_integer_value(p) > (cd->family == AF_INET ? 32 : 128))
			return -EINVAL;
		cd->prefix = (unsigned)json_integer_value(p);
		c->n_allow_private++;
	}

	arr = json_object_get(root, "credentials");
	if (!json_is_array(arr) || json_array_size(arr) > POLICY_MAX_CREDENTIALS)
		return -EINVAL;
	c->creds = calloc(json_array_size(arr) + 1, sizeof(*c->creds));
	if (!c->creds)
		return -ENOMEM;
	json_array_foreach(arr, i, item)
	{
		px_cred *cr = &c->creds[c->n_creds];

		c->n_creds++;
		r = get_str(item, "host", false, &cr->host);
		if (r < 0)
			return r;
		if ((r = get_str(item, "header", true, &cr->header)) < 0 ||
		    (r = get_str(item, "value", !cr->header, &cr->value)) < 0)
			return r;
		if ((cr->value && strpbrk(cr->value, "\r\n")) ||
		    (cr->header && strpbrk(cr->header, "\r\n: ")))
			return -EINVAL;
		cr->upstream_https = json_is_true(json_object_get(item, "upstream_https"));
		r = get_str(item, "name", false, &cr->name);
		if (r < 0)
			return r;
		if ((r = get_u64(item, "max_requests", true, &cr->max_requests)) < 0 ||
		    (r = get_u64(item, "rate_count", false, &cr->rate.count)) < 0 ||
		    (r = get_u64(item, "rate_per_ns", false, &cr->rate.per_ns)) < 0 ||
		    (r = get_u64(item, "max_bytes", true, &cr->max_bytes)) < 0 ||
		    (r = get_u64(item, "expires_ns", true, &cr->expires_ns)) < 0)
			return r;
		if (cr->rate.count > 0 && cr->rate.per_ns == 0)
			return -EINVAL;
		if (!json_is_integer(json_object_get(item, "methods")))
			return -EINVAL;
		cr->methods = (uint32_t)json_integer_value(json_object_get(item, "methods"));
		r = get_paths(item, &cr->paths, &cr->n_paths);
		if (r < 0)
			return r;
		if (json_object_get(item, "placeholder")) {
			if ((r = get_str(item, "placeholder_env", false, &cr->placeholder_env)) <
				0 ||
			    (r = get_str(item, "placeholder", false, &cr->placeholder)) < 0 ||
			    (r = get_str(item, "secret", false, &cr->secret)) < 0)
				return r;
			if (strpbrk(cr->secret, "\r\n"))
				return -EINVAL;
			cr->in_query = json_is_true(json_object_get(item, "in_query"));
			c->has_placeholders = true;
		} else if (!cr->header)
			return -EINVAL;
	}

	if ((r = get_u64(root, "rate_count", false, &c->rate.count)) < 0 ||
	    (r = get_u64(root, "rate_per_ns", false, &c->rate.per_ns)) < 0 ||
	    (r = get_u64(root, "bandwidth", true, &c->bandwidth)) < 0 ||
	    (r = get_u64(root, "max_request_body", true, &c->max_request_body)) < 0 ||
	    (r = get_u64(root, "max_response_body", true, &c->max_response_body)) < 0 ||
	    (r = get_u64(root, "egress_budget", true, &c->egress_budget)) < 0 ||
	    (r = get_str(root, "upstream_ca", true, &c->upstream_ca)) < 0 ||
	    (r = get_str(root, "dns", true, &c->dns)) < 0 ||
	    (r = get_pem(root, "ca_cert", &c->ca_cert)) < 0 ||
	    (r = get_pem(root, "ca_key", &c->ca_key)) < 0)
		return r;
	if (!c->ca_cert != !c->ca_key)
		return -EINVAL;
	if (c->rate.count > 0 && c->rate.per_ns == 0)
		return -EINVAL;
	{
		json_t *pp = json_object_get(root, "parent_pid");

		if (!json_is_integer(pp) || json_integer_value(pp) <= 0)
			return -EINVAL;
		c->parent_pid = json_integer_value(pp);
	}
	*ret = TAKE_PTR(c);
	return 0;
}
