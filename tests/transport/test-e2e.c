/* pinnedflow transport: end-to-end producer/consumer tests
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "harness.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SEG_SIZE (1024 * 1024)
#define FRAME_SIZE (200 * 1024 + 13)

/* Receives frames and checks their bytes; returns the number of good
 * frames, or -1 on a bad one. Stops after @n frames or at EOS/error. */
static int
consume (pf_consumer * c, int n, int release, int *caps_seen)
{
  pf_event ev;
  int got = 0, res;

  while (got < n) {
    res = pf_consumer_receive (c, 30000, &ev);
    if (res <= 0) {
      fprintf (stderr, "receive: %d (%s)\n", res, pf_consumer_get_error (c));
      return got;
    }
    if (ev.type == PF_EVENT_CAPS) {
      if (caps_seen)
        (*caps_seen)++;
      continue;
    }
    if (ev.type == PF_EVENT_EOS)
      break;
    if (ev.frame.n_chunks != 1 || ev.frame.chunks[0].size != FRAME_SIZE ||
        !t_check_fill (ev.data[0], ev.frame.chunks[0].size, ev.frame.offset)) {
      fprintf (stderr, "frame %" PRIu64 " corrupt\n", ev.frame.seq);
      pf_consumer_event_clear (&ev);
      return -1;
    }
    if (release && pf_consumer_release (c, ev.frame.seq) != 0)
      return -1;
    pf_consumer_event_clear (&ev);
    got++;
  }
  return got;
}

static void
test_in_process (void)
{
  int fds0 = t_count_fds (), segs0 = pf_segment_count_live ();
  t_producer tp;
  pf_consumer *c;
  pf_segment *seg;
  pf_event ev;
  int i, caps = 0;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 4), ==, 0);
  CHECK_INT (pf_producer_set_caps (tp.p, "video/x-raw,format=RGBA"), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * 4, 0, &seg), ==, 0);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &c), ==, 0);
  CHECK_INT (pf_consumer_get_max_held (c), ==, 4);
  CHECK (pf_consumer_get_session_id (c) != 0);
  {
    /* the path under test (meson runs this twice): with the frame ring,
     * what the consumer is polled through is its epoll fd, without it the
     * socket itself (PINNEDFLOW_FRAME_RING=0, the e2e-socket run) */
    const char *ring = getenv ("PINNEDFLOW_FRAME_RING");
    struct stat st;

    CHECK_INT (fstat (pf_consumer_get_fd (c), &st), ==, 0);
    CHECK_INT (S_ISSOCK (st.st_mode), ==, ring != NULL && strcmp (ring,
            "0") == 0);
  }
  CHECK_INT (pf_producer_get_n_clients (tp.p), ==, 1);

  /* First the caps. */
  CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_CAPS);
  CHECK (strcmp (ev.caps, "video/x-raw,format=RGBA") == 0);

  CHECK_INT (tp.disconnected, ==, 0);
  for (i = 1; i <= 200; i++) {
    /* Releases travel back asynchronously: wait for the producer to see
     * them, or it would (rightly) skip frames beyond the limit. */
    T_WAIT_RELEASED (&tp, tp.released >= i - 4);
    CHECK_INT (t_publish (&tp, seg, (uint64_t) (i % 4) * SEG_SIZE, FRAME_SIZE,
            i), ==, 1);
    CHECK_INT (consume (c, 1, 1, &caps), ==, 1);
  }
  WAIT_FOR (tp.released == 200);
  CHECK_INT (pf_consumer_get_held (c), ==, 0);

  pf_consumer_unref (c);
  pf_segment_unref (seg);
  t_producer_stop (&tp);
  CHECK_INT (tp.connected, ==, 1);
  CHECK_INT (tp.disconnected, ==, 1);
  CHECK_INT (pf_segment_count_live (), ==, segs0);
  CHECK_INT (t_count_fds (), ==, fds0);
}


/* ---- multi-process ---- */

struct child_args
{
  const char *path;
  int n_frames;
  int release;
  int ready_fd;                 /* written once n_frames are in, or -1 */
};

/* A consumer process: connects, expects caps first, checks every frame's
 * bytes, releases (or holds) them, then waits for EOS. Exit 0 if all good. */
