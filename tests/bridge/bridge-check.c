/* Test helpers of the bridge suite (see bridge-check.h)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "bridge-check.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CHILDREN 32

static char tmpdir[256];
static pid_t children[MAX_CHILDREN];
static pid_t main_pid;

static void
remove_tree (const char *dir)
{
  DIR *d = opendir (dir);
  struct dirent *e;
  char p[512];

  if (d == NULL)
    return;
  while ((e = readdir (d)) != NULL) {
    if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
      continue;
    snprintf (p, sizeof (p), "%s/%s", dir, e->d_name);
    if (unlink (p) < 0 && errno == EISDIR)
      remove_tree (p);
  }
  closedir (d);
  rmdir (dir);
}

void
bc_cleanup (void)
{
  int i;

  if (getpid () != main_pid)
    return;
  for (i = 0; i < MAX_CHILDREN; i++) {
    if (children[i] > 0) {
      kill (children[i], SIGKILL);
      waitpid (children[i], NULL, 0);
      children[i] = 0;
    }
  }
  if (tmpdir[0]) {
    remove_tree (tmpdir);
    tmpdir[0] = '\0';
  }
}

static void
on_signal (int sig)
{
  bc_cleanup ();
  _exit (128 + sig);
}

void
bc_fail (const char *file, int line, const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "FAIL %s:%d: ", file, line);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  if (getpid () != main_pid)
    _exit (1);
  bc_cleanup ();
  exit (1);
}

void
bc_init (void)
{
  const char *base = getenv ("TMPDIR");

  main_pid = getpid ();
  signal (SIGTERM, on_signal);
  signal (SIGINT, on_signal);
  signal (SIGPIPE, SIG_IGN);
  snprintf (tmpdir, sizeof (tmpdir), "%s/pf-bridge-XXXXXX",
      base && base[0] ? base : "/tmp");
  if (mkdtemp (tmpdir) == NULL) {
    perror ("mkdtemp");
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
  pid_t pid;
  int i;

  fflush (NULL);
  pid = fork ();
  if (pid < 0)
    bc_fail (__FILE__, __LINE__, "fork: %s", strerror (errno));
  if (pid == 0) {
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    if (getppid () != main_pid)
      _exit (1);
    return 0;
  }
  for (i = 0; i < MAX_CHILDREN; i++) {
    if (children[i] == 0) {
      children[i] = pid;
      break;
    }
  }
  return pid;
}

static void
forget (pid_t pid)
{
  int i;

  for (i = 0; i < MAX_CHILDREN; i++)
    if (children[i] == pid)
      children[i] = 0;
}

int
bc_wait (pid_t pid)
{
  int st = 0;

  while (waitpid (pid, &st, 0) < 0 && errno == EINTR);
  forget (pid);
  return st;
}

int
bc_kill_wait (pid_t pid, int sig)
{
  kill (pid, sig);
  return bc_wait (pid);
}

int
bc_count_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  struct dirent *e;
  int n = 0;

  if (d == NULL)
    return -1;
  while ((e = readdir (d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir (d);
  return n - 1;                 /* the DIR's own fd */
}
