/* SPDX-License-Identifier: MIT */
/* sandcap audit verify|report|prune: check, read and expire the audit logs. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/bundle.h"
#include "audit/export.h"
#include "audit/receipt.h"
#include "audit/prune.h"
#include "base/cleanup.h"
#include "base/io.h"
#include "cli/cli.h"
#include "core/supervisor.h"
#include "token/token.h"

/* verify and report exit codes */
#define AUDIT_EXIT_OK	  0
#define AUDIT_EXIT_BROKEN 1
#define AUDIT_EXIT_USAGE  2

static void audit_usage(FILE *out)
{
	fputs(
	    "Usage: sandcap audit verify FILE [--key KEYFILE] [--pubkey PEM] [--expect-hash HEX]\n"
	    "       sandcap audit report FILE [--json | --html [--key KEYFILE] [--pubkey PEM]]\n"
	    "       sandcap audit keygen --out PRIVATE --public PUBLIC\n"
	    "       sandcap audit export --format ocsf|otlp-json FILE\n"
	    "       sandcap audit prune --older-than AGE [--dry-run] [--dir DIR]\n"
	    "\n"
	    "Check and read the hash-chained audit log that every 'sandcap run' writes.\n"
	    "FILE may be - for standard input.\n"
	    "\n"
	    "Commands:\n"
	    "  verify   exit 0 only if the chain is intact, sealed and complete\n"
	    "  report   what the sandbox could access, consumed, did and was stopped from\n"
	    "  prune    remove the per-run logs older than AGE, except running ones\n"
	    "  keygen   make an Ed25519 key pair for 'sandcap run --audit-sign'\n"
	    "  export   the records as OCSF or OpenTelemetry log records, one per line\n"
	    "\n"
	    "Run 'sandcap audit VERB --help' for the details of each.\n",
	    out);
}

static void verify_usage(FILE *out)
{
	fputs(
	    "Usage: sandcap audit verify FILE [--key KEYFILE] [--pubkey PEM] [--expect-hash HEX]\n"
	    "\n"
	    "Checks every record of the log, in constant memory: each line is one record\n"
	    "with its keys in the canonical order, seq counts up from 0, every record\n"
	    "names the same sandbox, prev is the hash of the record before (the first\n"
	    "one's is derived from the sandbox id), each hash recomputes over the line,\n"
	    "and the last record is audit.seal. This detects any edited, inserted,\n"
	    "deleted or reordered record and a log cut off before its seal.\n"
	    "\n"
	    "Without a key, someone who can write the file could cut it and seal it\n"
	    "again: use --key, or compare the last hash with the one 'sandcap run'\n"
	    "printed at the end of the run (--expect-hash).\n"
	    "\n"
	    "Options:\n"
	    "  -k, --key KEYFILE      the seal must carry an HMAC-SHA256 of the final hash\n"
	    "                         under this key (32 raw bytes, mode 0600 or stricter)\n"
	    "  -p, --pubkey PEM       the seal and every audit.checkpoint must carry an\n"
	    "                         Ed25519 signature that verifies with this public key\n"
	    "                         (from 'sandcap audit keygen'). A log cut off after a\n"
	    "                         checkpoint (its supervisor killed) still fails, and\n"
	    "                         says up to which record it is signed\n"
	    "  -e, --expect-hash HEX  the hash of the last record must be HEX\n"
	    "  -h, --help             show this help\n"
	    "\n"
	    "FILE must be a regular file; give - to read standard input. A line longer\n"
	    "than 1 MiB ends the check.\n"
	    "\n"
	    "Prints 'FILE: intact, ...' and the last hash. Exit status: 0 intact,\n"
	    "1 not intact (the first bad line and why are printed as FILE: line N: reason)\n"
	    "or intact but INCOMPLETE (the log records that a write failed and the\n"
	    "sandbox was stopped: audit.error), 2 usage error or a file that could not\n"
	    "be read.\n",
	    out);
}