static int
child_consumer (void *data)
{
  struct child_args *a = data;
  pf_consumer *c;
  pf_event ev;
  int got, caps = 0, res;

  if (pf_consumer_connect (a->path, 20000, &c) != 0) {
    fprintf (stderr, "child: connect: %s\n", pf_consumer_connect_error ());
    return 10;
  }
  res = pf_consumer_receive (c, 30000, &ev);
  if (res != 1 || ev.type != PF_EVENT_CAPS)
    return 11;
  got = consume (c, a->n_frames, a->release, &caps);
  if (got != a->n_frames)
    return 12;
  if (a->ready_fd >= 0) {
    char x = 'r';
    if (write (a->ready_fd, &x, 1) != 1)
      return 13;
    for (;;)
      pause ();
  }
  /* EOS next. */
  res = pf_consumer_receive (c, 30000, &ev);
  if (res != 1 || ev.type != PF_EVENT_EOS)
    return 14;
  pf_consumer_unref (c);
  return 0;
}

static void
test_three_processes (void)
{
  int fds0 = t_count_fds (), segs0 = pf_segment_count_live ();
  struct child_args a = { t_path ("sock"), 150, 1, -1 };
  pf_client_stats st[4];
  t_producer tp;
  pf_segment *seg;
  pid_t pids[3];
  int i, k, n;

  CHECK_INT (t_producer_start (&tp, a.path, 4), ==, 0);
  CHECK_INT (pf_producer_set_caps (tp.p, "video/x-raw"), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * 4, PF_SEGMENT_FLAG_SEAL_WRITERS,
          &seg), ==, 0);
  for (k = 0; k < 3; k++)
    pids[k] = t_spawn (child_consumer, &a);
  WAIT_FOR (pf_producer_get_n_clients (tp.p) == 3);

  for (i = 1; i <= a.n_frames; i++) {
    T_WAIT_RELEASED (&tp, tp.released >= i - 4);
    CHECK_INT (t_publish (&tp, seg, (uint64_t) (i % 4) * SEG_SIZE,
            FRAME_SIZE, i), ==, 3);
  }
  WAIT_FOR (tp.released == a.n_frames);
  n = pf_producer_get_client_stats (tp.p, st, 4);
  CHECK_INT (n, ==, 3);
  for (k = 0; k < n; k++) {
    CHECK_INT (st[k].frames_sent, ==, a.n_frames);
    CHECK_INT (st[k].frames_released, ==, a.n_frames);
    CHECK_INT (st[k].frames_dropped, ==, 0);
    CHECK_INT (st[k].bytes_sent, ==, (uint64_t) a.n_frames * FRAME_SIZE);
    CHECK_INT (st[k].held, ==, 0);
    CHECK (st[k].pid == pids[0] || st[k].pid == pids[1] ||
        st[k].pid == pids[2]);
    CHECK_INT (st[k].uid, ==, getuid ());
  }
  CHECK_INT (pf_producer_send_eos (tp.p), ==, 0);
  for (k = 0; k < 3; k++)
    CHECK_INT (t_wait (pids[k]), ==, 0);
  WAIT_FOR (tp.disconnected == 3);
  CHECK_INT (tp.last_error, ==, 0);
  CHECK_INT (pf_producer_get_unsent (tp.p), ==, 0);

  t_producer_stop (&tp);
  pf_segment_unref (seg);
  CHECK_INT (pf_segment_count_live (), ==, segs0);
  CHECK_INT (t_count_fds (), ==, fds0);
}

static void
test_client_sigkill (void)
{
  int fds0 = t_count_fds ();
  struct child_args a = { t_path ("sock"), 3, 0, -1 };
  pf_client_stats st;
  t_producer tp;
  pf_segment *seg;
  int pipefd[2], i;
  pid_t pid;
  char x;

  CHECK_INT (pipe (pipefd), ==, 0);
  a.ready_fd = pipefd[1];
  CHECK_INT (t_producer_start (&tp, a.path, 8), ==, 0);
  CHECK_INT (pf_producer_set_caps (tp.p, "video/x-raw"), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * 4, 0, &seg), ==, 0);
  pid = t_spawn (child_consumer, &a);
  WAIT_FOR (pf_producer_get_n_clients (tp.p) == 1);
  WAIT_FOR (tp.connected == 1);
  CHECK_INT (tp.last_pid, ==, pid);
  for (i = 1; i <= 3; i++)
    CHECK_INT (t_publish (&tp, seg, (uint64_t) i * SEG_SIZE, FRAME_SIZE, i),
        ==, 1);
  /* The child holds all three and says so. */
  CHECK_INT (read (pipefd[0], &x, 1), ==, 1);
  CHECK_INT (pf_producer_get_client_stats (tp.p, &st, 1), ==, 1);
  CHECK_INT (st.held, ==, 3);
  CHECK_INT (st.pid, ==, pid);
  CHECK_INT (tp.released, ==, 0);

  kill (pid, SIGKILL);
  CHECK_INT (t_wait (pid), ==, 128 + SIGKILL);
  /* Everything it held comes back at once. */
  WAIT_FOR (tp.released == 3);
  WAIT_FOR (tp.disconnected == 1);
  CHECK_INT (pf_producer_get_n_clients (tp.p), ==, 0);

  t_producer_stop (&tp);
  pf_segment_unref (seg);
  close (pipefd[0]);
  close (pipefd[1]);
  CHECK_INT (t_count_fds (), ==, fds0);
}

