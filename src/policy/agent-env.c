/* SPDX-License-Identifier: MIT */
#include "policy/agent-env.h"

#include <errno.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "proxy/proxy.h"

#define STR_(x)	  #x
#define STR(x)	  STR_(x)
#define PROXY_URL "http://127.0.0.1:" STR(PX_LISTEN_PORT)
/* the same listener speaks SOCKS5; socks5h: names are resolved by the proxy */
#define SOCKS_URL "socks5h://127.0.0.1:" STR(PX_LISTEN_PORT)
#define NO_PROXY  "localhost,127.0.0.1"
/* The JVM reads no proxy variable; these are its own properties. */
#define JAVA_PX(scheme)                                                                            \
	"-D" scheme ".proxyHost=127.0.0.1 -D" scheme ".proxyPort=" STR(PX_LISTEN_PORT)
#define JAVA_PROXY                                                                                 \
	JAVA_PX("http") " " JAVA_PX("https") " -Dhttp.nonProxyHosts=localhost|127.*|[::1]"

/* egress: only when the plan lets the agent out, through the proxy. The
 * lower-case forms are read by curl, wget and most language runtimes; Node
 * and the JVM have knobs of their own. A client that ignores all of them
 * still gets through the DNS stub and transparent redirection
 * (docs/proxy.md). */
static const struct agent_var {
	const char *def;
	bool egress;
} agent_vars[] = {
    {"HOME=/tmp", false},
    {"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", false},
    {"USER=agent", false},
    {"TMPDIR=/tmp", false},
    {"HTTP_PROXY=" PROXY_URL, true},
    {"HTTPS_PROXY=" PROXY_URL, true},
    {"ALL_PROXY=" SOCKS_URL, true},
    {"NO_PROXY=" NO_PROXY, true},
    {"http_proxy=" PROXY_URL, true},
    {"https_proxy=" PROXY_URL, true},
    {"all_proxy=" SOCKS_URL, true},
    {"no_proxy=" NO_PROXY, true},
    /* Node >= 24 reads the variables above only with this (fetch, http) */
    {"NODE_USE_ENV_PROXY=1", true},
    {"JAVA_TOOL_OPTIONS=" JAVA_PROXY, true},
};

_Static_assert(ELEMENTSOF(agent_vars) <= AGENT_ENV_OWN_MAX, "AGENT_ENV_OWN_MAX too small");

bool agent_env_reserved(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < ELEMENTSOF(agent_vars); i++) {
		const char *d = agent_vars[i].def;

		if (strcspn(d, "=") == n && strncasecmp(d, name, n) == 0)
			return true;
	}
	return false;
}

bool agent_env_name(const sc_plan *p, size_t n, const char **ret_name, size_t *ret_len)
{
	for (size_t i = 0; i < ELEMENTSOF(agent_vars); i++) {
		if (agent_vars[i].egress && p->n_egress == 0)
			continue;
		if (n-- == 0) {
			*ret_name = agent_vars[i].def;
			*ret_len = strcspn(agent_vars[i].def, "=");
			return true;
		}
	}
	return false;
}

int agent_env_build(const sc_plan *p, char **env, size_t cap)
{
	size_t n = 0;

	if (p->n_env > cap || cap - p->n_env < ELEMENTSOF(agent_vars) + 1)
		return -E2BIG;
	for (size_t i = 0; i < ELEMENTSOF(agent_vars); i++)
		if (!agent_vars[i].egress || p->n_egress > 0)
			env[n++] = (char *)agent_vars[i].def;
	for (size_t i = 0; i < p->n_env; i++)
		env[n++] = p->env[i];
	env[n] = NULL;
	return 0;
}
