/* SPDX-License-Identifier: MIT */
/* Shared by the workspace module's files only. */
#pragma once

#include <dirent.h>
#include <sys/stat.h>

#include "base/sha256.h"
#include "workspace/workspace.h"

/* Copies the regular file in (from offset 0) into out, an empty file,
 * keeping in's holes, and hashes the whole content into md (may be NULL;
 * holes as zeros). *bytes grows by the data written. */
int ws_copy_data(int in, int out, sha256_ctx *md, uint64_t *bytes);

/* Whiteouts and opaque directories: overlayfs(5), "whiteouts and opaque
 * directories" (trusted.* xattrs: the overlay is mounted by root). */
#define WS_OPAQUE_XATTR "trusted.overlay.opaque"
/* Set by overlayfs on what it copied up from the lower layer (a file handle
 * of the lower inode): the entry was in the host folder at the start. */
#define WS_ORIGIN_XATTR "trusted.overlay.origin"

/* Files of the upper layer with more than one name, by inode. */
typedef struct ws_link {
	uint64_t ino;
	char *rel;	 /* the first name copied or applied, relative to the root */
	char sha256[65]; /* its content's digest once applied, else "" */
} ws_link;
typedef struct ws_links {
	ws_link *v;
	size_t n, cap;
} ws_links;
void ws_links_done(ws_links *l);
const ws_link *ws_links_find(const ws_links *l, uint64_t ino);
int ws_links_add(ws_links *l, uint64_t ino, const char *rel, const char *sha256);

/* STATE/workspaces/.intents: what applies set out to do (intent.c), a
 * name ws_list() never takes for a workspace. Created (and its parent)
 * with create. */
#define WS_INTENT_DIR ".intents"
int ws_intents_dir(const char *state_dir, bool create);

/* STATE/workspaces/ID, created 0700; -EEXIST when it exists. */
int ws_store_new(const char *state_dir, const char *id, int *ret_dir, sc_diag *reterr_diag);
/* Subtrees not kept (their paths too long to apply, or no descriptor
 * left to open them): how many, the first and why. */
typedef struct ws_refused {
	size_t n;
	char *first;
	int err;
} ws_refused;
void ws_refused_add(ws_refused *ref, const char *rel, int err); /* ref may be NULL */
void ws_refused_done(ws_refused *ref);
/* Copies the tree at src (an open directory) into dst (an empty one, rel
 * below dst_root): files, directories, symlinks, FIFOs, whiteouts, the
 * opaque marker, owners and modes; a file's other names become hard links
 * again (links). Nothing is followed. Counts what it copied. Any depth;
 * what cannot be kept is refused (ref) and the rest kept. */
int ws_copy_tree(int src, int dst, int dst_root, const char *rel, ws_links *links, ws_refused *ref,
		 uint64_t *files, uint64_t *bytes);
/* Raises the soft limit of open files to the hard one. */
void ws_raise_nofile(void);
/* How a name of the upper layer is resolved below a root: never a symlink
 * or a mount crossed (apply.c). */
#define WS_RESOLVE (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
/* The directory holding rel below root (WS_RESOLVE) and rel's last
 * component. */
int ws_open_parent(int root, const char *rel, const char **ret_base);
/* Removes STATE/workspaces/ID, whatever it holds (meta.json or not). */
int ws_discard_dir(const char *state_dir, const char *id);
/* Removes name in dir (a directory recursively), never following a link. */
int ws_remove_at(int dir, const char *name, unsigned depth);
/* opendir(3) of name below dir ("." for dir itself: a new open file with
 * its own offset), never following a link. NULL with errno set. */
DIR *ws_opendir_at(int dir, const char *name);
/* "." or "..": the entries a walk skips. */
bool ws_is_dot(const char *name);
/* Whether directory fd carries the opaque marker ("y"). */
bool ws_is_opaque(int fd);
/* Whether the file or directory at fd was copied up (WS_ORIGIN_XATTR). */
bool ws_has_origin(int fd);
/* Copies WS_ORIGIN_XATTR from one open file or directory to another. */
int ws_copy_origin(int from, int to);
/* Whether st is a whiteout: a character device 0/0. */
bool ws_is_whiteout(const struct stat *st);
/* 'f', 'd', 'l', 'p', or 0 for what a workspace does not carry. */
char ws_type_of(mode_t mode);