static void report_usage(FILE *out)
{
	fputs("Usage: sandcap audit report FILE [--json | --html [--key KEYFILE] [--pubkey PEM]]\n"
	      "\n"
	      "Reconstructs the run from its log: what it could access (the capability set\n"
	      "and active enforcement layers from sandbox.start), what it consumed (from\n"
	      "sandbox.exit), what it did (processes, network requests, files written) and\n"
	      "where it was stopped (denied requests and syscalls, limits hit), then the\n"
	      "bound that was enforced: what could leave and what did, the hosts reachable,\n"
	      "the sockets and resolver the sandbox had, each usable credential and its use\n"
	      "(docs/audit.md, section 6). Long lists show their first entries and how many\n"
	      "more there were. The chain is checked on the way, without a key; a break is\n"
	      "stated at the top of the report.\n"
	      "Strings that come from the sandbox are printed with control and non-ASCII\n"
	      "bytes escaped as \\xNN.\n"
	      "\n"
	      "Options:\n"
	      "  -j, --json          print one JSON object instead of text\n"
	      "  -H, --html          print one self-contained HTML page instead (to save as a\n"
	      "                      file and open in a browser; it loads nothing): the\n"
	      "                      verdict, the policy in plain words, consumption,\n"
	      "                      activity over time, a process tree, every kind of\n"
	      "                      record in paged tables with filters and a search box.\n"
	      "                      Each kind keeps its first 750 and last 250 records,\n"
	      "                      with the counts of all (docs/audit.md, \"The HTML\n"
	      "                      report\"). A log a running sandbox still writes is\n"
	      "                      shown as live: what it holds so far\n"
	      "  -k, --key KEYFILE   with --html: the seal's HMAC is checked with this key\n"
	      "  -p, --pubkey PEM    with --html: the seal's and checkpoints' signatures are\n"
	      "                      checked with this public key; the page names the key\n"
	      "  -h, --help          show this help\n"
	      "\n"
	      "FILE must be a regular file; give - to read standard input. A line longer\n"
	      "than 1 MiB ends the reading.\n"
	      "\n"
	      "Exit status: 0 report of an intact log, 1 report of a log whose chain is\n"
	      "broken or unsealed (or, with --key or --pubkey, whose seal does not verify\n"
	      "with it), or that records a failed write (audit.error), 2 usage error or a\n"
	      "file that could not be read.\n",
	      out);
}

static void fclose_inputp(FILE **f)
{
	if (*f && *f != stdin)
		(void)fclose(*f);
}

/*
 * A named FILE must be a regular file: a FIFO would block, a device such
 * as /dev/zero never ends. It is opened without blocking and checked with
 * fstat. A stream is read from "-", bounded by the line limit.
 */
static FILE *open_input(const char *file)
{
	struct stat st;
	FILE *f;
	int fd;

	if (strcmp(file, "-") == 0)
		return stdin;
	fd = open(file, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		cli_error("%s: %s", file, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) < 0) {
		cli_error("%s: %s", file, strerror(errno));
		(void)close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		cli_error("%s: %s, not a regular file (to read a stream, give - and redirect it)",
			  file, au_file_type(st.st_mode));
		(void)close(fd);
		return NULL;
	}
	(void)fcntl(fd, F_SETFL, 0);
	f = fdopen(fd, "r");
	if (!f) {
		cli_error("%s: %s", file, strerror(errno));
		(void)close(fd);
	}
	return f;
}

static int load_key(const char *file, uint8_t key[AU_KEY_FILE_BYTES])
{
	int r = au_key_load(file, key);

	switch (r) {
	case 0:
		return 0;
	case -EACCES:
		cli_error("%s: key file is accessible by group or others (chmod 600 it)", file);
		break;
	case -ELOOP:
		cli_error("%s: key file is a symbolic link", file);
		break;
	case -EINVAL:
		cli_error("%s: key file must be a regular file of exactly %u raw bytes", file,
			  AU_KEY_FILE_BYTES);
		break;
	default:
		cli_error("%s: %s", file, strerror(-r));
		break;
	}
	return r;
}

/* A signed log that does not verify to its end: how far its signature
 * still vouches for it (a supervisor killed mid-run leaves such a log). */
static void say_signed_prefix(const char *file, const au_verify_info *info)
{
	if (!info->have_checkpoint) {
		cli_error("%s: no record is vouched for: no signed checkpoint before the problem",
			  file);
		return;
	}
	cli_error("%s: verified up to record %llu, signed checkpoint; %llu records after it "
		  "unverified",
		  file, (unsigned long long)info->checkpoint_seq,
		  (unsigned long long)(info->good_records - info->checkpoint_seq - 1));
}

/* After the chain: each spawn.start's receipt, recomputed. */
static int verify_receipts(const char *file, FILE *in)
{
	au_receipts_info ri;
	char reason[1024] = "";
	size_t line = 0;
	int r;

	rewind(in);
	r = au_receipts_check(in, &ri, &line, reason, sizeof(reason));
	if (r == -EBADMSG) {
		cli_error("%s: line %zu: receipt: %s", file, line, reason);
		return AUDIT_EXIT_BROKEN;
	}
	if (r < 0) {
		cli_error("%s: %s", file, strerror(-r));
		return AUDIT_EXIT_USAGE;
	}
	printf("receipts: %llu delegation%s recomputed, each child within its parent (depth "
	       "%u)\n",
	       (unsigned long long)ri.checked, ri.checked == 1 ? "" : "s", ri.max_depth);
	return AUDIT_EXIT_OK;
}

