// SPDX-License-Identifier: MIT
/* Which local network interface reaches the chief. */
#ifndef SLOTRUN_IFACE_H
#define SLOTRUN_IFACE_H

#include <stddef.h>

/* The interface holding host's address when it is one of ours, else the
 * one the kernel routes to it through.  Loopback only when host itself is
 * a loopback address.  Returns 0 with the name in buf, or a negative errno
 * with a one-line reason in err. */
int iface_for_peer(const char *host, char *buf, size_t len, char *err, size_t errlen);

/* 0 when an interface of that name exists, else -ENODEV. */
int iface_exists(const char *name);

#endif
