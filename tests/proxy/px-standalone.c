/* SPDX-License-Identifier: MIT */
/*
 * Test-only launcher for the egress proxy without the rest of the sandbox:
 * builds an sc_plan from a small JSON file, listens on 127.0.0.1:PORT on the
 * host and starts the worker (sandcap-proxy) with px_spawn(). Every event the worker sends
 * is validated with px_event_parse() and printed as one JSON line.
 *
 *   px-standalone CONFIG.json PORT [EVENTS-FILE]
 *
 * CONFIG.json: {"egress": [{"host": "a.test", "ports": [80], "methods": ["GET"]}],
 *   "allow_private": ["127.0.0.1/32"], "rate": "5/s", "bandwidth": "1M/s",
 *   "max_request_body": "1K", "max_response_body": "1M", "egress_budget": "8M",
 *   "credentials": [{"host": ..., "header": ..., "value_env"|"value_file": ...,
 *   "format": "Bearer %s", "upstream": "https"|"http"}],
 *   "upstream_ca": "/path", "dns": "127.0.0.1:5353"}
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/parse-num.h"
#include "policy/plan.h"
#include "proxy/programs.h"
#include "proxy/proxy.h"

/*
 * Under ASan the worker cannot be given ASAN_OPTIONS (its environment is
 * empty) and LeakSanitizer's thread-stopping would trip its seccomp filter:
 * set the defaults in the binary. Unused without the sanitizers.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0:abort_on_error=1";
}
const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:abort_on_error=1";
}

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static char *dup_str(json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);

	return json_is_string(v) ? strdup(json_string_value(v)) : NULL;
}

static uint64_t size_or(json_t *o, const char *k, int kind)
{
	json_t *v = json_object_get(o, k);
	uint64_t x = PLAN_UNLIMITED, per;

	if (!json_is_string(v))
		return PLAN_UNLIMITED;
	if (kind == 0 && parse_size(json_string_value(v), &x) < 0)
		exit(2);
	if (kind == 1 && parse_bandwidth(json_string_value(v), &x) < 0)
		exit(2);
	(void)per;
	return x;
}

static const struct {
	const char *n;
	uint32_t bit;
} methods[] = {
    {"GET", HTTP_GET},	       {"HEAD", HTTP_HEAD},	  {"POST", HTTP_POST},
    {"PUT", HTTP_PUT},	       {"PATCH", HTTP_PATCH},	  {"DELETE", HTTP_DELETE},
    {"OPTIONS", HTTP_OPTIONS}, {"CONNECT", HTTP_CONNECT},
};

static sc_plan *load_plan(const char *path)
{
	json_error_t err;
	json_t *root = json_load_file(path, 0, &err), *arr, *it;
	sc_plan *p = calloc(1, sizeof(*p));
	size_t i;

	if (!root || !p) {
		fprintf(stderr, "px-standalone: %s: %s\n", path, root ? "oom" : err.text);
		exit(2);
	}
	arr = json_object_get(root, "egress");
	p->egress = calloc(json_array_size(arr) + 1, sizeof(*p->egress));
	json_array_foreach(arr, i, it)
	{
		plan_egress *e = &p->egress[p->n_egress++];
		const char *h = json_string_value(json_object_get(it, "host"));
		json_t *ports = json_object_get(it, "ports"), *m = json_object_get(it, "methods"),
		       *x;
		size_t k;

		e->host = strdup(h);
		e->wildcard = strncmp(h, "*.", 2) == 0;
		json_array_foreach(ports, k, x) e->ports[e->n_ports++] =
		    (uint16_t)json_integer_value(x);
		json_array_foreach(m, k, x)
		{
			for (size_t j = 0; j < sizeof(methods) / sizeof(methods[0]); j++)
				if (strcmp(methods[j].n, json_string_value(x)) == 0)
					e->methods |= methods[j].bit;
		}
	}
	arr = json_object_get(root, "allow_private");
	p->allow_private = calloc(json_array_size(arr) + 1, sizeof(*p->allow_private));
	json_array_foreach(arr, i, it)
	{
		plan_cidr *c = &p->allow_private[p->n_allow_private++];
		char buf[64];
		char *slash;

		snprintf(buf, sizeof(buf), "%s", json_string_value(it));
		slash = strchr(buf, '/');
		if (slash)
			*slash++ = 0;
		c->family = strchr(buf, ':') ? AF_INET6 : AF_INET;
		if (inet_pton(c->family, buf, c->addr) != 1)
			exit(2);
		c->prefix = slash ? (unsigned)atoi(slash) : (c->family == AF_INET ? 32 : 128);
	}
	if (json_is_string(json_object_get(root, "rate")) &&
	    parse_rate(json_string_value(json_object_get(root, "rate")), &p->rate.count,
		       &p->rate.per_ns) < 0)
		exit(2);
	p->bandwidth = size_or(root, "bandwidth", 1);
	p->max_request_body = size_or(root, "max_request_body", 0);
	p->max_response_body = size_or(root, "max_response_body", 0);
	p->egress_budget = size_or(root, "egress_budget", 0);
	arr = json_object_get(root, "credentials");
	p->credentials = calloc(json_array_size(arr) + 1, sizeof(*p->credentials));
	json_array_foreach(arr, i, it)
	{
		plan_credential *c = &p->credentials[p->n_credentials++];
		const char *up = json_string_value(json_object_get(it, "upstream"));

		c->host = dup_str(it, "host");
		c->header = dup_str(it, "header");
		c->value_env = dup_str(it, "value_env");
		c->value_file = dup_str(it, "value_file");
		c->format = dup_str(it, "format");
		c->upstream_https = !up || strcmp(up, "http") != 0;
		/* no limits: the plan's "absent" (the policy parser's defaults) */
		c->max_requests = c->max_bytes = c->expires_ns = PLAN_UNLIMITED;
	}
	p->upstream_ca = dup_str(root, "upstream_ca");
	p->dns = dup_str(root, "dns");
	json_decref(root);
	return p;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	int one = 1, lfd, evfd, r;
	FILE *out = stdout;
	px_seed seed = PX_SEED_NONE;
	sc_plan *plan;
	pid_t pid;

	px_in_process();
