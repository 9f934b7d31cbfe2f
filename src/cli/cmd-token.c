/* SPDX-License-Identifier: MIT */
/* sandcap token keygen|mint|attenuate|inspect (docs/tokens.md). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/exit-status.h"
#include "base/io.h"
#include "base/parse-num.h"
#include "cli/cli.h"
#include "token/token.h"

#define DEFAULT_TTL_S 3600
#define NS_PER_S      1000000000ULL

static void token_usage(FILE *out)
{
	fputs("Usage: sandcap token keygen --out KEY\n"
	      "       sandcap token mint --key KEY --policy FILE [--ttl DURATION] [--id ID]\n"
	      "       sandcap token attenuate TOKEN [--policy NARROWER.json] [--ttl DURATION]\n"
	      "       sandcap token inspect TOKEN\n"
	      "\n"
	      "A capability token is a policy signed with a secret key, valid until it\n"
	      "expires. Anyone holding a token can attenuate it (fewer paths or read-only,\n"
	      "fewer hosts, lower limits, earlier expiry) without the key; nobody can widen\n"
	      "it without the key. 'sandcap run --token FILE --key KEY' and 'sandcap check\n"
	      "--token FILE --key KEY' verify it.\n"
	      "\n"
	      "TOKEN is a file holding the token, \"-\" for standard input, or the token\n"
	      "itself (\"sc1....\"; visible to other users in the process list, so prefer a\n"
	      "file or standard input).\n"
	      "\n"
	      "Run 'sandcap token VERB --help' for each verb. Exit status: 0 on success,\n"
	      "125 on any error.\n",
	      out);
}

static void keygen_usage(FILE *out)
{
	fputs("Usage: sandcap token keygen --out KEY\n"
	      "\n"
	      "Writes a new 32-byte random key to KEY, created with mode 0600. Refuses to\n"
	      "overwrite an existing file. Whoever can read KEY can mint tokens.\n"
	      "\n"
	      "Options:\n"
	      "  --out KEY   the key file to create\n"
	      "  --help      this text\n",
	      out);
}

static void mint_usage(FILE *out)
{
	fputs("Usage: sandcap token mint --key KEY --policy FILE [--ttl DURATION] [--id ID]\n"
	      "\n"
	      "Validates the policy FILE exactly like 'sandcap check --policy' and prints a\n"
	      "token granting it, signed with KEY, on standard output.\n"
	      "\n"
	      "Options:\n"
	      "  --key KEY        32-byte key file, mode 0600 or stricter\n"
	      "  --policy FILE    the policy the token grants; \"-\" reads standard input\n"
	      "  --ttl DURATION   lifetime, e.g. 30s, 10m, 2h (default 1h, at most 366 days);\n"
	      "                   the remaining lifetime also caps limits.wall of each run\n"
	      "  --id ID          token id recorded in audit logs: 1 to 63 letters, digits,\n"
	      "                   '.', '_' or '-' (default: 32 random hex digits)\n"
	      "  --help           this text\n",
	      out);
}

static void attenuate_usage(FILE *out)
{
	fputs("Usage: sandcap token attenuate TOKEN [--policy NARROWER.json] [--ttl DURATION]\n"
	      "\n"
	      "Prints TOKEN with one more caveat, which narrows it. No key is needed.\n"
	      "\n"
	      "NARROWER.json follows the policy schema, but every key may be omitted: an\n"
	      "omitted key keeps the token's value. A listed key narrows: \"fs.grants\" lists\n"
	      "the grants to keep (paths inside the token's grants, \"ro\" or the token's\n"
	      "mode), \"net.egress\" the hosts, ports and methods to keep, \"env\" the\n"
	      "variables to keep, limits lower values. Example, read-only access to one\n"
	      "directory and no network:\n"
	      "  {\"fs\": {\"grants\": [{\"path\": \"/data/public\", \"mode\": \"ro\"}]},\n"
	      "   \"net\": {\"egress\": []}}\n"
	      "A caveat that asks for anything the token does not grant is refused with the\n"
	      "reason, and so is one that narrows nothing. Verification recomputes the\n"
	      "intersection anyway, so a hand-made caveat cannot widen a token either.\n"
	      "\n"
	      "Options:\n"
	      "  --policy FILE    the narrowing policy fragment; \"-\" reads standard input\n"
	      "  --ttl DURATION   expire DURATION from now (must be earlier than the token)\n"
	      "  --help           this text\n"
	      "At least one of --policy and --ttl is required. See docs/tokens.md.\n",
	      out);
}

static void inspect_usage(FILE *out)
{
	fputs("Usage: sandcap token inspect TOKEN\n"
	      "\n"
	      "Prints the token's claims, each caveat and the effective capability set it\n"
	      "would grant, WITHOUT verifying the signature (no key is used): anyone can\n"
	      "forge what this prints. Use 'sandcap check --token FILE --key KEY' to verify.\n"
	      "\n"
	      "Options:\n"
	      "  --help   this text\n",
	      out);
}

/* Whole seconds of a duration such as "10m"; refuses sub-second lifetimes. */
static int parse_ttl(const char *s, int64_t *ret)
{
	uint64_t ns;

	if (parse_duration_ns(s, &ns) < 0 || ns < NS_PER_S || ns / NS_PER_S > TK_MAX_TTL_S) {
		cli_error("--ttl: expected a duration from 1s to 366 days such as \"10m\", got "
			  "\"%s\"",
			  s);
		return -EINVAL;
	}
	*ret = (int64_t)(ns / NS_PER_S);
	return 0;
}