static int
child_producer (void *data)
{
  struct child_args *a = data;
  t_producer tp;
  pf_segment *seg;
  int i;

  if (t_producer_start (&tp, a->path, 8) != 0)
    return 20;
  pf_producer_set_caps (tp.p, "video/x-raw");
  if (pf_segment_new ("t", SEG_SIZE * 4, PF_SEGMENT_FLAG_SEAL_WRITERS,
          &seg) != 0)
    return 21;
  while (pf_producer_get_n_clients (tp.p) == 0)
    t_sleep_ms (1);
  for (i = 1; i <= a->n_frames; i++)
    if (t_publish (&tp, seg, (uint64_t) i * SEG_SIZE, FRAME_SIZE, i) != 1)
      return 22;
  for (;;)
    pause ();
}

static void
test_producer_sigkill (void)
{
  int fds0 = t_count_fds (), segs0 = pf_segment_count_live ();
  struct child_args a = { t_path ("sock"), 3, 0, -1 };
  pf_event ev[3], e;
  pf_consumer *c;
  pid_t pid;
  int i;

  pid = t_spawn (child_producer, &a);
  /* The producer may not be up yet: connect retries. */
  CHECK_INT (pf_consumer_connect (a.path, 20000, &c), ==, 0);
  CHECK_INT (pf_consumer_receive (c, 30000, &e), ==, 1);
  CHECK_INT (e.type, ==, PF_EVENT_CAPS);
  for (i = 0; i < 3; i++) {
    CHECK_INT (pf_consumer_receive (c, 30000, &ev[i]), ==, 1);
    CHECK_INT (ev[i].type, ==, PF_EVENT_FRAME);
    CHECK (ev[i].segments[0] != NULL);
    CHECK (pf_segment_get_state (ev[i].segments[0]) &
        PF_SEGMENT_STATE_READONLY);
    CHECK (pf_segment_get_state (ev[i].segments[0]) &
        PF_SEGMENT_STATE_WRITE_SEALED);
  }
  kill (pid, SIGKILL);
  CHECK_INT (t_wait (pid), ==, 128 + SIGKILL);

  CHECK_INT (pf_consumer_receive (c, 30000, &e), ==, -EPIPE);
  CHECK (strlen (pf_consumer_get_error (c)) > 0);
  /* Sticky. */
  CHECK_INT (pf_consumer_receive (c, 0, &e), ==, -EPIPE);
  /* What we hold is still mapped and intact. */
  for (i = 0; i < 3; i++) {
    CHECK (t_check_fill (ev[i].data[0], FRAME_SIZE, ev[i].frame.offset));
    CHECK_INT (pf_consumer_release (c, ev[i].frame.seq), ==, -EPIPE);
  }
  CHECK_INT (pf_consumer_get_held (c), ==, 0);
  pf_consumer_unref (c);
  /* Even after the consumer is gone. */
  for (i = 0; i < 3; i++) {
    CHECK (t_check_fill (ev[i].data[0], FRAME_SIZE, ev[i].frame.offset));
    pf_consumer_event_clear (&ev[i]);
  }
  CHECK_INT (pf_segment_count_live (), ==, segs0);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* ---- in-process behaviour ---- */

static void
test_late_client (void)
{
  int fds0 = t_count_fds (), segs0 = pf_segment_count_live ();
  t_producer tp;
  pf_consumer *c;
  pf_segment *seg[3];
  pf_event ev;
  int i;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 4), ==, 0);
  for (i = 0; i < 3; i++)
    CHECK_INT (pf_segment_new ("t", SEG_SIZE, 0, &seg[i]), ==, 0);
  CHECK_INT (pf_producer_set_caps (tp.p, "a/b"), ==, 0);
  CHECK_INT (pf_producer_set_caps (tp.p, "video/x-raw,width=2"), ==, 0);
  /* Nobody listens: frames are counted as unsent; segments learned. */
  for (i = 0; i < 3; i++)
    CHECK_INT (t_publish (&tp, seg[i], 0, FRAME_SIZE, i + 1), ==, 0);
  CHECK_INT (pf_producer_get_unsent (tp.p), ==, 3);
  CHECK_INT (tp.released, ==, 0);
  /* One segment dies before anyone connects: not announced. */
  pf_segment_unref (seg[2]);

  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &c), ==, 0);
  CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_CAPS);
  CHECK_INT (ev.caps_seq, ==, 2);
  CHECK (strcmp (ev.caps, "video/x-raw,width=2") == 0);
  /* Both live segments were imported before the caps. */
  CHECK_INT (pf_segment_count_live (), ==, segs0 + 2 + 2);

  CHECK_INT (t_publish (&tp, seg[1], 4096, FRAME_SIZE, 77), ==, 1);
  CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
  CHECK_INT (ev.frame.seq, ==, 4);
  CHECK_INT (ev.frame.caps_seq, ==, 2);
  CHECK (t_check_fill (ev.data[0], FRAME_SIZE, 77));
  CHECK_INT (pf_consumer_release (c, 4), ==, 0);
  CHECK_INT (pf_consumer_release (c, 4), ==, -ENOENT);
  pf_consumer_event_clear (&ev);
  WAIT_FOR (tp.released == 1);

  /* A segment dying on the producer side is removed from the consumer. */
  pf_segment_unref (seg[0]);
  CHECK_INT (pf_consumer_receive (c, 200, &ev), ==, 0);
  CHECK_INT (pf_segment_count_live (), ==, segs0 + 1 + 1);

  pf_consumer_unref (c);
  t_producer_stop (&tp);
  pf_segment_unref (seg[1]);
  CHECK_INT (pf_segment_count_live (), ==, segs0);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* The producer's count of frames client @id holds. */