#ifdef PX_STANDALONE_PROGRAM_DIR
	/* the worker is the build tree's sandcap-proxy, not next to this one */
	px_program_dir = PX_STANDALONE_PROGRAM_DIR;
#endif
	if (argc < 3) {
		fprintf(stderr, "usage: px-standalone CONFIG.json PORT [EVENTS-FILE]\n");
		return 2;
	}
	if (argc > 3) {
		out = fopen(argv[3], "a");
		if (!out)
			return 2;
	}
	plan = load_plan(argv[1]);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sa.sin_port = htons((uint16_t)atoi(argv[2]));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 128) < 0) {
		perror("px-standalone: listen");
		return 2;
	}
	r = px_seed_new(plan, lfd, &seed);
	sc_plan_free(plan); /* the seed holds what the worker needs */
	if (r < 0) {
		fprintf(stderr, "px-standalone: px_seed_new: %s\n", strerror(-r));
		return r == -ENOKEY ? 3 : 1;
	}
	r = px_spawn(&seed, &pid, &evfd);
	if (r < 0) {
		fprintf(stderr, "px-standalone: px_spawn: %s\n", strerror(-r));
		return 1;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	printf("READY %d\n", (int)pid);
	fflush(stdout);
	while (!stop) {
		struct pollfd pfd = {.fd = evfd, .events = POLLIN};
		char buf[PX_EVENT_MAX_BYTES + 1];
		char *name = NULL, *dump;
		json_t *data = NULL;
		ssize_t n;

		if (poll(&pfd, 1, 200) <= 0)
			continue;
		n = recv(evfd, buf, sizeof(buf), 0);
		if (n <= 0)
			break; /* worker gone */
		if (px_event_parse(buf, (size_t)n, &name, &data) < 0) {
			fprintf(out, "{\"event\":\"invalid\"}\n");
			fflush(out);
			continue;
		}
		dump = json_dumps(data, JSON_COMPACT | JSON_SORT_KEYS);
		fprintf(out, "{\"event\":\"%s\",\"data\":%s}\n", name, dump ? dump : "null");
		fflush(out);
		free(dump);
		free(name);
		json_decref(data);
	}
	close(evfd); /* EOF: the worker exits */
	waitpid(pid, &r, 0);
	px_seed_done(&seed);
	fprintf(stderr, "px-standalone: worker exited with %d\n",
		WIFEXITED(r) ? WEXITSTATUS(r) : 128 + WTERMSIG(r));
	return 0;
}