static void strip(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

/* "-" = standard input, "sc1...." = the token itself, else a file. */
static int read_token(const char *arg, char **ret)
{
	_cleanup_free_ char *buf = NULL;
	int r;

	if (strcmp(arg, "-") == 0) {
		size_t cap = TK_MAX_TOKEN_BYTES + 2, n = 0;

		buf = malloc(cap + 1);
		if (!buf)
			return -ENOMEM;
		while (n < cap) {
			ssize_t k = read(STDIN_FILENO, buf + n, cap - n);

			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0) {
				r = -errno;
				cli_error("cannot read the token from standard input: %s",
					  strerror(-r));
				return r;
			}
			if (k == 0)
				break;
			n += (size_t)k;
		}
		buf[n] = '\0';
	} else if (strncmp(arg, TK_PREFIX ".", sizeof(TK_PREFIX)) == 0 && !strchr(arg, '/')) {
		buf = strdup(arg);
		if (!buf)
			return -ENOMEM;
	} else {
		r = io_read_file_at(AT_FDCWD, arg, TK_MAX_TOKEN_BYTES + 2, &buf, NULL);
		if (r < 0) {
			cli_error("%s: cannot read token: %s", arg,
				  r == -EFBIG ? "file too large" : strerror(-r));
			return r;
		}
	}
	strip(buf);
	*ret = TAKE_PTR(buf);
	return 0;
}

static void report(const char *what, const sc_diag *d)
{
	if (d->line > 0)
		cli_error("%s:%d:%d: %s", what, d->line, d->column, d->message);
	else if (d->path[0])
		cli_error("%s: %s: %s", what, d->path, d->message);
	else
		cli_error("%s: %s", what, d->message);
}

static void fmt_time(time_t t, char *buf, size_t size)
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, size, "%lld", (long long)t);
}

static int token_keygen(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"out", required_argument, NULL, 'o'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	const char *out = NULL;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			keygen_usage(stdout);
			return 0;
		default:
			keygen_usage(stderr);
			return SC_EXIT_SETUP;
		}
	}
	if (!out || optind < argc) {
		cli_error(
		    "token keygen: give exactly --out KEY (see 'sandcap token keygen --help')");
		return SC_EXIT_SETUP;
	}
	r = tk_key_generate(out);
	if (r == -EEXIST) {
		cli_error("%s: already exists; refusing to overwrite a key", out);
		return SC_EXIT_SETUP;
	}
	if (r < 0) {
		cli_error("%s: cannot create key: %s", out, strerror(-r));
		return SC_EXIT_SETUP;
	}
	return 0;
}

