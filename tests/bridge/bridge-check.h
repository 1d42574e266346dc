/* Test helpers of the bridge suite: checks, temp dir, children, fd counts
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A failed CHECK (tests/common/pf-test-util.h) kills every child started with bc_fork(), removes the temp
 * dir and exits 1; so does SIGTERM/SIGINT (meson's timeout). Children die
 * with the parent (PR_SET_PDEATHSIG) even if it is SIGKILLed.
 */
#ifndef __BRIDGE_CHECK_H__
#define __BRIDGE_CHECK_H__

#include <sys/types.h>

/* CHECK, CHECK_INT, CHECK_MSG, and pf_test_count_fds (), pf_test_memfd ()
 * ...; after bc_init () a failed check cleans up and exits 1. */
#include "pf-test-util.h"

/* Installs signal handlers and creates a private temp dir. */
void bc_init (void);
/* The temp dir (removed with its contents at exit). */
const char *bc_tmpdir (void);
/* A path in the temp dir (static buffer per call slot 0..7). */
const char *bc_path (const char *name);

/* fork(); the child gets PR_SET_PDEATHSIG(SIGKILL) and is killed and
 * reaped at exit. Returns the pid in the parent, 0 in the child. */
pid_t bc_fork (void);
/* Kills @pid with @sig and reaps it; returns its wait status. */
int bc_kill_wait (pid_t pid, int sig);
/* Waits for @pid; returns the wait status. */
int bc_wait (pid_t pid);

/* Removes children and the temp dir now (also runs at exit). */
void bc_cleanup (void);

#endif
