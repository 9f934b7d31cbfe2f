/* SPDX-License-Identifier: MIT */
/*
 * Copy-on-write workspaces ("mode": "cow" grants, docs/policy.md) and quotas
 * on rw grants. The supervisor builds each cow grant as an overlay whose
 * lower layer is the host folder (read-only) and whose upper layer lives on
 * a tmpfs sized by the grant's quota (cow.c); at the end of the run the
 * upper layer is kept under the state directory (store.c), where it is
 * compared with the host (changes.c), shown (cmd-workspace.c, textdiff.c)
 * and applied (apply.c). docs/architecture.md, "Workspaces".
 *
 * Library code: never prints; errors are -errno with a diagnostic.
 * Everything read from an upper layer (names, types, contents, xattrs,
 * symlink targets) was written by the agent and is treated as hostile.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "policy/plan.h"

#define WS_ID_MAX	      64u
#define WS_MAX_DEPTH	      128u	     /* directory levels below a rw grant's quota tags */
#define WS_PATH_MAX	      (PATH_MAX - 1) /* bytes of a path below a grant apply can name */
#define WS_MAX_CHANGES	      (1u << 20)     /* entries of one workspace */
#define WS_META_MAX	      (64u << 10)    /* bytes of meta.json */
#define WS_DIFF_MAX_BYTES     (8u << 20)     /* a larger file is shown as binary */
#define WS_DEFAULT_INODES_PER 4096u	     /* default: one inode per 4 KiB of quota */
#define WS_MIN_INODES	      1024u

/* ---- the overlay of one cow grant (supervisor, root) ---- */

typedef struct ws_cow ws_cow;

/*
 * Builds grant g's overlay as a detached mount (fsopen/fsmount): lower =
 * lower_tree, the grant's idmapped read-only tree (borrowed: the overlay
 * keeps its own reference); upper and work on a fresh tmpfs of g->quota
 * bytes and g->inodes inodes. The upper root belongs to agent_uid/gid (the
 * agent's host ids) with the lower root's mode. *ret_mount is the overlay,
 * for the child to attach (move_mount). Records the start epoch for the
 * conflict check (docs/decisions.md, "Workspaces: conflicts").
 */
int ws_cow_open(const plan_grant *g, size_t index, int lower_tree, uid_t agent_uid, gid_t agent_gid,
		ws_cow **ret, int *ret_mount, sc_diag *reterr_diag);
/* The upper layer's directory (O_PATH), on the tmpfs as stored: the live
 * view of the changes, for a reader while the sandbox runs. */
int ws_cow_upper_fd(const ws_cow *c);
ws_cow *ws_cow_free(ws_cow *c); /* NULL-safe */
/* A live apply wrote the host folder: host changes from epoch on are
 * conflicts (an earlier epoch is ignored). */
void ws_cow_set_epoch(ws_cow *c, const struct timespec *epoch);

/* What a workspace was made from: meta.json in its directory. */
typedef struct ws_meta {
	char id[WS_ID_MAX + 1];
	char sandbox[64];
	char *grant_path; /* the host folder (lower layer) */
	char *grant_at;	  /* where the agent saw it */
	uint64_t quota, inodes;
	struct timespec epoch; /* host changes after this are conflicts */
	uint64_t grant_dev, grant_ino;
	char *audit_log; /* the run's log, "" when it had none */
	char state[16];	 /* "kept", "applied" */
	uint64_t files, bytes;
	/* Not stored: what ws_cow_save() could not keep (see ws_refused). */
	uint64_t refused;
	char *refused_first;
	int refused_err;
} ws_meta;

/* What the workspace of c is (its id SANDBOX.INDEX, folder, epoch), for a
 * reader of the live upper layer; the strings are c's (borrowed). */
void ws_cow_meta(const ws_cow *c, const char *sandbox_id, const char *audit_log, ws_meta *ret);
void ws_meta_done(ws_meta *m);
/* Parses meta.json (written by us, but read back: bounded and checked).
 * -EBADMSG with why (NUL-terminated) for anything unexpected. */
int ws_meta_parse(const char *buf, size_t len, ws_meta *ret, char *why, size_t why_len);
char *ws_meta_to_json(const ws_meta *m); /* caller frees */

/*
 * End of the run: copies c's upper layer to STATE/workspaces/ID/upper
 * (whiteouts as 0/0 character devices, opaque directories with their
 * xattr, owners and modes as on the tmpfs) and writes meta.json. The
 * workspace id is SANDBOX.INDEX. Fills files/bytes/id of *meta. Returns 1,
 * keeping nothing, when the upper layer is empty (the agent changed
 * nothing there).
 */
int ws_cow_save(ws_cow *c, const char *state_dir, const char *sandbox_id, const char *audit_log,
		ws_meta *ret_meta, sc_diag *reterr_diag);

/* ---- the store: STATE/workspaces/ ---- */