static int token_mint(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"key", required_argument, NULL, 'k'}, {"policy", required_argument, NULL, 'p'},
	    {"ttl", required_argument, NULL, 't'}, {"id", required_argument, NULL, 'i'},
	    {"help", no_argument, NULL, 'h'},	   {},
	};
	const char *keyfile = NULL, *policy = NULL, *id = NULL;
	_cleanup_(sc_plan_freep) sc_plan *plan = NULL;
	_cleanup_free_ char *tok = NULL;
	int64_t ttl = DEFAULT_TTL_S;
	uint8_t key[TK_KEY_LEN];
	sc_diag d = {};
	char digest[65];
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'k':
			keyfile = optarg;
			break;
		case 'p':
			policy = optarg;
			break;
		case 't':
			if (parse_ttl(optarg, &ttl) < 0)
				return SC_EXIT_SETUP;
			break;
		case 'i':
			id = optarg;
			break;
		case 'h':
			mint_usage(stdout);
			return 0;
		default:
			mint_usage(stderr);
			return SC_EXIT_SETUP;
		}
	}
	if (!keyfile || !policy || optind < argc) {
		cli_error("token mint: needs --key KEY and --policy FILE (see 'sandcap token mint "
			  "--help')");
		return SC_EXIT_SETUP;
	}
	if (cli_load_policy(policy, &plan, digest) < 0)
		return SC_EXIT_SETUP;
	r = tk_key_load_diag(keyfile, key, &d);
	if (r < 0) {
		report(keyfile, &d);
		return SC_EXIT_SETUP;
	}
	r = tk_mint(plan, key, id, time(NULL), ttl, &tok, &d);
	OPENSSL_cleanse(key, sizeof(key));
	if (r < 0) {
		if (r == -ENOMEM)
			cli_error("token mint: out of memory");
		else
			cli_error("token mint: %s", d.message);
		return SC_EXIT_SETUP;
	}
	if (printf("%s\n", tok) < 0 || fflush(stdout) != 0) {
		cli_error("token mint: cannot write the token: %m");
		return SC_EXIT_SETUP;
	}
	return 0;
}

static int token_attenuate(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"policy", required_argument, NULL, 'p'},
	    {"ttl", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	_cleanup_free_ char *tok = NULL, *frag = NULL, *out = NULL;
	const char *policy = NULL;
	int64_t ttl = 0;
	size_t frag_len = 0;
	sc_diag d = {};
	time_t exp = 0;
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			policy = optarg;
			break;
		case 't':
			if (parse_ttl(optarg, &ttl) < 0)
				return SC_EXIT_SETUP;
			break;
		case 'h':
			attenuate_usage(stdout);
			return 0;
		default:
			attenuate_usage(stderr);
			return SC_EXIT_SETUP;
		}
	}
	if (optind + 1 != argc) {
		cli_error("token attenuate: give exactly one TOKEN (see 'sandcap token attenuate "
			  "--help')");
		return SC_EXIT_SETUP;
	}
	if (!policy && !ttl) {
		cli_error("token attenuate: give --policy NARROWER.json, --ttl DURATION or both");
		return SC_EXIT_SETUP;
	}
	if (read_token(argv[optind], &tok) < 0)
		return SC_EXIT_SETUP;
	if (policy && strcmp(policy, "-") == 0 && strcmp(argv[optind], "-") == 0) {
		cli_error("token attenuate: the token and --policy cannot both be \"-\"");
		return SC_EXIT_SETUP;
	}
	if (policy && cli_read_policy(policy, TK_MAX_CAVEAT_BYTES, &frag, &frag_len) < 0)
		return SC_EXIT_SETUP;
	if (ttl)
		exp = time(NULL) + (time_t)ttl;
	r = tk_attenuate(tok, frag, frag_len, exp, &out, &d);
	if (r < 0) {
		if (r == -ENOMEM)
			cli_error("token attenuate: out of memory");
		else if (policy && (d.line > 0 || d.path[0]))
			report(cli_policy_name(policy), &d);
		else
			cli_error("token attenuate: %s", d.message);
		return SC_EXIT_SETUP;
	}
	if (printf("%s\n", out) < 0 || fflush(stdout) != 0) {
		cli_error("token attenuate: cannot write the token: %m");
		return SC_EXIT_SETUP;
	}
	return 0;
}

