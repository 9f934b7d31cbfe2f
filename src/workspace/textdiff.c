/* SPDX-License-Identifier: MIT */
/*
 * Unified diffs of text files, written here rather than by running diff(1)
 * (a CLI that depends on another program's presence and output is fragile)
 * or linking a library (Debian packages no xdiff library). Myers' O(ND)
 * algorithm ("An O(ND) Difference Algorithm and Its Variations", 1986) with
 * its trace kept for D up to DIFF_MAX_D; beyond that the hunk is shown as
 * the whole old text removed and the new added, which is still correct.
 * Both inputs are the agent's bytes: every size is bounded.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "workspace/workspace.h"

#define DIFF_MAX_D     4096u
#define DIFF_CONTEXT   3u
#define DIFF_MAX_LINES (4u << 20)

typedef struct line {
	const char *p;
	size_t len; /* without the newline */
	uint64_t h;
} line;

typedef enum { E_EQ, E_DEL, E_INS } edit;

bool ws_is_text(const char *buf, size_t len)
{
	return len <= WS_DIFF_MAX_BYTES && memchr(buf, '\0', len) == NULL;
}

static uint64_t fnv(const char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
	return h;
}

static int split(const char *buf, size_t len, line **ret, size_t *ret_n, bool *ret_eol)
{
	size_t n = 0, cap = 0;
	line *v = NULL;

	*ret_eol = len == 0 || buf[len - 1] == '\n';
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t e = nl ? (size_t)(nl - buf) : len;

		if (n == cap) {
			line *nv;

			if (n >= DIFF_MAX_LINES) {
				free(v);
				return -E2BIG;
			}
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n].p = buf + i;
		v[n].len = e - i;
		v[n].h = fnv(buf + i, e - i);
		n++;
		i = nl ? e + 1 : len;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static bool same(const line *a, const line *b)
{
	return a->h == b->h && a->len == b->len && memcmp(a->p, b->p, a->len) == 0;
}

/*
 * The edit script from a to b into *ret (at most n + m entries). Myers:
 * V[k] is the furthest x on diagonal k after d edits; trace[d] keeps V's
 * 2d+1 live entries for the walk back.
 */
static int myers(const line *a, size_t n, const line *b, size_t m, edit *out, size_t *ret_len)
{
	size_t max = n + m, d_found = SIZE_MAX, off = 0, len = 0;
	long *v = NULL, **trace = NULL;
	long x, y;
	int r = 0;

	if (max == 0) {
		*ret_len = 0;
		return 0;
	}
	v = calloc(2 * max + 3, sizeof(*v));
	trace = calloc(DIFF_MAX_D + 1, sizeof(*trace));
	if (!v || !trace) {
		r = -ENOMEM;
		goto out;
	}
	off = max + 1;
	for (size_t d = 0; d <= max && d <= DIFF_MAX_D && d_found == SIZE_MAX; d++) {
		long dd = (long)d;

		for (long k = -dd; k <= dd; k += 2) {
			if (k == -dd || (k != dd && v[off + k - 1] < v[off + k + 1]))
				x = v[off + k + 1];
			else
				x = v[off + k - 1] + 1;
			y = x - k;
			while ((size_t)x < n && (size_t)y < m && same(&a[x], &b[y]))
				x++, y++;
			v[off + k] = x;
			if ((size_t)x >= n && (size_t)y >= m) {
				d_found = d;
				break;
			}
		}
		trace[d] = malloc((2 * d + 1) * sizeof(long));
		if (!trace[d]) {
			r = -ENOMEM;
			goto out;
		}
		memcpy(trace[d], &v[off - dd], (2 * d + 1) * sizeof(long));
	}
	if (d_found == SIZE_MAX) {
		/* Too different: all of a out, all of b in. */
		for (size_t i = 0; i < n; i++)
			out[len++] = E_DEL;
		for (size_t i = 0; i < m; i++)
			out[len++] = E_INS;
		*ret_len = len;
		goto out;
	}
	/* Walk back from (n, m), writing the script from its end. */
	x = (long)n;
	y = (long)m;
	len = 0;
	for (size_t d = d_found; d > 0; d--) {
		long dd = (long)d, k = x - y, pk, px, py;
		const long *pv = trace[d - 1]; /* index k' + (d - 1) */

		if (k == -dd || (k != dd && pv[k - 1 + dd - 1] < pv[k + 1 + dd - 1]))
			pk = k + 1;
		else
			pk = k - 1;
		px = pv[pk + dd - 1];
		py = px - pk;
		while (x > px && y > py) {
			out[max - 1 - len++] = E_EQ;
			x--, y--;
		}
		out[max - 1 - len++] = pk == k + 1 ? E_INS : E_DEL;
		x = px;
		y = py;
	}
	while (x > 0 && y > 0) {
		out[max - 1 - len++] = E_EQ;
		x--, y--;
	}
	memmove(out, out + max - len, len * sizeof(*out));
	*ret_len = len;
out:
	if (trace)
		for (size_t d = 0; d <= DIFF_MAX_D; d++)
			free(trace[d]);
	free(trace);
	free(v);
	return r;
}

static void put_line(FILE *out, char tag, const line *l, bool last_no_eol)
{
	fputc(tag, out);
	fwrite(l->p, 1, l->len, out);
	fputc('\n', out);
	if (last_no_eol)
		fputs("\\ No newline at end of file\n", out);
}

int ws_text_diff(const char *a, size_t alen, const char *b, size_t blen, const char *a_name,
		 const char *b_name, FILE *out, size_t *ret_added, size_t *ret_removed)
{
	line *la = NULL, *lb = NULL;
	size_t n = 0, m = 0, len = 0, added = 0, removed = 0;
	bool a_eol, b_eol;
	edit *e = NULL;
	int r;

	r = split(a, alen, &la, &n, &a_eol);
	if (r >= 0)
		r = split(b, blen, &lb, &m, &b_eol);
	if (r >= 0 && !(e = calloc(n + m + 1, sizeof(*e))))
		r = -ENOMEM;
	if (r >= 0)
		r = myers(la, n, lb, m, e, &len);
	if (r < 0)
		goto out;
	for (size_t i = 0; i < len; i++) {
		added += e[i] == E_INS;
		removed += e[i] == E_DEL;
	}
	if (out && (added || removed))
		fprintf(out, "--- %s\n+++ %s\n", a_name, b_name);
	/* Hunks: runs of edits with DIFF_CONTEXT equal lines around them. */
	for (size_t i = 0, ai = 0, bi = 0; out && i < len;) {
		size_t j, k, ha, hb, ca = 0, cb = 0, sa, sb, ia, ib;

		if (e[i] == E_EQ) {
			i++, ai++, bi++;
			continue;
		}
		/* Start DIFF_CONTEXT lines back; end where DIFF_CONTEXT*2 equal lines follow. */
		k = i;
		for (size_t back = 0; back < DIFF_CONTEXT && k > 0 && e[k - 1] == E_EQ; back++)
			k--;
		sa = ai - (i - k);
		sb = bi - (i - k);
		for (j = i; j < len;) {
			size_t run = 0;

			while (j + run < len && e[j + run] == E_EQ)
				run++;
			if (j + run >= len || run > 2 * DIFF_CONTEXT) {
				j += run < DIFF_CONTEXT ? run : DIFF_CONTEXT;
				break;
			}
			j += run;
			while (j < len && e[j] != E_EQ)
				j++;
		}
		for (size_t t = k; t < j; t++) {
			ca += e[t] != E_INS;
			cb += e[t] != E_DEL;
		}
		fprintf(out, "@@ -%zu,%zu +%zu,%zu @@\n", ca ? sa + 1 : sa, ca, cb ? sb + 1 : sb,
			cb);
		ia = sa;
		ib = sb;
		for (size_t t = k; t < j; t++) {
			if (e[t] == E_EQ) {
				put_line(out, ' ', &la[ia], ia + 1 == n && !a_eol);
				ia++, ib++;
			} else if (e[t] == E_DEL) {
				put_line(out, '-', &la[ia], ia + 1 == n && !a_eol);
				ia++;
			} else {
				put_line(out, '+', &lb[ib], ib + 1 == m && !b_eol);
				ib++;
			}
		}
		ha = ia;
		hb = ib;
		ai = ha;
		bi = hb;
		i = j;
	}
	if (ret_added)
		*ret_added = added;
	if (ret_removed)
		*ret_removed = removed;
out:
	free(la);
	free(lb);
	free(e);
	return r;
}
