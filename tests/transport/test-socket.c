/* pinnedflow transport: socket file handling and connecting
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static int
n_dir_entries (void)
{
  DIR *d = opendir (t_dir ());
  struct dirent *e;
  int n = 0;

  while ((e = readdir (d)) != NULL)
    if (strcmp (e->d_name, ".") && strcmp (e->d_name, ".."))
      n++;
  closedir (d);
  return n;
}

static unsigned int
mode_of (const char *path)
{
  struct stat st;

  if (lstat (path, &st) < 0)
    return 0;
  CHECK (S_ISSOCK (st.st_mode));
  return st.st_mode & 07777;
}

static void
test_perms (void)
{
  static const unsigned int modes[] = { 0600, 0660, 0666, 0700 };
  pf_producer_config cfg = {.socket_path = t_path ("sock"),
    .max_client_frames = 1
  };
  pf_producer *p;
  pf_consumer *c;
  unsigned int i;

  umask (022);
  for (i = 0; i < 4; i++) {
    cfg.perms = modes[i];
    CHECK_INT (pf_producer_new (&cfg, &p), ==, 0);
    CHECK_INT (mode_of (cfg.socket_path), ==, modes[i]);
    /* No temporary name left behind. */
    CHECK_INT (n_dir_entries (), ==, 1);
    CHECK_INT (pf_consumer_connect (cfg.socket_path, 1000, &c), ==, 0);
    pf_consumer_unref (c);
    pf_producer_close (p);
    pf_producer_unref (p);
    CHECK_INT (n_dir_entries (), ==, 0);
  }
}

/* A socket path with no room for the temporary name still works. */
static void
test_long_path (void)
{
  const size_t max = sizeof (((struct sockaddr_un *) 0)->sun_path);
  char path[256];
  pf_producer_config cfg = {.socket_path = path,.perms = 0640,
    .max_client_frames = 1
  };
  size_t n;
  pf_producer *p;
  pf_consumer *c;

  n = (size_t) snprintf (path, sizeof (path), "%s/", t_dir ());
  memset (path + n, 'x', max - n);
  path[max] = '\0';             /* no room for the NUL */
  CHECK_INT (pf_producer_new (&cfg, &p), ==, -ENAMETOOLONG);
  path[max - 1] = '\0';
  CHECK_INT (pf_producer_new (&cfg, &p), ==, 0);
  CHECK_INT (mode_of (path), ==, 0640);
  CHECK_INT (pf_consumer_connect (path, 1000, &c), ==, 0);
  pf_consumer_unref (c);
  pf_producer_close (p);
  pf_producer_unref (p);
  CHECK (access (path, F_OK) != 0);
}

static void
test_bad_config (void)
{
  pf_producer_config cfg = {.socket_path = "",.perms = 0600,
    .max_client_frames = 1
  };
  pf_producer *p = (pf_producer *) 1;
  int fd;

  CHECK_INT (pf_producer_new (&cfg, &p), ==, -EINVAL);
  CHECK (p == NULL);
  cfg.socket_path = NULL;
  CHECK_INT (pf_producer_new (&cfg, &p), ==, -EINVAL);
  cfg.socket_path = t_path ("sock");
  cfg.max_client_frames = 0;
  CHECK_INT (pf_producer_new (&cfg, &p), ==, -EINVAL);
  CHECK_INT (pf_producer_new (NULL, &p), ==, -EINVAL);
  /* Something that is not a socket is never removed. */
  cfg.max_client_frames = 1;
  fd = open (t_path ("sock"), O_CREAT | O_WRONLY, 0600);
  CHECK (fd >= 0);
  CHECK_INT (write (fd, "keep", 4), ==, 4);
  close (fd);
  CHECK_INT (pf_producer_new (&cfg, &p), ==, -EEXIST);
  CHECK_INT (access (t_path ("sock"), F_OK), ==, 0);
  /* A directory that does not exist. */
  cfg.socket_path = t_path ("no/such/dir/sock");
  CHECK_INT (pf_producer_new (&cfg, &p), ==, -ENOENT);
}

static int
child_producer (void *data)
{
  int ready = *(int *) data;
  t_producer tp;
  char x = 'r';

  if (t_producer_start (&tp, t_path ("sock"), 4) != 0)
    return 20;
  if (write (ready, &x, 1) != 1)
    return 21;
  for (;;)
    pause ();
}

