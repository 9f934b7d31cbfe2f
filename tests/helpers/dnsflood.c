/* SPDX-License-Identifier: MIT */
/*
 * A fast DNS client for load tests: "dnsflood SERVER COUNT NAME" sends
 * COUNT A queries for NAME to SERVER:53 over UDP, WINDOW (32) in flight,
 * each with an id no other query in flight has, never sent twice. It counts
 * every answer datagram that arrives and prints "sent S answered A"; it
 * gives up (exit 1) when no answer comes for 60 s, since a resolver that
 * waits for its records may be slow but never silent that long.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define WINDOW 32u

static size_t build_query(uint8_t *q, uint16_t id, const char *name)
{
	size_t n = 12;
	const char *label = name;

	memset(q, 0, 12);
	q[0] = (uint8_t)(id >> 8);
	q[1] = (uint8_t)id;
	q[2] = 0x01; /* recursion desired */
	q[5] = 1;    /* one question */
	while (*label) {
		const char *dot = strchr(label, '.');
		size_t len = dot ? (size_t)(dot - label) : strlen(label);

		q[n++] = (uint8_t)len;
		memcpy(q + n, label, len);
		n += len;
		label += len + (dot ? 1 : 0);
	}
	q[n++] = 0;
	q[n++] = 0;
	q[n++] = 1; /* A */
	q[n++] = 0;
	q[n++] = 1; /* IN */
	return n;
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(53)};
	uint8_t q[300], a[600];
	unsigned long count, sent = 0, answered = 0;
	unsigned in_flight = 0;
	int fd;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &to.sin_addr) != 1 || strlen(argv[3]) > 200) {
		fprintf(stderr, "usage: dnsflood SERVER-IPV4 COUNT NAME\n");
		return 2;
	}
	count = strtoul(argv[2], NULL, 10);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof(to)) < 0) {
		perror("dnsflood: socket");
		return 1;
	}
	while (answered < count) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		while (in_flight < WINDOW && sent < count) {
			size_t len = build_query(q, (uint16_t)sent, argv[3]);

			if (send(fd, q, len, 0) < 0) {
				if (errno == EINTR)
					continue;
				perror("dnsflood: send");
				return 1;
			}
			sent++;
			in_flight++;
		}
		if (poll(&p, 1, 60000) == 0) {
			fprintf(stderr, "dnsflood: no answer for 60 s\n");
			break;
		}
		n = recv(fd, a, sizeof(a), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("dnsflood: recv");
			return 1;
		}
		if (n >= 12 && (a[2] & 0x80)) {
			answered++;
			if (in_flight > 0)
				in_flight--;
		}
	}
	printf("sent %lu answered %lu\n", sent, answered);
	return answered == count ? 0 : 1;
}