static int verify_bundle(const char *file, const au_sign_key *pub)
{
	_cleanup_free_ char *buf = NULL;
	au_bundle_result res;
	char reason[512] = "";
	size_t len = 0;
	int r;

	r = io_read_file_at(AT_FDCWD, file, AU_BUNDLE_LOG_MAX + 8 * AU_BUNDLE_MEMBER_MAX, &buf,
			    &len);
	if (r < 0) {
		cli_error("%s: %s", file,
			  r == -EFBIG ? "larger than a bundle can be" : strerror(-r));
		return AUDIT_EXIT_USAGE;
	}
	r = au_bundle_verify(buf, len, pub, &res, reason, sizeof(reason));
	if (r == -EBADMSG) {
		cli_error("%s: %s", file, reason);
		return AUDIT_EXIT_BROKEN;
	}
	if (r < 0) {
		cli_error("%s: %s", file, reason[0] ? reason : strerror(-r));
		return AUDIT_EXIT_USAGE;
	}
	printf("%s: bundle intact: log of sandbox %s, %llu records, %s; reports match the log%s\n",
	       file, res.info.sandbox, (unsigned long long)res.info.records,
	       res.info.sig_checked ? (pub ? "seal signature verified with the given public key"
					   : "seal signature verified with the bundle's own "
					     "public key (compare its key id with the one you "
					     "trust)")
				    : "sealed without a signature",
	       res.policy_checked  ? "; policy.json is the run's policy"
	       : res.token_checked ? "; token-claims.json names the run's token"
				   : "");
	if (res.info.key_id[0])
		printf("key id: %s\n", res.info.key_id);
	printf("last hash: %s\n", res.info.last_hash);
	if (res.info.failed) {
		cli_error("%s: INCOMPLETE: writing failed (%s) after %llu records", file,
			  res.info.failed_error, (unsigned long long)res.info.failed_records);
		return AUDIT_EXIT_BROKEN;
	}
	return AUDIT_EXIT_OK;
}

