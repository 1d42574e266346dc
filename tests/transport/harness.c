/* pinnedflow transport tests: a tiny harness (plain C)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pf-test-util.h"

static char dir[256];
/* per thread: cases call t_path () from several threads at once (a data
 * race that ThreadSanitizer found, issue 31) */
static __thread char path_buf[4][512];
static __thread int path_idx;

void
t_fail (void)
{
  fflush (stderr);
  _exit (1);
}

#define SKIP_STATUS 77

void
t_skip (const char *why)
{
  printf ("  (%s)\n", why);
  fflush (stdout);
  _exit (SKIP_STATUS);
}

const char *
t_dir (void)
{
  return dir;
}

const char *
t_path (const char *name)
{
  char *b = path_buf[path_idx++ % 4];

  snprintf (b, sizeof (path_buf[0]), "%s/%s", dir, name);
  return b;
}

int
t_count_fds (void)
{
  return pf_test_count_fds ();
}

void
t_sleep_ms (int ms)
{
  pf_test_sleep_ms (ms);
}

pid_t
t_spawn (int (*fn) (void *arg), void *arg)
{
  pid_t pid = pf_test_fork ();

  if (pid < 0) {
    perror ("fork");
    t_fail ();
  }
  if (pid == 0)
    _exit (fn (arg));
  return pid;
}

int
t_wait (pid_t pid)
{
  return pf_test_exit_code (pf_test_wait (pid));
}

static uint64_t
next_rand (uint64_t * s)
{
  uint64_t x = *s;

  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return *s = x;
}

void
t_fill (void *data, size_t size, uint64_t seed)
{
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1, v;
  uint8_t *d = data;
  size_t i;

  for (i = 0; i + 8 <= size; i += 8) {
    v = next_rand (&s);
    memcpy (d + i, &v, 8);
  }
  v = next_rand (&s);
  memcpy (d + i, &v, size - i);
}

int
t_check_fill (const void *data, size_t size, uint64_t seed)
{
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1, v;
  const uint8_t *d = data;
  size_t i;

  for (i = 0; i + 8 <= size; i += 8) {
    v = next_rand (&s);
    if (memcmp (d + i, &v, 8) != 0)
      return 0;
  }
  v = next_rand (&s);
  return memcmp (d + i, &v, size - i) == 0;
}

/* ---- producer with counting callbacks ---- */

static void
cb_released (void *user_data, void *token)
{
  t_producer *tp = user_data;

  atomic_fetch_add (&tp->released, 1);
}

static void
cb_connected (void *user_data, const pf_client_info * info)
{
  t_producer *tp = user_data;

  tp->last_pid = info->pid;
  atomic_fetch_add (&tp->connected, 1);
}

static void
cb_disconnected (void *user_data, const pf_client_info * info)
{
  t_producer *tp = user_data;

  /* a slot per disconnection: the case reads the reason of one while
   * the next is written (ThreadSanitizer, issue 31: the hang-up a case
   * causes after its read synchronizes through the kernel only) */
  char *slot = tp->reasons[atomic_load (&tp->disconnected) % 8];

  tp->last_error = info->error;
  snprintf (slot, sizeof (tp->reasons[0]), "%s", info->reason);
  atomic_store (&tp->last_reason, slot);
  atomic_fetch_add (&tp->disconnected, 1);
}

static void
cb_event (void *user_data, const pf_client_event * e)
{
  t_producer *tp = user_data;

  tp->last_event = *e;
  if (e->type == PF_CLIENT_EVENT_DROPPED)
    atomic_fetch_add (&tp->events_dropped, e->dropped);
  if (e->type > 0 && e->type < 5)
    atomic_fetch_add (&tp->events[e->type], 1);
}

int
t_producer_start_config (t_producer * tp, const char *path,
    unsigned int max_frames, const pf_producer_config * base)
{
  pf_producer_config cfg;

  memset (&cfg, 0, sizeof (cfg));
  if (base)
    cfg = *base;
  cfg.socket_path = path;
  cfg.perms = 0600;
  cfg.max_client_frames = max_frames;
  cfg.callbacks.frame_released = cb_released;
  cfg.callbacks.client_connected = cb_connected;
  cfg.callbacks.client_disconnected = cb_disconnected;
  cfg.callbacks.client_event = cb_event;
  cfg.callbacks.user_data = tp;
  memset (tp, 0, sizeof (*tp));
  tp->last_reason = tp->reasons[0];
  return pf_producer_new (&cfg, &tp->p);
}

int
t_producer_start (t_producer * tp, const char *path, unsigned int max_frames)
{
  return t_producer_start_config (tp, path, max_frames, NULL);
}

void
t_producer_stop (t_producer * tp)
{
  if (tp->p) {
    pf_producer_close (tp->p);
    pf_producer_unref (tp->p);
    tp->p = NULL;
  }
}

void
t_finish (t_producer * tp, pf_segment * seg, int fds0)
{
  int fds;

  t_producer_stop (tp);
  if (seg)
    pf_segment_unref (seg);
  fds = t_count_fds ();
  CHECK_MSG (fds == fds0, "%d fds open at the end of the case, %d at its "
      "start", fds, fds0);
}