static unsigned int
client_held (pf_producer * p, uint32_t id)
{
  pf_client_stats st[8];
  unsigned int i, n = pf_producer_get_client_stats (p, st, 8);

  for (i = 0; i < n && i < 8; i++)
    if (st[i].client_id == id)
      return st[i].held;
  return 0;
}

static void
test_limit_drops (void)
{
  int fds0 = t_count_fds ();
  t_producer tp;
  pf_consumer *slow, *fast;
  pf_client_stats st[2];
  pf_segment *seg, *seg2;
  pf_event ev;
  int i, caps = 0;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 4), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * 4, 0, &seg), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * 4, 0, &seg2), ==, 0);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &slow), ==, 0);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &fast), ==, 0);
  for (i = 1; i <= 300; i++) {
    /* Wait until the producer has seen the fast consumer's releases
     * (client 2: consumers are accepted in connection order). */
    WAIT_FOR (client_held (tp.p, 2) < 4);
    /* Frames 1-4 (held by the slow consumer) get slots of their own, like
     * a buffer pool would keep them; the others rotate in seg2. */
    if (i <= 4)
      CHECK_INT (t_publish (&tp, seg, (uint64_t) (i - 1) * SEG_SIZE,
              FRAME_SIZE, i), ==, 2);
    else
      CHECK_INT (t_publish (&tp, seg2, (uint64_t) (i % 4) * SEG_SIZE,
              FRAME_SIZE, i), ==, 1);
    CHECK_INT (consume (fast, 1, 1, &caps), ==, 1);
  }
  /* The slow one got its 4 frames and nothing more; the others were
   * counted as drops for it alone. */
  CHECK_INT (pf_producer_get_client_stats (tp.p, st, 2), ==, 2);
  for (i = 0; i < 2; i++) {
    if (st[i].frames_sent == 4) {
      CHECK_INT (st[i].frames_dropped, ==, 296);
      CHECK_INT (st[i].held, ==, 4);
    } else {
      CHECK_INT (st[i].frames_sent, ==, 300);
      CHECK_INT (st[i].frames_dropped, ==, 0);
    }
  }
  CHECK (st[0].frames_sent == 4 || st[1].frames_sent == 4);
  /* Its frames are still there for it. */
  CHECK_INT (pf_consumer_receive (slow, 30000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
  CHECK_INT (ev.frame.seq, ==, 1);
  CHECK (t_check_fill (ev.data[0], FRAME_SIZE, 1));
  pf_consumer_event_clear (&ev);
  WAIT_FOR (tp.released == 296);
  /* The slow consumer leaves without releasing (and with frames unread):
   * its 4 come back, and that is a hang-up, not an error. */
  pf_consumer_unref (slow);
  WAIT_FOR (tp.released == 300);
  WAIT_FOR (tp.disconnected == 1);
  CHECK_INT (tp.last_error, ==, 0);
  CHECK (strstr (tp.last_reason, "hung up") != NULL);

  pf_consumer_unref (fast);
  t_producer_stop (&tp);
  pf_segment_unref (seg);
  pf_segment_unref (seg2);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* A newest-frame consumer that never reads, with a limit too high to
 * matter: its socket fills up; publish neither blocks nor stops serving the
 * other consumer, and its drops are counted as "socket full". */
static void
test_full_socket (void)
{
  int fds0 = t_count_fds ();
  t_producer tp;
  pf_consumer *slow, *fast;
  pf_client_stats st[2];
  pf_segment *seg;
  pf_consumer_options leaky = {.delivery = PF_DELIVERY_NEWEST_FRAME };
  int i, caps = 0, n = 3000;
  uint64_t slow_sent = 0, slow_dropped = 0;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 100000), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE, 0, &seg), ==, 0);
  CHECK_INT (pf_consumer_connect_with (t_path ("sock"), 5000, -1, &leaky,
          &slow), ==, 0);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &fast), ==, 0);
  for (i = 1; i <= n; i++) {
    /* (The slow consumer never looks at its frames: one slot will do.) */
    CHECK_INT (t_publish (&tp, seg, 0, FRAME_SIZE, i), >=, 1);
    CHECK_INT (consume (fast, 1, 1, &caps), ==, 1);
  }
  CHECK_INT (pf_producer_get_client_stats (tp.p, st, 2), ==, 2);
  for (i = 0; i < 2; i++) {
    CHECK_INT (st[i].frames_sent + st[i].frames_dropped, ==, n);
    if (st[i].frames_dropped > 0) {
      CHECK_INT (st[i].delivery, ==, PF_DELIVERY_NEWEST_FRAME);
      CHECK_INT (st[i].dropped_socket, ==, st[i].frames_dropped);
      slow_sent = st[i].frames_sent;
      slow_dropped = st[i].frames_dropped;
    }
  }
  CHECK (slow_dropped > 0);
  CHECK (slow_sent > 0);
  t_producer_stop (&tp);
  /* Close gives back everything the slow one held. */
  CHECK_INT (tp.released, ==, n);
  pf_consumer_unref (slow);
  pf_consumer_unref (fast);
  pf_segment_unref (seg);
  CHECK_INT (t_count_fds (), ==, fds0);
}

