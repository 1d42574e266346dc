/* Test helpers of the bridge suite (see bridge-check.h)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The fd counting, temp dir and child handling live in tests/common; this
 * adds the suite's failure path (kill children, remove the dir, exit 1).
 */
#include "bridge-check.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pf-test-util.h"

static char tmpdir[256];
static pid_t main_pid;

void
bc_cleanup (void)
{
  if (getpid () != main_pid)
    return;
  pf_test_kill_children ();
  if (tmpdir[0]) {
    pf_test_remove_tree (tmpdir);
    tmpdir[0] = '\0';
  }
}

static void
on_signal (int sig)
{
  bc_cleanup ();
  _exit (128 + sig);
}

/* The fail handler of pf_test_fail (): a forked child just exits. */
static void
on_fail (void)
{
  if (getpid () != main_pid)
    _exit (1);
  bc_cleanup ();
  exit (1);
}

void
bc_init (void)
{
  int res;

  main_pid = getpid ();
  signal (SIGTERM, on_signal);
  signal (SIGINT, on_signal);
  signal (SIGPIPE, SIG_IGN);
  pf_test_set_fail_handler (on_fail);
  if ((res = pf_test_make_tmpdir (tmpdir, sizeof (tmpdir), "pf-bridge")) < 0) {
    fprintf (stderr, "mkdtemp: %s\n", strerror (-res));
    tmpdir[0] = '\0';
    exit (1);
  }
  atexit (bc_cleanup);
}

const char *
bc_tmpdir (void)
{
  return tmpdir;
}

const char *
bc_path (const char *name)
{
  static char bufs[8][512];
  static int next;
  char *b = bufs[next++ % 8];

  snprintf (b, 512, "%s/%s", tmpdir, name);
  return b;
}

pid_t
bc_fork (void)
{
  pid_t pid = pf_test_fork ();

  if (pid < 0)
    pf_test_fail (__FILE__, __LINE__, "fork: %s", strerror (errno));
  return pid;
}

int
bc_wait (pid_t pid)
{
  return pf_test_wait (pid);
}

int
bc_kill_wait (pid_t pid, int sig)
{
  kill (pid, sig);
  return bc_wait (pid);
}
