/* SPDX-License-Identifier: MIT */
/* An empty program, linked as the sandcap front is: the start-up floor of
 * any command line (bench/session.sh). */
int main(void)
{
	return 0;
}