static void
test_close_with_held (void)
{
  int fds0 = t_count_fds (), segs0 = pf_segment_count_live ();
  t_producer tp;
  pf_consumer *c;
  pf_segment *seg;
  pf_event ev[3], e;
  int i;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 8), ==, 0);
  CHECK_INT (pf_segment_new ("t", SEG_SIZE * 4, 0, &seg), ==, 0);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &c), ==, 0);
  for (i = 0; i < 3; i++) {
    CHECK_INT (t_publish (&tp, seg, (uint64_t) i * SEG_SIZE, FRAME_SIZE, i),
        ==, 1);
    CHECK_INT (pf_consumer_receive (c, 30000, &ev[i]), ==, 1);
    CHECK_INT (ev[i].type, ==, PF_EVENT_FRAME);
  }
  CHECK_INT (pf_producer_send_eos (tp.p), ==, 0);
  pf_producer_close (tp.p);
  pf_producer_close (tp.p);     /* idempotent */
  CHECK_INT (tp.released, ==, 3);
  /* A closed producer refuses everything and keeps no new fd. */
  {
    pf_segment *late;
    int fds1;

    CHECK_INT (pf_segment_new ("late", 4096, 0, &late), ==, 0);
    fds1 = t_count_fds ();
    CHECK_INT (t_publish (&tp, late, 0, 100, 1), ==, -EPIPE);
    CHECK_INT (t_publish (&tp, seg, 3 * SEG_SIZE, 100, 1), ==, -EPIPE);
    CHECK_INT (t_count_fds (), ==, fds1);
    CHECK_INT (pf_producer_set_caps (tp.p, "a/b"), ==, -EPIPE);
    CHECK_INT (pf_producer_send_eos (tp.p), ==, -EPIPE);
    CHECK_INT (pf_producer_get_n_clients (tp.p), ==, 0);
    pf_segment_unref (late);
  }
  t_producer_stop (&tp);
  CHECK_INT (tp.released, ==, 3);
  CHECK_INT (tp.disconnected, ==, 1);
  CHECK (strstr (tp.last_reason, "closed") != NULL);
  /* The socket file is gone. */
  CHECK (access (t_path ("sock"), F_OK) != 0);
  /* Queued EOS still arrives, then the hang-up. */
  CHECK_INT (pf_consumer_receive (c, 30000, &e), ==, 1);
  CHECK_INT (e.type, ==, PF_EVENT_EOS);
  CHECK_INT (pf_consumer_receive (c, 30000, &e), ==, -EPIPE);
  for (i = 0; i < 3; i++) {
    CHECK (t_check_fill (ev[i].data[0], FRAME_SIZE, i));
    CHECK_INT (pf_consumer_release (c, ev[i].frame.seq), ==, -EPIPE);
    pf_consumer_event_clear (&ev[i]);
  }
  pf_consumer_unref (c);
  pf_segment_unref (seg);
  CHECK_INT (pf_segment_count_live (), ==, segs0);
  CHECK_INT (t_count_fds (), ==, fds0);
}