static void
test_stale_and_live (void)
{
  int fds0 = t_count_fds ();
  int pipefd[2];
  t_producer tp;
  pf_consumer *c;
  pid_t pid;
  char x;

  CHECK_INT (pipe (pipefd), ==, 0);
  pid = t_spawn (child_producer, &pipefd[1]);
  CHECK_INT (read (pipefd[0], &x, 1), ==, 1);

  /* Live: refused, and the live producer is left alone. */
  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 4), ==, -EADDRINUSE);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 1000, &c), ==, 0);
  pf_consumer_unref (c);

  /* Crash: the file stays and refuses connections... */
  kill (pid, SIGKILL);
  CHECK_INT (t_wait (pid), ==, 128 + SIGKILL);
  CHECK_INT (mode_of (t_path ("sock")), ==, 0600);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 0, &c), ==, -ETIMEDOUT);
  CHECK (strstr (pf_consumer_connect_error (), "refused") != NULL);
  /* ... and a restart removes it. */
  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 4), ==, 0);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 1000, &c), ==, 0);
  pf_consumer_unref (c);
  /* In-process too. */
  {
    t_producer tp2;
    CHECK_INT (t_producer_start (&tp2, t_path ("sock"), 4), ==, -EADDRINUSE);
  }
  t_producer_stop (&tp);
  close (pipefd[0]);
  close (pipefd[1]);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* close() removes only its own socket file. */
static void
test_unlink_own_only (void)
{
  t_producer a, b;

  CHECK_INT (t_producer_start (&a, t_path ("sock"), 4), ==, 0);
  CHECK_INT (unlink (t_path ("sock")), ==, 0);
  CHECK_INT (t_producer_start (&b, t_path ("sock"), 4), ==, 0);
  t_producer_stop (&a);
  CHECK_INT (access (t_path ("sock"), F_OK), ==, 0);
  t_producer_stop (&b);
  CHECK (access (t_path ("sock"), F_OK) != 0);
}

static int
child_late_producer (void *data)
{
  t_producer tp;

  t_sleep_ms (300);
  if (t_producer_start (&tp, t_path ("sock"), 4) != 0)
    return 20;
  if (pf_producer_set_caps (tp.p, "late/caps") != 0)
    return 21;
  for (;;)
    pause ();
}

static void
test_connect_retry (void)
{
  int fds0 = t_count_fds ();
  pf_consumer *c = (pf_consumer *) 1;
  pf_event ev;
  pid_t pid;

  /* Nobody there. */
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 0, &c), ==, -ETIMEDOUT);
  CHECK (c == NULL);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 50, &c), ==, -ETIMEDOUT);
  CHECK (strlen (pf_consumer_connect_error ()) > 0);
  CHECK_INT (t_count_fds (), ==, fds0);
  /* The producer comes up later: connect waits for it. */
  pid = t_spawn (child_late_producer, NULL);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 30000, &c), ==, 0);
  CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_CAPS);
  CHECK (strcmp (ev.caps, "late/caps") == 0);
  kill (pid, SIGKILL);
  t_wait (pid);
  CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, -EPIPE);
  pf_consumer_unref (c);
  CHECK_INT (t_count_fds (), ==, fds0);
}

static int
child_connect (void *data)
{
  int *pipefd = data;
  pf_consumer *c;
  char x;

  close (pipefd[1]);
  if (pf_consumer_connect (t_path ("sock"), 20000, &c) != 0)
    return 10;
  /* Wait for the parent to close its end. */
  if (read (pipefd[0], &x, 1) < 0)
    return 11;
  pf_consumer_unref (c);
  return 0;
}

