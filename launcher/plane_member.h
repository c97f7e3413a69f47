// SPDX-License-Identifier: MIT
/* Another node's side of the job plane: once connected to the chief
 * (plane_seek.c finds it), it proves the secret and checks that the chief
 * holds it too, then does what the chief says and tells it what happens
 * here.  A chief that goes away stops this node's workers. */
#ifndef SLOTRUN_PLANE_MEMBER_H
#define SLOTRUN_PLANE_MEMBER_H

#include <stdbool.h>
#include <stddef.h>

#include "plane_int.h"

extern const struct plane_side plane_member_side;

/* Starts connecting to the chief.  Returns 0 or -ENOMEM with err set. */
int plane_member_open(struct plane *p, char *err, size_t errlen);

/* This node's own events, for the chief. */
void plane_member_local_fail(struct plane *p, const struct plane_cause *f);
void plane_member_local_signal(struct plane *p, int sig, bool stops, const char *why);
void plane_member_local_pause(struct plane *p, int sig);
void plane_member_local_resume(struct plane *p);
void plane_member_local_done(struct plane *p, int code);

/* Frees what plane_member_open made (the connections are closed already). */
void plane_member_close(struct plane *p);

#endif