static void
test_multi_chunk_video (void)
{
  int fds0 = t_count_fds ();
  t_producer tp;
  pf_consumer *c;
  pf_segment *seg[2];
  pf_producer_frame f;
  pf_event ev;

  CHECK_INT (t_producer_start (&tp, t_path ("sock"), 2), ==, 0);
  CHECK_INT (pf_segment_new ("a", 65536, 0, &seg[0]), ==, 0);
  CHECK_INT (pf_segment_new ("b", 65536, 0, &seg[1]), ==, 0);
  CHECK_INT (pf_consumer_connect (t_path ("sock"), 5000, &c), ==, 0);
  memset (&f, 0, sizeof (f));
  f.n_chunks = 2;
  f.chunks[0].segment_id = pf_segment_get_id (seg[0]);
  f.chunks[0].offset = 100;
  f.chunks[0].size = 640 * 48;
  f.chunks[1].segment_id = pf_segment_get_id (seg[1]);
  f.chunks[1].offset = 4096;
  f.chunks[1].size = 640 * 24;
  f.meta_flags = PF_FRAME_HAS_VIDEO_META;
  f.width = 640;
  f.height = 48;
  f.n_planes = 2;
  f.plane_offset[1] = 640 * 48;
  f.plane_stride[0] = f.plane_stride[1] = 640;
  f.pts = 42;
  f.clock_pts = 4242;
  f.buffer_flags = 0x40;
  t_fill ((uint8_t *) pf_segment_get_base (seg[0]) + 100, 640 * 48, 1);
  t_fill ((uint8_t *) pf_segment_get_base (seg[1]) + 4096, 640 * 24, 2);
  CHECK_INT (pf_producer_publish (tp.p, &f, seg, NULL), ==, 1);
  CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, 1);
  CHECK_INT (ev.type, ==, PF_EVENT_FRAME);
  CHECK_INT (ev.frame.n_chunks, ==, 2);
  CHECK_INT (ev.frame.width, ==, 640);
  CHECK_INT (ev.frame.plane_offset[1], ==, 640 * 48);
  CHECK_INT (ev.frame.plane_stride[1], ==, 640);
  CHECK_INT (ev.frame.pts, ==, 42);
  CHECK_INT (ev.frame.clock_pts, ==, 4242);
  CHECK_INT (ev.frame.buffer_flags, ==, 0x40);
  CHECK (ev.frame.send_time > 0 && ev.frame.send_time <= pf_monotonic_ns ());
  CHECK (t_check_fill (ev.data[0], 640 * 48, 1));
  CHECK (t_check_fill (ev.data[1], 640 * 24, 2));
  CHECK_INT (pf_consumer_release (c, ev.frame.seq), ==, 0);
  pf_consumer_event_clear (&ev);

  /* Invalid frames are refused before anything is sent, the producer
   * saying why (a consumer's words for the FRAME's rules). */
  CHECK_INT (pf_producer_get_error (tp.p)[0], ==, '\0');
  f.plane_offset[1] = 640 * 72;
  CHECK_INT (pf_producer_publish (tp.p, &f, seg, NULL), ==, -EINVAL);
  CHECK_MSG (strstr (pf_producer_get_error (tp.p), "plane 1 offset 46080 "
          "outside the frame") != NULL, "%s", pf_producer_get_error (tp.p));
  f.plane_offset[1] = 0;
  f.chunks[1].offset = 65536 - 10;
  CHECK_INT (pf_producer_publish (tp.p, &f, seg, NULL), ==, -EINVAL);
  CHECK_MSG (strstr (pf_producer_get_error (tp.p), "chunk 1 (offset 65526")
      != NULL, "%s", pf_producer_get_error (tp.p));
  f.chunks[1].offset = 0;
  f.chunks[1].segment_id = pf_segment_get_id (seg[0]);
  CHECK_INT (pf_producer_publish (tp.p, &f, seg, NULL), ==, -EINVAL);
  CHECK_MSG (strstr (pf_producer_get_error (tp.p), "not the segment given")
      != NULL, "%s", pf_producer_get_error (tp.p));
  f.n_chunks = 0;
  CHECK_INT (pf_producer_publish (tp.p, &f, seg, NULL), ==, -EINVAL);
  CHECK_INT (pf_producer_set_caps (tp.p, ""), ==, -EINVAL);

  pf_consumer_unref (c);
  t_producer_stop (&tp);
  pf_segment_unref (seg[0]);
  pf_segment_unref (seg[1]);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* ---- threads: publish from two threads, release from another thread ---- */

