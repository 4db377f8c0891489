/*
 * control.h: the `atrium` subsystem: JSON lines relayed between the client
 * and the room's agent (kind "control").
 */
#ifndef ATRIUMD_CONTROL_H
#define ATRIUMD_CONTROL_H

#include "session.h"

/* Make c a control channel.  0 or -ENOMEM. */
int control_open(struct chan *c);

#endif