static int cmd_audit_verify(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"key", required_argument, NULL, 'k'},
	    {"pubkey", required_argument, NULL, 'p'},
	    {"expect-hash", required_argument, NULL, 'e'},
	    {"bundle", required_argument, NULL, 'b'},
	    {"receipts", no_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	bool receipts = false;
	_cleanup_(fclose_inputp) FILE *in = NULL;
	_cleanup_(au_sign_key_freep) au_sign_key *pub = NULL;
	const char *keyfile = NULL, *expect = NULL, *pubfile = NULL, *bundle = NULL, *file;
	uint8_t key[AU_KEY_FILE_BYTES];
	char reason[512];
	au_verify_info info;
	size_t line = 0;
	int c, r;

	optind = 0; /* glibc: reinitialise, argv is a new vector */
	opterr = 0; /* errors are reported by cli_error() */
	while ((c = getopt_long(argc, argv, ":k:p:e:b:rh", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			receipts = true;
			break;
		case 'b':
			bundle = optarg;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'p':
			pubfile = optarg;
			break;
		case 'e':
			expect = optarg;
			break;
		case 'h':
			verify_usage(stdout);
			return AUDIT_EXIT_OK;
		case ':':
			cli_error("audit verify: option '%s' needs an argument", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		default:
			cli_error("audit verify: bad option '%s' (see --help)", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		}
	}
	if (bundle) {
		if (argc != optind || keyfile || expect || receipts) {
			cli_error("audit verify --bundle: only --pubkey goes with it (see --help)");
			return AUDIT_EXIT_USAGE;
		}
		if (pubfile && cli_load_sign_key(pubfile, false, &pub) < 0)
			return AUDIT_EXIT_USAGE;
		return verify_bundle(bundle, pub);
	}
	if (argc - optind != 1) {
		cli_error("audit verify: expected exactly one FILE (see --help)");
		return AUDIT_EXIT_USAGE;
	}
	file = argv[optind];
	if (receipts && strcmp(file, "-") == 0) {
		cli_error("audit verify --receipts: reads the log twice; give a FILE, not -");
		return AUDIT_EXIT_USAGE;
	}
	if (expect &&
	    (strlen(expect) != AU_HASH_HEX || strspn(expect, "0123456789abcdef") != AU_HASH_HEX)) {
		cli_error("--expect-hash: expected %u lower-case hex digits", AU_HASH_HEX);
		return AUDIT_EXIT_USAGE;
	}
	if (pubfile && cli_load_sign_key(pubfile, false, &pub) < 0)
		return AUDIT_EXIT_USAGE;
	if (keyfile && load_key(keyfile, key) < 0)
		return AUDIT_EXIT_USAGE;
	in = open_input(file);
	if (!in) {
		explicit_bzero(key, sizeof(key));
		return AUDIT_EXIT_USAGE;
	}
	r = au_verify_pub(in, keyfile ? key : NULL, keyfile ? sizeof(key) : 0, pub, &info, &line,
			  reason, sizeof(reason));
	explicit_bzero(key, sizeof(key));
	if (r == -EBADMSG) {
		cli_error("%s: line %zu: %s", file, line, reason);
		if (pub)
			say_signed_prefix(file, &info);
		return AUDIT_EXIT_BROKEN;
	}
	if (r < 0) {
		cli_error("%s: line %zu: %s", file, line, strerror(-r));
		return AUDIT_EXIT_USAGE;
	}
	if (expect && strcmp(expect, info.last_hash) != 0) {
		cli_error("%s: last hash %s, expected %s (log replaced or cut and resealed?)", file,
			  info.last_hash, expect);
		return AUDIT_EXIT_BROKEN;
	}
	if (info.failed) {
		/* The chain is whole, but the log says it is not the whole run. */
		cli_error("%s: INCOMPLETE: intact and sealed, but writing failed (%s) after %llu "
			  "records: %s was not written and the sandbox was stopped",
			  file, info.failed_error, (unsigned long long)info.failed_records,
			  info.failed_event);
		printf("last hash: %s\n", info.last_hash);
		return AUDIT_EXIT_BROKEN;
	}
	printf("%s: intact, %llu records, sandbox %s, %s to %s, %s%s\n", file,
	       (unsigned long long)info.records, info.sandbox, info.first_ts, info.last_ts,
	       info.hmac_checked ? "seal HMAC verified"
	       : info.keyed	 ? "sealed with an HMAC (not checked: no --key)"
				 : "sealed without a key",
	       info.sig_checked	  ? ", seal signature verified with the public key"
	       : info.seal_signed ? ", signed (not checked: no --pubkey)"
				  : "");
	if (info.sig_checked)
		printf("signed by key %s, %llu checkpoints\n", info.key_id,
		       (unsigned long long)info.checkpoints);
	if (info.legacy_rule)
		printf(
		    "sealed by the earlier rule: the signature or HMAC covers the records "
		    "before the seal, not the seal's and checkpoints' own fields (their time)\n");
	if (receipts)
		return verify_receipts(file, in);
	printf("last hash: %s\n", info.last_hash);
	return AUDIT_EXIT_OK;
}

/* A writer holds an exclusive flock() on its log until the run ends
 * (au_open): a log whose shared lock cannot be had is still written. */
static bool log_is_live(FILE *in)
{
	int fd = fileno(in);

	if (in == stdin || flock(fd, LOCK_SH | LOCK_NB) == 0) {
		if (in != stdin)
			(void)flock(fd, LOCK_UN);
		return false;
	}
	return errno == EWOULDBLOCK;
}

static int cmd_audit_report(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},	   {"html", no_argument, NULL, 'H'},
	    {"key", required_argument, NULL, 'k'}, {"pubkey", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},	   {},
	};
	_cleanup_(fclose_inputp) FILE *in = NULL;
	_cleanup_(au_sign_key_freep) au_sign_key *pub = NULL;
	const char *keyfile = NULL, *pubfile = NULL;
	au_report_opts o = {.format = AU_REPORT_TEXT};
	uint8_t key[AU_KEY_FILE_BYTES];
	bool json = false, html = false;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":jHk:p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = true;
			break;
		case 'H':
			html = true;
			break;
		case 'k':
			keyfile = optarg;
			break;
		case 'p':
			pubfile = optarg;
			break;
		case 'h':
			report_usage(stdout);
			return AUDIT_EXIT_OK;
		case ':':
			cli_error("audit report: option '%s' needs an argument", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		default:
			cli_error("audit report: bad option '%s' (see --help)", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		cli_error("audit report: expected exactly one FILE (see --help)");
		return AUDIT_EXIT_USAGE;
	}
	if (json && html) {
		cli_error("audit report: --json and --html: choose one");
		return AUDIT_EXIT_USAGE;
	}
	if ((keyfile || pubfile) && !html) {
		cli_error("audit report: --key and --pubkey go with --html (to check a log with "
			  "them, use 'sandcap audit verify')");
		return AUDIT_EXIT_USAGE;
	}
	o.format = html ? AU_REPORT_HTML : json ? AU_REPORT_JSON : AU_REPORT_TEXT;
	if (pubfile && cli_load_sign_key(pubfile, false, &pub) < 0)
		return AUDIT_EXIT_USAGE;
	if (keyfile && load_key(keyfile, key) < 0)
		return AUDIT_EXIT_USAGE;
	in = open_input(argv[optind]);
	if (!in) {
		explicit_bzero(key, sizeof(key));
		return AUDIT_EXIT_USAGE;
	}
	if (html) {
		o.key = keyfile ? key : NULL;
		o.key_len = keyfile ? sizeof(key) : 0;
		o.pub = pub;
		o.live = log_is_live(in);
		o.rewindable = in != stdin;
	}
	r = au_report_ex(in, stdout, &o);
	explicit_bzero(key, sizeof(key));
	if (r < 0) {
		cli_error("%s: %s", argv[optind], strerror(-r));
		return AUDIT_EXIT_USAGE;
	}
	return r == 0 ? AUDIT_EXIT_OK : AUDIT_EXIT_BROKEN;
}

static void prune_usage(FILE *out)
{
	fputs("Usage: sandcap audit prune --older-than AGE [--dry-run] [--dir DIR]\n"
	      "\n"
	      "Removes the per-run audit logs (*.jsonl) last written more than AGE ago\n"
	      "from the state directory's audit/ (SANDCAP_STATE_DIR, else /var/lib/sandcap\n"
	      "for root, else $XDG_STATE_HOME/sandcap or ~/.local/state/sandcap), or from\n"
	      "DIR. A log that a running sandbox still writes is kept: its writer holds\n"
	      "it locked (flock) until the run ends. The log of a run that crashed is not\n"
	      "locked and, unsealed, is removed like the others. Symbolic links and\n"
	      "other files are left alone.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --older-than AGE  30d, 12h, 90m, 45s (days, hours, minutes, seconds)\n"
	      "  -n, --dry-run         list what would be removed, remove nothing\n"
	      "  -d, --dir DIR         the directory of the logs\n"
	      "  -h, --help            show this help\n"
	      "\n"
	      "Prints one line per log removed or kept for running, then a total.\n"
	      "Exit status: 0 done (also when the state directory has no audit/ yet),\n"
	      "1 some log could not be removed, 2 usage error or a directory that could\n"
	      "not be read.\n",
	      out);
}

typedef struct prune_tally {
	const char *dir;
	bool dry_run;
	uint64_t removed, removed_bytes, running, young, failed;
} prune_tally;

/* "40 days", "5 hours", "12 minutes", "30 seconds" */
void cli_age_text(time_t secs, char *buf, size_t len)
{
	static const struct {
		time_t unit;
		const char *name;
	} units[] = {{86400, "days"}, {3600, "hours"}, {60, "minutes"}};

	for (size_t i = 0; i < ELEMENTSOF(units); i++)
		if (secs >= 2 * units[i].unit) {
			snprintf(buf, len, "%lld %s", (long long)(secs / units[i].unit),
				 units[i].name);
			return;
		}
	snprintf(buf, len, "%lld seconds", (long long)(secs > 0 ? secs : 0));
}

static void prune_print(const pr_log *l, void *userdata)
{
	prune_tally *t = userdata;
	char age[48];

	cli_age_text(time(NULL) - l->mtime, age, sizeof(age));

	switch (l->verdict) {
	case PR_REMOVED:
		t->removed++;
		t->removed_bytes += (uint64_t)l->size;
		printf("%s %s/%s (%s, %" PRIu64 " bytes, last written %s ago)\n",
		       t->dry_run ? "would remove" : "removed", t->dir, l->name,
		       l->sealed ? "sealed" : "unsealed: its run did not end cleanly",
		       (uint64_t)l->size, age);
		break;
	case PR_KEPT_RUNNING:
		t->running++;
		printf("kept %s/%s (a running sandbox writes it)\n", t->dir, l->name);
		break;
	case PR_KEPT_YOUNG:
		t->young++;
		break;
	case PR_FAILED:
	case _PR_VERDICT_MAX:
	case _PR_VERDICT_INVALID:
		t->failed++;
		cli_error("%s/%s: %s", t->dir, l->name, strerror(-l->err));
		break;
	}
}

static int cmd_audit_prune(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"older-than", required_argument, NULL, 'o'},
	    {"dry-run", no_argument, NULL, 'n'},
	    {"dir", required_argument, NULL, 'd'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	char state[PATH_MAX - 8], dir[PATH_MAX];
	const char *age = NULL, *dir_opt = NULL;
	prune_tally t = {0};
	uint64_t secs = 0;
	time_t now;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:nd:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			age = optarg;
			break;
		case 'n':
			t.dry_run = true;
			break;
		case 'd':
			dir_opt = optarg;
			break;
		case 'h':
			prune_usage(stdout);
			return AUDIT_EXIT_OK;
		case ':':
			cli_error("audit prune: option '%s' needs an argument", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		default:
			cli_error("audit prune: bad option '%s' (see --help)", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		cli_error("audit prune: unexpected argument '%s' (see --help)", argv[optind]);
		return AUDIT_EXIT_USAGE;
	}
	if (!age) {
		cli_error("audit prune: --older-than AGE is required (e.g. --older-than 30d)");
		return AUDIT_EXIT_USAGE;
	}
	r = pr_parse_age(age, &secs);
	if (r < 0 || secs == 0) {
		cli_error("audit prune: --older-than '%s': expected a positive age with a unit, "
			  "d, h, m or s (e.g. 30d, 12h)%s",
			  age, r == -ERANGE ? " (too large)" : "");
		return AUDIT_EXIT_USAGE;
	}
	if (dir_opt) {
		snprintf(dir, sizeof(dir), "%s", dir_opt);
	} else {
		r = sc_state_dir(geteuid() != 0, state, sizeof(state));
		if (r < 0) {
			cli_error("audit prune: no state directory (set HOME, XDG_STATE_HOME or "
				  "SANDCAP_STATE_DIR, or give --dir DIR)");
			return AUDIT_EXIT_USAGE;
		}
		snprintf(dir, sizeof(dir), "%s/audit", state);
	}
	t.dir = dir;
	now = time(NULL);
	r = pr_prune(dir, secs >= (uint64_t)now ? 0 : now - (time_t)secs, t.dry_run, prune_print,
		     &t);
	/* The state directory's audit/ is made by the first run that logs
	 * there: before it, there is nothing to prune (sandcap-prune.timer
	 * runs on a host that may not have run anything yet). A --dir that is
	 * not there is a mistake. */
	if (r == -ENOENT && !dir_opt)
		r = 0;
	if (r < 0) {
		cli_error("audit prune: %s: %s", dir, strerror(-r));
		return AUDIT_EXIT_USAGE;
	}
	printf("%s %" PRIu64 " log%s (%" PRIu64 " bytes) older than %s; kept %" PRIu64
	       " of running sandboxes, %" PRIu64 " younger%s\n",
	       t.dry_run ? "would remove" : "removed", t.removed, t.removed == 1 ? "" : "s",
	       t.removed_bytes, age, t.running, t.young,
	       t.failed ? "; some could not be removed" : "");
	return t.failed ? AUDIT_EXIT_BROKEN : AUDIT_EXIT_OK;
}

static void export_usage(FILE *out)
{
	fputs("Usage: sandcap audit export --format ocsf|otlp-json FILE\n"
	      "\n"
	      "Writes every record of the log to standard output as one JSON object per line:\n"
	      "  ocsf       an OCSF 1.1 event (Process Activity 1007, Network Activity 4001,\n"
	      "             File System Activity 1001, Detection Finding 2004 for refusals\n"
	      "             and limits, Base Event 0 for the rest); the native record's\n"
	      "             event and data are kept under unmapped\n"
	      "  otlp-json  an OpenTelemetry logs payload (resourceLogs/scopeLogs/logRecords)\n"
	      "             holding one log record, its body the record's data\n"
	      "The mapping of each event is in docs/audit.md. The chain is checked on the\n"
	      "way (without a key): the export stops at a record that breaks it.\n"
	      "\n"
	      "Options:\n"
	      "  -f, --format FORMAT  ocsf or otlp-json\n"
	      "  -h, --help           show this help\n"
	      "\n"
	      "Exit status: 0 every record exported from an intact, sealed log; 1 the chain\n"
	      "broke (the records before the break were exported) or the log is not sealed;\n"
	      "2 usage error or a file that could not be read.\n",
	      out);
}

static int cmd_audit_export(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"format", required_argument, NULL, 'f'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	_cleanup_(fclose_inputp) FILE *in = NULL;
	const char *format = NULL;
	au_export_format fmt;
	char reason[512] = "";
	size_t line = 0;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":f:h", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			format = optarg;
			break;
		case 'h':
			export_usage(stdout);
			return AUDIT_EXIT_OK;
		case ':':
			cli_error("audit export: option '%s' needs an argument", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		default:
			cli_error("audit export: bad option '%s' (see --help)", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		}
	}
	if (!format || (strcmp(format, "ocsf") != 0 && strcmp(format, "otlp-json") != 0)) {
		cli_error("audit export: --format must be ocsf or otlp-json%s%s%s",
			  format ? " (got '" : "", format ? format : "", format ? "')" : "");
		return AUDIT_EXIT_USAGE;
	}
	fmt = strcmp(format, "ocsf") == 0 ? AU_EXPORT_OCSF : AU_EXPORT_OTLP_JSON;
	if (argc - optind != 1) {
		cli_error("audit export: expected exactly one FILE (see --help)");
		return AUDIT_EXIT_USAGE;
	}
	in = open_input(argv[optind]);
	if (!in)
		return AUDIT_EXIT_USAGE;
	r = au_export(in, stdout, fmt, &line, reason, sizeof(reason));
	if (r == -EBADMSG) {
		cli_error("%s: line %zu: %s (export stopped there)", argv[optind], line, reason);
		return AUDIT_EXIT_BROKEN;
	}
	if (r < 0) {
		cli_error("%s: line %zu: %s", argv[optind], line, strerror(-r));
		return AUDIT_EXIT_USAGE;
	}
	return AUDIT_EXIT_OK;
}

static void bundle_usage(FILE *out)
{
	fputs("Usage: sandcap audit bundle FILE --out TAR [--pubkey PEM] [--policy FILE | --token "
	      "FILE]\n"
	      "\n"
	      "Packs what an auditor needs to check a run offline into one plain tar: the log\n"
	      "(audit.jsonl), its report (report.json, report.txt), the public key of its\n"
	      "seal (pubkey.pem), the run's policy (policy.json) or its token's claims and\n"
	      "caveats without the signature (token-claims.json), and manifest.json with\n"
	      "the size and SHA-256 of each. No secret goes in. The log must verify first\n"
	      "(with --pubkey when given), and a policy must be the one whose digest the\n"
	      "log records. 'sandcap audit verify --bundle TAR' checks it all.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --out TAR       the new archive (never overwritten)\n"
	      "  -p, --pubkey PEM    the public key of the log's seal\n"
	      "  -P, --policy FILE   the policy the run was started with\n"
	      "  -t, --token FILE    the token the run was started with (only its claims and\n"
	      "                      caveats are packed)\n"
	      "  -h, --help          show this help\n"
	      "\n"
	      "Exit status: 0 written, 1 the log or policy does not check, 2 usage error or\n"
	      "a file that could not be read or written.\n",
	      out);
}

/* {"claims": {...}, "caveats": [...]}: a token without its signature. */
static int token_claims(const char *file, char **ret, size_t *ret_len)
{
	_cleanup_(tk_decoded_freep) tk_decoded *dec = NULL;
	_cleanup_free_ char *text = NULL;
	_cleanup_json_ json_t *o = NULL;
	sc_diag d = {0};
	size_t len = 0;
	int r;

	r = io_read_file_at(AT_FDCWD, file, TK_MAX_TOKEN_BYTES + 2, &text, &len);
	if (r < 0) {
		cli_error("%s: %s", file, strerror(-r));
		return r;
	}
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
		text[--len] = '\0';
	r = tk_decode(text, &dec, &d);
	if (r < 0) {
		cli_error("%s: %s", file, d.message[0] ? d.message : strerror(-r));
		return r;
	}
	o = json_pack("{s:o, s:[]}", "claims", json_loads(dec->claims_json, 0, NULL), "caveats");
	for (size_t i = 0; o && i < dec->n_caveats; i++)
		(void)json_array_append_new(json_object_get(o, "caveats"),
					    json_loads(dec->caveats_json[i], 0, NULL));
	*ret = o ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII) : NULL;
	if (!*ret)
		return -ENOMEM;
	*ret_len = strlen(*ret);
	return 0;
}

static int cmd_audit_bundle(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"out", required_argument, NULL, 'o'},    {"pubkey", required_argument, NULL, 'p'},
	    {"policy", required_argument, NULL, 'P'}, {"token", required_argument, NULL, 't'},
	    {"help", no_argument, NULL, 'h'},	      {},
	};
	_cleanup_free_ char *log = NULL, *pub = NULL, *policy = NULL, *claims = NULL;
	const char *out = NULL, *pubfile = NULL, *policyfile = NULL, *tokenfile = NULL;
	_cleanup_close_ int fd = -1;
	au_bundle_in in = {0};
	char reason[512] = "";
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:p:P:t:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'p':
			pubfile = optarg;
			break;
		case 'P':
			policyfile = optarg;
			break;
		case 't':
			tokenfile = optarg;
			break;
		case 'h':
			bundle_usage(stdout);
			return AUDIT_EXIT_OK;
		case ':':
			cli_error("audit bundle: option '%s' needs an argument", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		default:
			cli_error("audit bundle: bad option '%s' (see --help)", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		}
	}
	if (argc - optind != 1 || !out || (policyfile && tokenfile)) {
		cli_error("audit bundle: expected FILE --out TAR, and at most one of --policy and "
			  "--token (see --help)");
		return AUDIT_EXIT_USAGE;
	}
	r = io_read_file_at(AT_FDCWD, argv[optind], AU_BUNDLE_LOG_MAX, &log, &in.log_len);
	if (r == 0 && pubfile)
		r = io_read_file_at(AT_FDCWD, pubfile, AU_BUNDLE_MEMBER_MAX, &pub, &in.pubkey_len);
	if (r == 0 && policyfile)
		r = io_read_file_at(AT_FDCWD, policyfile, AU_BUNDLE_MEMBER_MAX, &policy,
				    &in.policy_len);
	if (r < 0) {
		cli_error("audit bundle: cannot read an input: %s",
			  r == -EFBIG ? "larger than a bundle member can be" : strerror(-r));
		return AUDIT_EXIT_USAGE;
	}
	if (tokenfile && token_claims(tokenfile, &claims, &in.token_claims_len) < 0)
		return AUDIT_EXIT_USAGE;
	in.log = log;
	in.pubkey = pub;
	in.policy = policy;
	in.token_claims = claims;
	fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		cli_error("audit bundle: %s: %s", out, strerror(errno));
		return AUDIT_EXIT_USAGE;
	}
	r = au_bundle_write(fd, &in, reason, sizeof(reason));
	if (r < 0) {
		(void)unlink(out);
		cli_error("audit bundle: %s: %s", r == -EBADMSG ? argv[optind] : out,
			  reason[0] ? reason : strerror(-r));
		return r == -EBADMSG ? AUDIT_EXIT_BROKEN : AUDIT_EXIT_USAGE;
	}
	if (fsync(fd) < 0) {
		cli_error("audit bundle: %s: %s", out, strerror(errno));
		return AUDIT_EXIT_USAGE;
	}
	printf("%s: bundle of %s written\n", out, argv[optind]);
	return AUDIT_EXIT_OK;
}