static void print_json(const char *label, const char *text)
{
	json_auto_t *j = json_loads(text, 0, NULL);
	_cleanup_free_ char *pretty = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;

	printf("%s\n%s\n", label, pretty ? pretty : text);
}

static int token_inspect(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	_cleanup_(tk_decoded_freep) tk_decoded *dec = NULL;
	_cleanup_free_ char *tok = NULL;
	char a[64], b[64];
	sc_diag d = {};
	time_t now = time(NULL);
	int c, r;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			inspect_usage(stdout);
			return 0;
		default:
			inspect_usage(stderr);
			return SC_EXIT_SETUP;
		}
	}
	if (optind + 1 != argc) {
		cli_error("token inspect: give exactly one TOKEN (see 'sandcap token inspect "
			  "--help')");
		return SC_EXIT_SETUP;
	}
	if (read_token(argv[optind], &tok) < 0)
		return SC_EXIT_SETUP;
	r = tk_decode(tok, &dec, &d);
	if (r < 0) {
		cli_error("token inspect: %s", r == -ENOMEM ? "out of memory" : d.message);
		return SC_EXIT_SETUP;
	}
	fmt_time(dec->info.iat, a, sizeof(a));
	fmt_time(dec->info.exp, b, sizeof(b));
	printf("NOT VERIFIED: the signature was not checked; anyone can forge what follows.\n"
	       "Verify with: sandcap check --token FILE --key KEY\n\n");
	printf("id:       %s\n", dec->info.id);
	printf("issued:   %s\n", a);
	printf("expires:  %s%s (earliest of the claims and the caveats)\n", b,
	       now >= dec->info.exp ? ", EXPIRED" : "");
	printf("caveats:  %zu\n\n", dec->n_caveats);
	print_json("Claims (NOT VERIFIED):", dec->claims_json);
	for (size_t i = 0; i < dec->n_caveats; i++) {
		char label[64];

		snprintf(label, sizeof(label), "\nCaveat %zu (NOT VERIFIED):", i + 1);
		print_json(label, dec->caveats_json[i]);
	}
	printf("\nEffective capability set (NOT VERIFIED), as evaluated on this host:\n\n");
	if (!dec->effective) {
		const sc_diag *e = &dec->effective_diag;

		printf("  cannot be computed: %s\n", e->message);
		fflush(stdout);
		cli_error("token inspect: %s", e->message);
		return SC_EXIT_SETUP;
	}
	(void)plan_describe(dec->effective, stdout);
	if (fflush(stdout) != 0) {
		cli_error("token inspect: cannot write: %m");
		return SC_EXIT_SETUP;
	}
	return 0;
}

int cmd_token(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int argc, char **argv);
	} verbs[] = {
	    {"keygen", token_keygen},
	    {"mint", token_mint},
	    {"attenuate", token_attenuate},
	    {"inspect", token_inspect},
	};

	if (argc < 2) {
		token_usage(stderr);
		return SC_EXIT_SETUP;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		token_usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < ELEMENTSOF(verbs); i++)
		if (strcmp(argv[1], verbs[i].name) == 0)
			return verbs[i].fn(argc - 1, argv + 1);
	cli_error("token: unknown verb '%s' (keygen, mint, attenuate or inspect)", argv[1]);
	return SC_EXIT_SETUP;
}