/* Whether id is a well-formed workspace id ([A-Za-z0-9._-], not "." ".."). */
bool ws_id_valid(const char *id);
/* Opens STATE/workspaces/ID and reads its meta.json. *ret_dir: O_DIRECTORY. */
int ws_open(const char *state_dir, const char *id, int *ret_dir, ws_meta *ret_meta,
	    sc_diag *reterr_diag);
/* Rewrites meta.json atomically (temp + rename). */
int ws_meta_store(int dir, const ws_meta *m);
/* Every workspace's meta, sorted by id; *ret_n of them. */
int ws_list(const char *state_dir, ws_meta **ret, size_t *ret_n, sc_diag *reterr_diag);
/* Removes STATE/workspaces/ID and everything in it. */
int ws_discard(const char *state_dir, const char *id, sc_diag *reterr_diag);

typedef enum ws_prune_verdict {
	WS_PRUNE_REMOVED,    /* removed (with dry_run: would be) */
	WS_PRUNE_KEPT_BUSY,  /* older than the cutoff, but being applied (locked) */
	WS_PRUNE_KEPT_YOUNG, /* written since the cutoff */
	WS_PRUNE_FAILED,     /* err says why */
	_WS_PRUNE_VERDICT_MAX,
	_WS_PRUNE_VERDICT_INVALID = -EINVAL,
} ws_prune_verdict;

typedef struct ws_pruned {
	const char *id;
	const char *state; /* meta.json's, or "incomplete" without one */
	ws_prune_verdict verdict;
	int err;
	uint64_t files, bytes;
	time_t mtime; /* meta.json's: when it was kept or last applied */
} ws_pruned;

/*
 * Every workspace under STATE/workspaces: one last written (meta.json, or
 * the directory when that is missing) before cutoff and not locked by an
 * apply is removed with its unfinished apply's intent, unless dry_run; cb
 * is called for each. 0, or -errno when the directory cannot be read (none
 * is 0).
 */
int ws_prune(const char *state_dir, time_t cutoff, bool dry_run,
	     void (*cb)(const ws_pruned *w, void *userdata), void *userdata);

/* ---- the changes: the upper layer against the host folder ---- */

typedef enum ws_op {
	WS_ADDED,
	WS_MODIFIED, /* content (or symlink target, or file type) differs */
	WS_MODE,     /* only the permission bits differ */
	WS_DELETED,
	WS_RENAMED, /* a deleted file whose content reappeared under another name */
	_WS_OP_MAX,
	_WS_OP_INVALID = -EINVAL,
} ws_op;

typedef struct ws_change {
	char *path; /* relative to the grant, no leading "/" */
	char *from; /* WS_RENAMED: the old path */
	ws_op op;
	char type, old_type;   /* 'f' file, 'd' directory, 'l' symlink, 'p' FIFO, 0 none */
	mode_t mode, old_mode; /* permission bits */
	uint64_t size, old_size;
	char *link, *old_link; /* symlink targets, as bytes (never followed) */
	bool origin;	       /* WS_ADDED: copied up from the host folder, which has it no more */
} ws_change;

typedef struct ws_changes {
	ws_change *v;
	size_t n, cap;
	/* Entries of a live upper layer whose paths are longer than apply can
	 * name (WS_PATH_MAX): not listed; how many, and the first. */
	size_t refused;
	char *refused_first;
} ws_changes;

void ws_changes_done(ws_changes *c);
/*
 * Compares upper (the upper layer's root directory) with lower (the host
 * folder's root directory, the lower layer as it is now) and lists every
 * change in path order: what apply would do. Nothing is followed; nothing
 * is written.
 */
int ws_changes_compute(int upper, int lower, ws_changes *ret);
char ws_op_letter(ws_op op); /* 'A', 'M', 'm', 'D', 'R' */

/* Reads the whole regular file at fd (at most max bytes, else -EFBIG);
 * NUL-terminated, *ret_len without it. */
int ws_read_all(int fd, size_t max, char **ret, size_t *ret_len);

/* ---- text diffs ---- */

/* Whether these bytes are shown as text: no NUL, at most WS_DIFF_MAX_BYTES. */
bool ws_is_text(const char *buf, size_t len);
/*
 * Writes a unified diff (3 lines of context) of a -> b to out, with
 * "--- a/PATH" / "+++ b/PATH" headers; *ret_added/removed count the lines.
 * Memory is bounded by the inputs (Myers' algorithm, linear space).
 */
int ws_text_diff(const char *a, size_t alen, const char *b, size_t blen, const char *a_name,
		 const char *b_name, FILE *out, size_t *ret_added, size_t *ret_removed);

/* ---- apply ---- */

typedef struct ws_applied {
	char *path;
	const char *op;	 /* "write", "link", "symlink", "mkdir", "mode", "delete", "fifo" */
	char sha256[65]; /* of a written file's content, "" otherwise */
} ws_applied;

