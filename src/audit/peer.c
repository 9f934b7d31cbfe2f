/* SPDX-License-Identifier: MIT */
/*
 * A generic gate for events from a less-trusted peer: bounded, strictly
 * parsed, and only the event names that peer may emit get into the log.
 * No part of the supervisor uses it today: the proxy worker's events go
 * through px_event_parse() (a schema per event, docs/proxy.md) and then
 * au_emit(), and the seccomp listener is a thread of the supervisor.
 */
#include <errno.h>
#include <string.h>

#include "audit/audit-internal.h"

static bool event_allowed(const char *event, const char *const *allowed)
{
	for (; allowed && *allowed; allowed++) {
		size_t n = strlen(*allowed);

		/* "net." allows the family, "limit.hit" exactly that event. */
		if (n > 0 && (*allowed)[n - 1] == '.' ? strncmp(event, *allowed, n) == 0
						      : strcmp(event, *allowed) == 0)
			return true;
	}
	return false;
}

int au_emit_untrusted(au_log *log, const char *msg, size_t len, const char *const *allowed)
{
	json_t *root, *data;
	const char *event;
	json_error_t jerr;
	int r;

	if (!log || !msg)
		return -EINVAL;
	if (len > AU_PEER_MSG_MAX)
		return -EMSGSIZE;
	root = json_loadb(msg, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!json_is_object(root) || json_object_size(root) != 2) {
		json_decref(root);
		return -EBADMSG;
	}
	event = json_string_value(json_object_get(root, "event"));
	data = json_object_get(root, "data");
	if (!event || !json_is_object(data) || !au_valid_event(event)) {
		json_decref(root);
		return -EBADMSG;
	}
	if (strcmp(event, AU_SEAL_EVENT) == 0 || strcmp(event, AU_ERROR_EVENT) == 0 ||
	    !event_allowed(event, allowed)) {
		json_decref(root);
		return -EPERM;
	}
	r = au_emit(log, event, json_incref(data));
	json_decref(root);
	return r;
}