#define N_SLOTS 8
#define SLOT_SIZE 65536
#define PER_THREAD 600

struct pub_thread
{
  t_producer *tp;
  pf_segment *seg;
  atomic_int busy[N_SLOTS];
  int index;
  int reached;
  int unsent;                   /* publishes no client took (all at limit) */
};

static struct pub_thread pubs[2];

static void
stress_released (void *user_data, void *token)
{
  uintptr_t t = (uintptr_t) token;
  t_producer *tp = user_data;

  atomic_store (&pubs[t / N_SLOTS].busy[t % N_SLOTS], 0);
  atomic_fetch_add (&tp->released, 1);
}

static void *
publisher (void *data)
{
  struct pub_thread *pt = data;
  int i, slot, res;
  pf_producer_frame f;

  for (i = 0; i < PER_THREAD; i++) {
    slot = i % N_SLOTS;
    /* Never rewrite a frame somebody holds. */
    while (atomic_load (&pt->busy[slot]))
      t_sleep_ms (1);
    t_fill ((uint8_t *) pf_segment_get_base (pt->seg) + slot * SLOT_SIZE,
        SLOT_SIZE, (uint64_t) pt->index << 32 | (uint64_t) i);
    memset (&f, 0, sizeof (f));
    f.n_chunks = 1;
    f.chunks[0].segment_id = pf_segment_get_id (pt->seg);
    f.chunks[0].offset = (uint64_t) slot *SLOT_SIZE;
    f.chunks[0].size = SLOT_SIZE;
    f.offset = (uint64_t) pt->index << 32 | (uint64_t) i;
    /* Every frame reaches a client in the end: when both are at their
     * limit (the other thread filled them), publish again a moment later,
     * as a producer with nothing else to do would. How often that happens
     * depends on scheduling, so it is counted, never assumed. */
    for (;;) {
      atomic_store (&pt->busy[slot], 1);
      res = pf_producer_publish (pt->tp->p, &f, &pt->seg,
          (void *) (uintptr_t) (pt->index * N_SLOTS + slot));
      if (res < 0)
        return (void *) 1;
      if (res > 0)
        break;
      atomic_store (&pt->busy[slot], 0);
      pt->unsent++;
      t_sleep_ms (1);
    }
    pt->reached++;
  }
  return NULL;
}

static void *
releaser (void *data)
{
  pf_consumer *c = ((void **) data)[0];
  int fd = (int) (intptr_t) ((void **) data)[1];
  uint64_t seq;

  while (read (fd, &seq, sizeof (seq)) == sizeof (seq))
    if (pf_consumer_release (c, seq) != 0)
      return (void *) 1;
  return NULL;
}

static int
child_stress_consumer (void *data)
{
  pf_consumer *c;
  pf_event ev;
  pthread_t th;
  void *args[2], *ret;
  uint64_t seq;
  int pipefd[2], res, bad = 0;

  if (pf_consumer_connect (data, 20000, &c) != 0 || pipe (pipefd) != 0)
    return 10;
  args[0] = c;
  args[1] = (void *) (intptr_t) pipefd[0];
  pthread_create (&th, NULL, releaser, args);
  for (;;) {
    res = pf_consumer_receive (c, 30000, &ev);
    if (res != 1)
      return 11;
    if (ev.type == PF_EVENT_EOS)
      break;
    if (ev.type != PF_EVENT_FRAME)
      continue;
    if (!t_check_fill (ev.data[0], SLOT_SIZE, ev.frame.offset))
      bad++;
    seq = ev.frame.seq;
    pf_consumer_event_clear (&ev);
    if (write (pipefd[1], &seq, 8) != 8)
      return 12;
  }
  close (pipefd[1]);
  pthread_join (th, &ret);
  pf_consumer_unref (c);
  return bad ? 13 : ret ? 14 : 0;
}