typedef struct ws_apply_result {
	ws_applied *v;
	size_t n;
	char **conflicts; /* paths changed on the host since the start */
	size_t n_conflicts;
	/* Paths the agent changed while they were applied (a live workspace):
	 * what was written may be neither version; applying again takes the
	 * new one. A file gone meanwhile is listed and skipped. */
	char **changed;
	size_t n_changed;
} ws_apply_result;

void ws_apply_result_done(ws_apply_result *r);
/*
 * Writes the changes of the upper layer at upper (a directory fd: a kept
 * workspace's upper/, or a live one's, ws_cow_upper_fd()) into m's folder. Every path is
 * resolved below the folder's root fd with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV; each file is written beside its
 * place and renamed over it; symlinks are created as symlinks. Unless
 * force, -EBUSY (nothing written) when a path it would touch changed on the
 * host since the epoch: ret->conflicts lists them. -ESTALE when the folder
 * is not the one the workspace was made from.
 */
/* Opens the workspace's host folder (no symlink followed) and checks it is
 * the directory the workspace was made from (-ESTALE otherwise). */
int ws_open_grant_root(const ws_meta *m, int *ret, sc_diag *reterr_diag);

/* ---- an unfinished apply (intent.c) ---- */

#define WS_INTENT_LISTED   'w' /* that apply set out to write it */
#define WS_INTENT_CONFLICT 'c' /* ... over a host change (--force) */
#define WS_INTENT_IN_PLACE 'p' /* an apply before it had written it */

typedef struct ws_intent_entry {
	char *path;
	char flag;
} ws_intent_entry;

typedef struct ws_intent {
	ws_intent_entry *v; /* sorted by path, one entry a path */
	size_t n, cap;
	char *log; /* the log that apply recorded into */
} ws_intent;

void ws_intent_done(ws_intent *t);
/* The flag of path in t (NULL-safe), or 0. */
char ws_intent_find(const ws_intent *t, const char *path);
/* The intent of an apply about to write ch over conflicts: ch's paths
 * (and old names), the conflicts, and what prior listed as in place. */
int ws_intent_build(const ws_changes *ch, char *const *conflicts, size_t n_conflicts,
		    const ws_intent *prior, ws_intent *ret);
/* STATE/workspaces/.intents/ID: -ENOENT when no apply of ID is unfinished,
 * -EBADMSG when the file is not one of ours. */
int ws_intent_load(const char *state_dir, const char *id, ws_intent *ret);
/* The file's bytes: -EBADMSG for anything that is not one of ours. */
int ws_intent_parse(const char *buf, size_t len, ws_intent *ret);
/* Written and fsynced (temp + rename): durable before it returns. */
int ws_intent_store(const char *state_dir, const char *id, const ws_intent *t);
int ws_intent_remove(const char *state_dir, const char *id);

/*
 * Called once the changes are known and the conflicts checked, before the
 * first write: a negative return stops the apply with nothing written.
 */
typedef int (*ws_before_write_fn)(const ws_changes *ch, const ws_apply_result *res, void *userdata);
/*
 * prior (may be NULL): the intent of an unfinished apply of the same
 * workspace. A path it lists may have been written by that apply: one that
 * is a directory on the host now is no conflict for its own ctime (that
 * apply made it or wrote into it; its entries are checked each), one the
 * host had deleted before was checked then; every other is checked as
 * usual, so a host edit since is still a conflict. What that apply left
 * beside its places (.sandcap-apply.*) is removed before the first write.
 */
int ws_apply(int upper, const ws_meta *m, bool force, const ws_intent *prior,
	     ws_before_write_fn before_write, void *userdata, ws_apply_result *ret,
	     sc_diag *reterr_diag);

/* ---- quotas on rw grants (project quotas) ---- */

typedef enum ws_quota_support {
	WS_QUOTA_ENFORCED,    /* project quotas are on: the limit is the kernel's */
	WS_QUOTA_UNSUPPORTED, /* the filesystem has no project quota (why says) */
	_WS_QUOTA_SUPPORT_MAX,
	_WS_QUOTA_SUPPORT_INVALID = -EINVAL,
} ws_quota_support;

/* Whether the filesystem of fd enforces project quotas; why (NUL-terminated)
 * says what is missing. */
ws_quota_support ws_quota_probe(int fd, char *why, size_t why_len);
/*
 * Supervisor, root: tags every file of the tree at fd with project id
 * projid (inherited by what is created below) and sets the project's limit
 * to the tree's usage now plus quota bytes (and inodes), so that the agent
 * may add at most that much. -EOPNOTSUPP when the filesystem cannot.
 */
int ws_quota_set(int fd, uint32_t projid, uint64_t quota, uint64_t inodes, uint64_t *ret_used);
/* Lifts the limit again (the tags stay: they cost nothing). */
int ws_quota_clear(int fd, uint32_t projid);