/* SO_PEERCRED identifies each consumer process. */
static void
test_peercred (void)
{
  t_producer tp;
  pf_client_stats st;
  int pipefd[2];
  pid_t pid;

  CHECK_INT (pipe (pipefd), ==, 0);
  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 4), ==, 0);
  pid = t_spawn (child_connect, pipefd);
  WAIT_FOR (pf_producer_get_n_clients (tp.p) == 1);
  CHECK_INT (pf_producer_get_client_stats (tp.p, &st, 1), ==, 1);
  CHECK_INT (st.pid, ==, pid);
  CHECK_INT (st.uid, ==, getuid ());
  WAIT_FOR (tp.connected == 1);
  CHECK_INT (tp.last_pid, ==, pid);
  close (pipefd[1]);
  CHECK_INT (t_wait (pid), ==, 0);
  WAIT_FOR (tp.disconnected == 1);
  CHECK_INT (tp.last_error, ==, 0);
  CHECK (strstr (tp.last_reason, "hung up") != NULL);
  t_producer_stop (&tp);
  close (pipefd[0]);
}

/* The mode is enforced: another user cannot connect to a 0600 socket but
 * can to a 0666 one (needs root to switch users; the directory is opened
 * up for the other user first). */
static int
child_other_user (void *data)
{
  pf_consumer *c;
  int res;

  if (setgid (65534) != 0 || setuid (65534) != 0)
    return 30;
  res = pf_consumer_connect (t_path ("sock"), 0, &c);
  if (res == 0)
    pf_consumer_unref (c);
  return res == 0 ? 0 : res == -EACCES ? 1 : 2;
}

static void
test_perms_enforced (void)
{
  pf_producer_config cfg = {.socket_path = t_path ("sock"),
    .max_client_frames = 1,.perms = 0600
  };
  pf_producer *p;

  if (getuid () != 0)
    t_skip ("needs root to act as another user");
  CHECK_INT (chmod (t_dir (), 0755), ==, 0);
  CHECK_INT (pf_producer_new (&cfg, &p), ==, 0);
  CHECK_INT (t_wait (t_spawn (child_other_user, NULL)), ==, 1);
  pf_producer_close (p);
  pf_producer_unref (p);
  cfg.perms = 0666;
  CHECK_INT (pf_producer_new (&cfg, &p), ==, 0);
  CHECK_INT (t_wait (t_spawn (child_other_user, NULL)), ==, 0);
  pf_producer_close (p);
  pf_producer_unref (p);
}

/* Producers racing for one path in one process: exactly one wins, the
 * file has the right mode, no temporary name is left. */
#define N_RACERS 8
static pf_producer *racers[N_RACERS];
static int racer_res[N_RACERS];

static void *
racer (void *data)
{
  int i = (int) (intptr_t) data;
  pf_producer_config cfg = {.socket_path = t_path ("sock"),.perms = 0640,
    .max_client_frames = 1
  };

  racer_res[i] = pf_producer_new (&cfg, &racers[i]);
  return NULL;
}

static void
test_race (void)
{
  int fds0 = t_count_fds ();
  pthread_t th[N_RACERS];
  pf_consumer *c;
  int i, round, won;

  for (round = 0; round < 20; round++) {
    for (i = 0; i < N_RACERS; i++)
      pthread_create (&th[i], NULL, racer, (void *) (intptr_t) i);
    for (i = 0; i < N_RACERS; i++)
      pthread_join (th[i], NULL);
    won = 0;
    for (i = 0; i < N_RACERS; i++) {
      if (racer_res[i] == 0)
        won++;
      else
        CHECK_INT (racer_res[i], ==, -EADDRINUSE);
    }
    CHECK_INT (won, ==, 1);
    CHECK_INT (n_dir_entries (), ==, 1);
    CHECK_INT (mode_of (t_path ("sock")), ==, 0640);
    CHECK_INT (pf_consumer_connect (t_path ("sock"), 1000, &c), ==, 0);
    pf_consumer_unref (c);
    for (i = 0; i < N_RACERS; i++) {
      if (racer_res[i] == 0) {
        pf_producer_close (racers[i]);
        pf_producer_unref (racers[i]);
      }
    }
    CHECK_INT (n_dir_entries (), ==, 0);
  }
  CHECK_INT (t_count_fds (), ==, fds0);
}

static const t_case cases[] = {
  {"perms", test_perms},
  {"perms-enforced", test_perms_enforced},
  {"long-path", test_long_path},
  {"bad-config", test_bad_config},
  {"stale-and-live", test_stale_and_live},
  {"unlink-own-only", test_unlink_own_only},
  {"race", test_race},
  {"connect-retry", test_connect_retry},
  {"peercred", test_peercred},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
