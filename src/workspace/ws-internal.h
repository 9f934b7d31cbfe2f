/* SPDX-License-Identifier: MIT */
/* Shared by the workspace module's files only. */
#pragma once

#include <dirent.h>

#include "workspace/workspace.h"

/* Whiteouts and opaque directories: overlayfs(5), "whiteouts and opaque
 * directories" (trusted.* xattrs: the overlay is mounted by root). */
#define WS_OPAQUE_XATTR "trusted.overlay.opaque"

/* STATE/workspaces/ID, created 0700; -EEXIST when it exists. */
int ws_store_new(const char *state_dir, const char *id, int *ret_dir, sc_diag *reterr_diag);
/* Copies the tree at src (an open directory) into dst (an empty one):
 * files, directories, symlinks, FIFOs, whiteouts, the opaque marker, owners
 * and modes. Nothing is followed. Counts what it copied. */
int ws_copy_tree(int src, int dst, unsigned depth, uint64_t *files, uint64_t *bytes);
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
/* Whether st is a whiteout: a character device 0/0. */
bool ws_is_whiteout(const struct stat *st);
/* 'f', 'd', 'l', 'p', or 0 for what a workspace does not carry. */
char ws_type_of(mode_t mode);