pf_consumer *
t_connect (const pf_consumer_options * opts)
{
  pf_consumer *c = NULL;
  int res = pf_consumer_connect_with (t_path ("sock"), 5000, -1, opts, &c);

  CHECK_MSG (res == 0, "connect to %s: %d", t_path ("sock"), res);
  return c;
}

void
t_frame_init (pf_producer_frame * f, pf_segment * seg, uint64_t offset,
    uint64_t size, uint64_t seed)
{
  memset (f, 0, sizeof (*f));
  t_fill ((uint8_t *) pf_segment_get_base (seg) + offset, size, seed);
  f->n_chunks = 1;
  f->chunks[0].segment_id = pf_segment_get_id (seg);
  f->chunks[0].offset = offset;
  f->chunks[0].size = size;
  f->pts = f->dts = f->duration = f->clock_pts = PF_TIME_NONE;
  f->offset = f->offset_end = UINT64_MAX;
}

int
t_publish (t_producer * tp, pf_segment * seg, uint64_t offset, uint64_t size,
    uint64_t seed)
{
  pf_producer_frame f;

  t_frame_init (&f, seg, offset, size, seed);
  f.pts = seed * 1000;
  f.offset = seed;
  return pf_producer_publish (tp->p, &f, &seg, (void *) (uintptr_t) seed);
}

/* ---- runner ---- */

static int n_skipped;

static int
run_case (const t_case * c)
{
  pid_t pid;
  int status;

  if (pf_test_make_tmpdir (dir, sizeof (dir), "pf-test") < 0) {
    perror ("mkdtemp");
    return 1;
  }
  fflush (stdout);
  pid = fork ();
  if (pid == 0) {
    alarm (100);
    signal (SIGPIPE, SIG_DFL);
    c->func ();
    pf_test_kill_children ();
    fflush (stdout);
    _exit (0);
  }
  while (waitpid (pid, &status, 0) < 0 && errno == EINTR);
  pf_test_remove_tree (dir);
  if (WIFEXITED (status) && WEXITSTATUS (status) == 0) {
    printf ("ok   %s\n", c->name);
    return 0;
  }
  if (WIFEXITED (status) && WEXITSTATUS (status) == SKIP_STATUS) {
    printf ("skip %s\n", c->name);
    n_skipped++;
    return 0;
  }
  if (WIFSIGNALED (status))
    printf ("FAIL %s (signal %d)\n", c->name, WTERMSIG (status));
  else
    printf ("FAIL %s (exit %d)\n", c->name, WEXITSTATUS (status));
  return 1;
}

int
t_main (int argc, char **argv, const t_case * cases)
{
  const t_case *c;
  int failed = 0, ran = 0, i;

  setvbuf (stdout, NULL, _IOLBF, 0);
  pf_test_set_fail_handler (t_fail);
  for (c = cases; c->name != NULL; c++) {
    if (argc > 1) {
      for (i = 1; i < argc; i++)
        if (strcmp (argv[i], c->name) == 0)
          break;
      if (i == argc)
        continue;
    }
    failed += run_case (c);
    ran++;
  }
  printf ("%d/%d passed, %d skipped\n", ran - failed - n_skipped, ran,
      n_skipped);
  return failed || ran == 0 ? 1 : 0;
}

int
t_slow_factor (void)
{
  const char *pre = getenv ("LD_PRELOAD");

  return pre != NULL && strstr (pre, "vgpreload") != NULL ? 10 : 1;
}

void
t_put32 (uint8_t * b, size_t off, uint32_t v)
{
  memcpy (b + off, &v, 4);
}

uint32_t
t_get32 (const uint8_t * b, size_t off)
{
  uint32_t v;

  memcpy (&v, b + off, 4);
  return v;
}

ssize_t
t_raw_recv (int fd, uint8_t * buf, size_t cap, int *fds, int max_fds,
    int *n_fds)
{
  char cbuf[CMSG_SPACE (sizeof (int) * 16)];
  struct iovec iov = {.iov_base = buf,.iov_len = cap };
  struct msghdr mh = {.msg_iov = &iov,.msg_iovlen = 1,
    .msg_control = cbuf,.msg_controllen = sizeof (cbuf)
  };
  struct cmsghdr *cm;
  ssize_t n = recvmsg (fd, &mh, MSG_CMSG_CLOEXEC);

  *n_fds = 0;
  for (cm = CMSG_FIRSTHDR (&mh); n >= 0 && cm; cm = CMSG_NXTHDR (&mh, cm)) {
    int k = (int) ((cm->cmsg_len - CMSG_LEN (0)) / sizeof (int)), i, got;

    if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
      continue;
    for (i = 0; i < k; i++) {
      memcpy (&got, CMSG_DATA (cm) + sizeof (int) * (size_t) i, sizeof (int));
      if (*n_fds < max_fds)
        fds[(*n_fds)++] = got;
      else
        close (got);
    }
  }
  return n;
}