static void keygen_usage(FILE *out)
{
	fputs("Usage: sandcap audit keygen --out PRIVATE --public PUBLIC\n"
	      "\n"
	      "Makes an Ed25519 key pair for the public-key seal of the audit log: PRIVATE\n"
	      "(PKCS#8 PEM, mode 0600) is for 'sandcap run --audit-sign PRIVATE', PUBLIC\n"
	      "(PEM) for 'sandcap audit verify --pubkey PUBLIC', which needs no secret.\n"
	      "Neither file may exist: a key is never overwritten. Prints the key id, the\n"
	      "SHA-256 of the raw public key, which every signed record names.\n"
	      "\n"
	      "Options:\n"
	      "  -o, --out PRIVATE    the new private key file\n"
	      "  -P, --public PUBLIC  the new public key file\n"
	      "  -h, --help           show this help\n"
	      "\n"
	      "Exit status: 0 written, 1 a file could not be written, 2 usage error.\n",
	      out);
}

static int cmd_audit_keygen(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"out", required_argument, NULL, 'o'},
	    {"public", required_argument, NULL, 'P'},
	    {"help", no_argument, NULL, 'h'},
	    {},
	};
	const char *priv = NULL, *pub = NULL;
	char id[AU_HASH_HEX + 1];
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:P:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			priv = optarg;
			break;
		case 'P':
			pub = optarg;
			break;
		case 'h':
			keygen_usage(stdout);
			return AUDIT_EXIT_OK;
		case ':':
			cli_error("audit keygen: option '%s' needs an argument", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		default:
			cli_error("audit keygen: bad option '%s' (see --help)", argv[optind - 1]);
			return AUDIT_EXIT_USAGE;
		}
	}
	if (optind != argc || !priv || !pub) {
		cli_error("audit keygen: expected --out PRIVATE and --public PUBLIC (see --help)");
		return AUDIT_EXIT_USAGE;
	}
	r = au_keygen(priv, pub, id);
	if (r == -EEXIST) {
		cli_error("audit keygen: %s or %s exists already: a key is never overwritten", priv,
			  pub);
		return AUDIT_EXIT_BROKEN;
	}
	if (r < 0) {
		cli_error("audit keygen: cannot write %s and %s: %s", priv, pub, strerror(-r));
		return AUDIT_EXIT_BROKEN;
	}
	printf("key id %s\nprivate key %s (keep it from the sandbox), public key %s\n", id, priv,
	       pub);
	return AUDIT_EXIT_OK;
}

int cmd_audit(int argc, char **argv)
{
	if (argc < 2) {
		audit_usage(stderr);
		return AUDIT_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		audit_usage(stdout);
		return AUDIT_EXIT_OK;
	}
	if (strcmp(argv[1], "verify") == 0)
		return cmd_audit_verify(argc - 1, argv + 1);
	if (strcmp(argv[1], "report") == 0)
		return cmd_audit_report(argc - 1, argv + 1);
	if (strcmp(argv[1], "prune") == 0)
		return cmd_audit_prune(argc - 1, argv + 1);
	if (strcmp(argv[1], "bundle") == 0)
		return cmd_audit_bundle(argc - 1, argv + 1);
	if (strcmp(argv[1], "keygen") == 0)
		return cmd_audit_keygen(argc - 1, argv + 1);
	if (strcmp(argv[1], "export") == 0)
		return cmd_audit_export(argc - 1, argv + 1);
	cli_error("audit: unknown command '%s' (expected verify, report, prune, keygen, "
		  "bundle or export)",
		  argv[1]);
	return AUDIT_EXIT_USAGE;
}
