/* SPDX-License-Identifier: MIT */
/* Ed25519 keys of the public-key seal, loaded in sandcap-main (cli.h). */
#include <errno.h>
#include <string.h>

#include "cli/cli.h"

int cli_load_sign_key(const char *file, bool private, au_sign_key **ret)
{
	int r = au_sign_key_load(file, private, ret);

	switch (r) {
	case 0:
		return 0;
	case -EACCES:
		cli_error("%s: signing key is accessible by group or others (chmod 600 it)", file);
		break;
	case -ELOOP:
		cli_error("%s: key file is a symbolic link", file);
		break;
	case -EINVAL:
		cli_error("%s: not a regular file", file);
		break;
	case -EFBIG:
		cli_error("%s: larger than a PEM key file can be (8 KiB)", file);
		break;
	case -EBADMSG:
		cli_error("%s: expected a PEM %s key (from 'sandcap audit keygen')", file,
			  private ? "private" : "public");
		break;
	case -EPROTOTYPE:
		cli_error("%s: not an Ed25519 key", file);
		break;
	default:
		cli_error("%s: %s", file, strerror(-r));
		break;
	}
	return r;
}

int cli_signer_load(const char *file, cli_signer *ret)
{
	int r = cli_load_sign_key(file, true, &ret->key);

	if (r < 0)
		return r;
	r = au_signer_of(ret->key, &ret->signer);
	if (r < 0) {
		cli_error("%s: not a private key", file);
		ret->key = au_sign_key_free(ret->key);
	}
	return r;
}

void cli_signer_done(cli_signer *s)
{
	s->key = au_sign_key_free(s->key);
}