static void
test_threads (void)
{
  int fds0 = t_count_fds ();
  pf_producer_config cfg = {.socket_path = t_path ("sock"),.perms = 0600,
    .max_client_frames = 6,
  };
  t_producer tp;
  pthread_t th[2];
  pid_t pids[2];
  void *ret;
  int k;

  memset (&tp, 0, sizeof (tp));
  memset (pubs, 0, sizeof (pubs));
  cfg.callbacks.frame_released = stress_released;
  cfg.callbacks.user_data = &tp;
  /* Children first (they retry until the producer is up): forking a
   * process that runs threads is best avoided. */
  for (k = 0; k < 2; k++)
    pids[k] = t_spawn (child_stress_consumer, (void *) cfg.socket_path);
  CHECK_INT (pf_producer_new (&cfg, &tp.p), ==, 0);
  WAIT_FOR (pf_producer_get_n_clients (tp.p) == 2);
  for (k = 0; k < 2; k++) {
    pubs[k].tp = &tp;
    pubs[k].index = k;
    CHECK_INT (pf_segment_new ("s", N_SLOTS * SLOT_SIZE, 0, &pubs[k].seg), ==,
        0);
    pthread_create (&th[k], NULL, publisher, &pubs[k]);
  }
  for (k = 0; k < 2; k++) {
    pthread_join (th[k], &ret);
    CHECK (ret == NULL);
    CHECK_INT (pubs[k].reached, ==, PER_THREAD);
  }
  CHECK_INT (pf_producer_send_eos (tp.p), ==, 0);
  for (k = 0; k < 2; k++)
    CHECK_INT (t_wait (pids[k]), ==, 0);
  WAIT_FOR (tp.released == pubs[0].reached + pubs[1].reached);
  CHECK_INT (pf_producer_get_unsent (tp.p), ==,
      pubs[0].unsent + pubs[1].unsent);
  t_producer_stop (&tp);
  for (k = 0; k < 2; k++)
    pf_segment_unref (pubs[k].seg);
  CHECK_INT (t_count_fds (), ==, fds0);
}

/* A callback may close the producer (on the I/O thread) and drop the last
 * reference later from another thread. */
static pf_producer *closing_producer;
static _Atomic int closed_in_callback;

static void
close_on_disconnect (void *user_data, const pf_client_info * info)
{
  pf_producer_close (closing_producer);
  atomic_store (&closed_in_callback, 1);
}

static void
test_close_from_callback (void)
{
  int fds0 = t_count_fds ();
  pf_producer_config cfg = {.socket_path = t_path ("sock"),.perms = 0600,
    .max_client_frames = 2,
  };
  pf_consumer *c;
  pf_segment *seg;
  pf_event ev;

  cfg.callbacks.client_disconnected = close_on_disconnect;
  CHECK_INT (pf_producer_new (&cfg, &closing_producer), ==, 0);
  CHECK_INT (pf_segment_new ("t", 65536, 0, &seg), ==, 0);
  CHECK_INT (pf_consumer_connect (cfg.socket_path, 5000, &c), ==, 0);
  {
    t_producer tp = {.p = closing_producer };
    CHECK_INT (t_publish (&tp, seg, 0, 1000, 1), ==, 1);
  }
  CHECK_INT (pf_consumer_receive (c, 30000, &ev), ==, 1);
  pf_consumer_event_clear (&ev);
  pf_consumer_unref (c);
  WAIT_FOR (closed_in_callback);
  WAIT_FOR (access (cfg.socket_path, F_OK) != 0);
  pf_producer_unref (closing_producer);
  /* The segment still holds a producer reference: the last one goes now. */
  pf_segment_unref (seg);
  WAIT_FOR (t_count_fds () == fds0);
}

static const t_case cases[] = {
  {"in-process", test_in_process},
  {"three-processes", test_three_processes},
  {"client-sigkill", test_client_sigkill},
  {"producer-sigkill", test_producer_sigkill},
  {"late-client", test_late_client},
  {"limit-drops", test_limit_drops},
  {"full-socket", test_full_socket},
  {"close-with-held", test_close_with_held},
  {"multi-chunk-video", test_multi_chunk_video},
  {"threads", test_threads},
  {"close-from-callback", test_close_from_callback},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
