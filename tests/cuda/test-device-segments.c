/* pinnedflow CUDA suite: device segments across processes on the
 * driver-API stand-in's virtual memory (issue 32, items 1, 3, 4, 5;
 * docs/protocol.md 3.11)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   test-device-segments frames|killed|skip|hostile
 *
 * Run with the emulators' environment and PFEMU_VMM=1 (meson: emu_vmm_env;
 * "skip" with PFEMU_DEVICE_COUNT=2). One case per process; exit 0 pass.
 * Consumer processes are forked before anything in the parent touches
 * CUDA (the emulator enforces CUDA's fork rule).
 *
 * frames: a producer writes device frames (cuMemcpyHtoD of a pattern per
 *   frame) into a device segment and publishes them; a consumer process
 *   that asked for device segments imports it once, sees each chunk in the
 *   device domain at its device address, copies it back (cuMemcpyDtoH) and
 *   finds the producer's bytes, and releases; the producer gets
 *   frame_released for every frame. The consumer's mapping is read-only:
 *   a write through it faults (700). Nothing (fd, handle, reservation,
 *   mapping) is left on either side.
 * killed: a consumer SIGKILLed while holding device frames gives them back
 *   (frame_released for each); the producer goes on.
 * skip: host and device frames published alternately to three consumers:
 *   one that did not ask for device segments (gets the host frames; the
 *   producer counts the device ones as frames_skipped_device), one that
 *   asked but imports nothing (no import function: a consumer without
 *   CUDA), one whose process has no device with the segment's UUID: both
 *   get the host frames byte-exact and release the device ones unseen,
 *   counted, with the reason.
 * hostile: a forged producer sends DEVICE_SEGMENT_ADDs with a plain
 *   memfd, a pipe, a real allocation claimed larger than it is, a
 *   granularity that is no power of two or does not divide the size, a
 *   device UUID nobody has, and to a consumer that did not ask: each is
 *   refused (-EPROTO with the reason, or refused and skipped for the
 *   unknown device, its frame released), no fd, handle or mapping left.
 *   The encoder refuses what the parser refuses.
 */
#include <pinnedflow/pf-consumer.h>
#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-protocol-private.h>
#include <pinnedflow/pf-segment.h>

#include "pf-test-util.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((size_t) 1 << 20)
#define FRAME (MIB)
#define SLOTS 4
#define N_FRAMES 12

typedef unsigned long long CUdeviceptr;

static int (*cuInit) (unsigned int);
static int (*cuCtxCreate) (void **, unsigned int, int);
static int (*cuCtxSetCurrent) (void *);
static int (*cuCtxSynchronize) (void);
static int (*cuMemcpyHtoD) (CUdeviceptr, const void *, size_t);
static int (*cuMemcpyDtoH) (void *, CUdeviceptr, size_t);
static long (*emu_query) (const char *);
static void (*emu_reset) (void);

/* The driver stand-in and the emulator's counters; a context on @device
 * made current. Only after any fork. */
static void *
cuda_up (int device)
{
  const char *rt_path = getenv ("GST_PINNEDFLOW_CUDART");
  void *drv = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void *rt = rt_path ? dlopen (rt_path, RTLD_NOW | RTLD_LOCAL) : NULL;
  void *ctx = NULL;

  CHECK_MSG (drv && rt, "cannot load the emulators: %s", dlerror ());
  *(void **) &cuInit = dlsym (drv, "cuInit");
  *(void **) &cuCtxCreate = dlsym (drv, "cuCtxCreate_v2");
  *(void **) &cuCtxSetCurrent = dlsym (drv, "cuCtxSetCurrent");
  *(void **) &cuCtxSynchronize = dlsym (drv, "cuCtxSynchronize");
  *(void **) &cuMemcpyHtoD = dlsym (drv, "cuMemcpyHtoD_v2");
  *(void **) &cuMemcpyDtoH = dlsym (drv, "cuMemcpyDtoH_v2");
  *(void **) &emu_query = dlsym (rt, "pfemu_query");
  *(void **) &emu_reset = dlsym (rt, "pfemu_reset");
  CHECK (cuInit && cuCtxCreate && cuCtxSetCurrent && cuCtxSynchronize &&
      cuMemcpyHtoD && cuMemcpyDtoH && emu_query && emu_reset);
  CHECK_INT (cuInit (0), ==, 0);
  CHECK_INT (cuCtxCreate (&ctx, 0, device), ==, 0);
  return ctx;
}

/* what the emulator's virtual memory holds in this process */
static void
check_vmm (long handles, long reservations, long mappings)
{
  CHECK_INT (pf_device_segment_teardown_errors (), ==, 0);
  CHECK_INT (emu_query ("live.vmm.handles"), ==, handles);
  CHECK_INT (emu_query ("live.vmm.reservations"), ==, reservations);
  CHECK_INT (emu_query ("live.vmm.mappings"), ==, mappings);
}

static void
pattern (uint8_t * buf, size_t n, uint64_t seq)
{
  size_t i;

  for (i = 0; i < n; i++)
    buf[i] = (uint8_t) ((i * 7 + seq * 131 + (i >> 11)) & 0xff);
}

/* ---- the producer side -------------------------------------------------- */

typedef struct
{
  atomic_int released;
  atomic_int connected;
  atomic_int in_use[2 * SLOTS];
} prod_state;

static void
on_released (void *user_data, void *token)
{
  prod_state *st = user_data;
  intptr_t slot = (intptr_t) token - 1;

  atomic_store (&st->in_use[slot], 0);
  atomic_fetch_add (&st->released, 1);
}

static void
on_connected (void *user_data, const pf_client_info * info)
{
  prod_state *st = user_data;

  (void) info;
  atomic_fetch_add (&st->connected, 1);
}

static pf_producer *
producer_up (const char *path, prod_state * st)
{
  pf_producer_config cfg;
  pf_producer *p = NULL;

  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.perms = 0600;
  cfg.max_client_frames = SLOTS;
  cfg.callbacks.frame_released = on_released;
  cfg.callbacks.client_connected = on_connected;
  cfg.callbacks.user_data = st;
  cfg.reliable_timeout_ms = -1;
  CHECK_INT (pf_producer_new (&cfg, &p), ==, 0);
  return p;
}

/* Publishes frame @seq from slot @slot of @seg (a device segment: the
 * pattern copied in with cuMemcpyHtoD; a host one: written in place),
 * once the slot is free and every consumer has room. */
static int
publish (pf_producer * p, prod_state * st, pf_segment * seg, int slot,
    int token_slot, uint64_t seq, uint8_t * buf)
{
  pf_producer_frame f;
  pf_segment *segs[1] = { seg };
  uint64_t off = (uint64_t) slot * FRAME;
  int res;

  WAIT_FOR (atomic_load (&st->in_use[token_slot]) == 0);
  pattern (buf, FRAME, seq);
  if (pf_segment_get_device (seg) != NULL) {
    /* from pageable memory the copy lands later (as on a GPU): a frame is
     * published only once its writes are complete */
    CHECK_INT (cuMemcpyHtoD (pf_device_segment_get_ptr (seg) + off, buf,
            FRAME), ==, 0);
    CHECK_INT (cuCtxSynchronize (), ==, 0);
  } else
    memcpy ((uint8_t *) pf_segment_get_base (seg) + off, buf, FRAME);
  memset (&f, 0, sizeof (f));
  f.n_chunks = 1;
  f.chunks[0].segment_id = pf_segment_get_id (seg);
  f.chunks[0].offset = off;
  f.chunks[0].size = FRAME;
  f.pts = f.dts = f.duration = PF_TIME_NONE;
  f.offset = f.offset_end = UINT64_MAX;
  f.clock_pts = PF_TIME_NONE;
  CHECK_INT (pf_producer_wait_ready (p, 10000), ==, 0);
  atomic_store (&st->in_use[token_slot], 1);
  res = pf_producer_publish (p, &f, segs, (void *) (intptr_t) (token_slot + 1));
  CHECK_MSG (res >= 0, "publish: %d %s", res, pf_producer_get_error (p));
  if (res == 0)
    atomic_store (&st->in_use[token_slot], 0);
  return res;
}

/* ---- the consumer side -------------------------------------------------- */

enum consumer_mode
{
  READ_ALL,                     /* device segments, read every frame */
  HOLD_THEN_WAIT,               /* device segments, hold SLOTS frames, wait to be killed */
  NO_DEVICE,                    /* did not ask for device segments */
  NO_IMPORT,                    /* asked, imports nothing (no CUDA) */
  NO_SUCH_DEVICE,               /* asked, has no device with that UUID */
};

/* A consumer process (forked before CUDA in the parent): exit 0 when all
 * it saw was right. @expect: the frames it must see. @signal_fd: written
 * once when it holds its frames (HOLD_THEN_WAIT). */
static int
consumer_main (const char *path, int mode, int expect, int signal_fd)
{
  pf_consumer_options opts = {.delivery = PF_DELIVERY_EVERY_FRAME };
  uint8_t *want = malloc (FRAME), *got = malloc (FRAME);
  uint64_t last_ptr = 0, skipped = 0;
  uint32_t refused = 0;
  pf_consumer *c = NULL;
  void *ctx = NULL;
  int fds0, seen = 0, held = 0, res;
  pf_event ev, last;

  CHECK (want && got);
  memset (&last, 0, sizeof (last));
  if (mode == NO_SUCH_DEVICE)
    setenv ("PFEMU_DEVICE_COUNT", "1", 1);      /* the producer's is 1 of 2 */
  if (mode == READ_ALL || mode == HOLD_THEN_WAIT || mode == NO_SUCH_DEVICE)
    ctx = cuda_up (0);
  fds0 = pf_test_count_fds ();
  if (mode != NO_DEVICE)
    opts.flags = PF_CONSUMER_OPTION_DEVICE_SEGMENTS;
  CHECK_INT (pf_consumer_connect_with (path, 20000, -1, &opts, &c), ==, 0);
  if (mode != NO_DEVICE && mode != NO_IMPORT)
    CHECK_INT (pf_device_consumer_enable (c), ==, 0);

  memset (&ev, 0, sizeof (ev));
  for (;;) {
    res = pf_consumer_receive (c, 20000, &ev);
    CHECK_MSG (res == 1, "receive: %d %s", res, pf_consumer_get_error (c));
    if (ev.type == PF_EVENT_EOS)
      break;
    if (ev.type != PF_EVENT_FRAME)
      continue;
    seen++;
    pattern (want, FRAME, ev.frame.seq);
    CHECK_INT (ev.frame.n_chunks, ==, 1);
    CHECK_INT (ev.frame.chunks[0].size, ==, FRAME);
    if (pf_segment_get_device (ev.segments[0]) != NULL) {
      /* the device domain: a device address, read back with a copy */
      uint64_t base = pf_device_segment_get_ptr (ev.segments[0]);

      CHECK (mode == READ_ALL || mode == HOLD_THEN_WAIT);
      CHECK (base != 0);
      CHECK_INT ((uintptr_t) ev.data[0], ==, base + ev.frame.chunks[0].offset);
      CHECK_INT (pf_device_segment_get_access (ev.segments[0]), ==,
          PF_DEVICE_ACCESS_READ);
      CHECK_INT (pf_device_segment_get_ordinal (ev.segments[0]), ==, 0);
      CHECK (last_ptr == 0 || last_ptr == base);        /* imported once */
      last_ptr = base;
      memset (got, 0, FRAME);
      CHECK_INT (cuMemcpyDtoH (got, (CUdeviceptr) (uintptr_t) ev.data[0],
              FRAME), ==, 0);
    } else {
      CHECK (ev.data[0] != NULL);
      memcpy (got, ev.data[0], FRAME);
    }
    CHECK_MSG (memcmp (want, got, FRAME) == 0, "frame %llu: bytes differ "
        "(%02x %02x %02x, want %02x %02x %02x)",
        (unsigned long long) ev.frame.seq, got[0], got[1], got[2], want[0],
        want[1], want[2]);
    if (mode == HOLD_THEN_WAIT) {
      /* the event's segment references go; the frames stay held */
      pf_consumer_event_clear (&ev);
      if (++held == SLOTS) {
        CHECK_INT (write (signal_fd, "h", 1), ==, 1);
        pause ();               /* until SIGKILL */
      }
      continue;
    }
    if (mode == READ_ALL && seen == expect) {
      /* the last one stays held while the producer drops its segment */
      last = ev;
      memset (&ev, 0, sizeof (ev));
      continue;
    }
    CHECK_INT (pf_consumer_release (c, ev.frame.seq), ==, 0);
    pf_consumer_event_clear (&ev);
  }
  CHECK_INT (seen, ==, expect);
  (void) pf_consumer_get_device_stats (c, &skipped, &refused);
  if (mode == NO_IMPORT || mode == NO_SUCH_DEVICE) {
    const char *why = pf_consumer_get_device_stats (c, NULL, NULL);

    CHECK_INT (refused, ==, 1);
    CHECK_INT (skipped, ==, expect);    /* as many device frames as host */
    CHECK_MSG (strstr (why, mode == NO_IMPORT ? "no import function" :
            "no CUDA device with UUID") != NULL, "reason: %s", why);
    CHECK_INT (pf_consumer_get_held (c), ==, 0);
  } else {
    CHECK_INT (refused, ==, 0);
    CHECK_INT (skipped, ==, 0);
  }
  if (mode == READ_ALL) {
    /* The producer removed the segment (SEGMENT_REMOVE came before the
     * EOS) and dropped its own mapping: ours stays, with the bytes, while
     * the frame we hold uses it. */
    check_vmm (1, 1, 1);
    pattern (want, FRAME, last.frame.seq);
    CHECK_INT (cuMemcpyDtoH (got, (CUdeviceptr) (uintptr_t) last.data[0],
            FRAME), ==, 0);
    CHECK (memcmp (want, got, FRAME) == 0);
    /* our mapping is read-only: a write faults (and leaves the context
     * sticky: cleared, so that the teardown below can run) */
    CHECK (last_ptr != 0);
    CHECK_INT (cuMemcpyHtoD (last_ptr, got, 4096), ==, 700);
    CHECK_INT (emu_query ("vmm.faults"), ==, 1);
    emu_reset ();
    CHECK_INT (cuCtxSetCurrent (ctx), ==, 0);
    /* the last frame lets go: unmapped, range freed, handle released,
     * with the connection still up */
    CHECK_INT (pf_consumer_release (c, last.frame.seq), ==, 0);
    pf_consumer_event_clear (&last);
    check_vmm (1, 1, 1);        /* the receiving thread unmaps it ... */
    CHECK_INT (pf_consumer_receive (c, 0, &ev), ==, 0);
    check_vmm (0, 0, 0);        /* ... at its next receive */
    {
      uint64_t bytes = 1;
      uint32_t count = 1;

      pf_consumer_get_mapped (c, &bytes, &count);
      CHECK_INT (count, ==, 0);
      CHECK_INT (bytes, ==, 0);
    }
  }
  pf_consumer_unref (c);
  if (ctx != NULL)
    check_vmm (0, 0, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  free (want);
  free (got);
  return 0;
}

static pid_t
spawn_consumer (const char *path, int mode, int expect, int signal_fd)
{
  pid_t pid = pf_test_fork ();

  CHECK (pid >= 0);
  if (pid == 0)
    _exit (consumer_main (path, mode, expect, signal_fd));
  return pid;
}

static void
check_child (pid_t pid, int code)
{
  int st = pf_test_wait (pid);

  CHECK_MSG (pf_test_exit_code (st) == code, "child %d: exit %d, want %d",
      (int) pid, pf_test_exit_code (st), code);
}

/* ---- frames, killed ---------------------------------------------------- */

static int
case_frames (const char *dir, int kill_it)
{
  char path[300];
  prod_state st;
  pf_segment *seg = NULL;
  pf_producer *p;
  uint8_t *buf = malloc (FRAME);
  int sig[2] = { -1, -1 }, fds0, i, n = kill_it ? SLOTS : N_FRAMES;
  pid_t pid;
  char b;

  memset (&st, 0, sizeof (st));
  snprintf (path, sizeof (path), "%s/sock", dir);
  CHECK_INT (pipe (sig), ==, 0);
  /* before any CUDA here */
  pid = spawn_consumer (path, kill_it ? HOLD_THEN_WAIT : READ_ALL, n, sig[1]);
  close (sig[1]);

  cuda_up (0);
  fds0 = pf_test_count_fds ();
  CHECK_MSG (pf_device_segment_new (0, SLOTS * FRAME - 4096, &seg) == 0,
      "%s", pf_device_segment_error ());
  /* rounded up to the granularity (2 MiB on the emulator) */
  CHECK_INT (pf_segment_get_size (seg), ==, SLOTS * FRAME);
  CHECK_INT (pf_segment_get_device (seg)->granularity, ==, 2 * MIB);
  CHECK (pf_segment_get_base (seg) == NULL);
  CHECK_INT (pf_device_segment_get_access (seg), ==,
      PF_DEVICE_ACCESS_READWRITE);
  check_vmm (1, 1, 1);

  p = producer_up (path, &st);
  WAIT_FOR (atomic_load (&st.connected) == 1);
  for (i = 0; i < n; i++)
    CHECK_INT (publish (p, &st, seg, i % SLOTS, i % SLOTS, (uint64_t) i + 1,
            buf), ==, 1);
  if (kill_it) {
    pf_client_stats cs;
    int n_stats = 0;

    CHECK_INT (read (sig[0], &b, 1), ==, 1);
    CHECK_INT (pf_producer_get_client_stats (p, &cs, 1), ==, 1);
    n_stats = (int) cs.held;
    CHECK_INT (n_stats, ==, SLOTS);
    CHECK_INT (atomic_load (&st.released), ==, 0);
    kill (pid, SIGKILL);
    check_child (pid, 128 + SIGKILL);
    /* everything it held comes back */
    WAIT_FOR (atomic_load (&st.released) == SLOTS);
  } else {
    /* the consumer holds the last frame: drop the segment under it (its
     * SEGMENT_REMOVE goes out; our mapping goes now, the consumer's stays
     * until it releases) */
    WAIT_FOR (atomic_load (&st.released) == n - 1);
    pf_segment_unref (seg);
    seg = NULL;
    check_vmm (0, 0, 0);
    CHECK_INT (pf_producer_send_eos (p), >=, 0);
    check_child (pid, 0);
    WAIT_FOR (atomic_load (&st.released) == n);
  }
  pf_producer_close (p);
  pf_producer_unref (p);
  if (seg != NULL) {
    check_vmm (1, 1, 1);
    pf_segment_unref (seg);
  }
  check_vmm (0, 0, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  close (sig[0]);
  free (buf);
  return 0;
}

/* ---- skip ------------------------------------------------------------- */

static int
case_skip (const char *dir)
{
  char path[300];
  prod_state st;
  pf_segment *dseg = NULL, *hseg = NULL;
  pf_client_stats cs[3];
  pf_producer *p;
  uint8_t *buf = malloc (FRAME);
  pid_t pid[3];
  int i, k, n_host = 0, n_dev = 0;

  memset (&st, 0, sizeof (st));
  snprintf (path, sizeof (path), "%s/sock", dir);
  pid[0] = spawn_consumer (path, NO_DEVICE, N_FRAMES / 2, -1);
  pid[1] = spawn_consumer (path, NO_IMPORT, N_FRAMES / 2, -1);
  pid[2] = spawn_consumer (path, NO_SUCH_DEVICE, N_FRAMES / 2, -1);

  cuda_up (1);
  /* on device 1 of 2: the third consumer's process has only device 0 */
  CHECK_MSG (pf_device_segment_new (1, SLOTS * FRAME, &dseg) == 0, "%s",
      pf_device_segment_error ());
  CHECK_INT (pf_segment_new ("host", SLOTS * FRAME, 0, &hseg), ==, 0);
  p = producer_up (path, &st);
  WAIT_FOR (atomic_load (&st.connected) == 3);
  for (i = 0; i < N_FRAMES; i++) {
    int dev = i % 2;
    int slot = (dev ? n_dev : n_host) % SLOTS;

    /* token slots: host frames 0..3, device frames 4..7 */
    k = publish (p, &st, dev ? dseg : hseg, slot, slot + (dev ? SLOTS : 0),
        (uint64_t) i + 1, buf);
    /* a device frame reaches the two consumers that asked for device
     * segments (and release it unseen); a host frame all three */
    CHECK_INT (k, ==, dev ? 2 : 3);
    if (dev)
      n_dev++;
    else
      n_host++;
  }
  /* counted when published, while all three are connected */
  CHECK_INT (pf_producer_get_client_stats (p, cs, 3), ==, 3);
  for (i = 0, k = 0; i < 3; i++)
    k += cs[i].frames_skipped_device == N_FRAMES / 2;
  CHECK_INT (k, ==, 1);         /* only the one that did not ask */
  CHECK_INT (pf_producer_send_eos (p), >=, 0);
  for (i = 0; i < 3; i++)
    check_child (pid[i], 0);
  WAIT_FOR (atomic_load (&st.released) == N_FRAMES);
  pf_producer_close (p);
  pf_producer_unref (p);
  pf_segment_unref (hseg);
  pf_segment_unref (dseg);
  check_vmm (0, 0, 0);
  free (buf);
  return 0;
}

/* ---- hostile ---------------------------------------------------------- */

typedef struct
{
  pf_consumer *c;
  int peer;
  uint8_t buf[PF_MAX_MSG_SIZE];
} forged;

/* A consumer (device segments asked for if @want, imported with the CUDA
 * layer) talking to us over a socketpair. */
static void
forged_start (forged * f, int want)
{
  pf_consumer_options opts = {.delivery = PF_DELIVERY_EVERY_FRAME };
  pf_stream_info si;
  int sv[2];

  memset (&si, 0, sizeof (si));
  si.delivery = PF_DELIVERY_EVERY_FRAME;
  opts.flags = want ? PF_CONSUMER_OPTION_DEVICE_SEGMENTS : 0;
  CHECK_INT (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), ==, 0);
  f->peer = sv[1];
  CHECK_INT (pf_test_send_fds (f->peer, f->buf, pf_msg_write_hello (f->buf,
              PF_ROLE_PRODUCER, 4, 7), NULL, 0), ==, 0);
  CHECK_INT (pf_consumer_new_from_fd_with (sv[0], 5000, &opts, &f->c), ==, 0);
  CHECK_INT (pf_device_consumer_enable (f->c), ==, 0);
  CHECK_INT (pf_test_send_fds (f->peer, f->buf, pf_msg_write_stream (f->buf,
              &si), NULL, 0), ==, 0);
}

static void
forged_stop (forged * f)
{
  pf_consumer_unref (f->c);
  close (f->peer);
}

static struct pf_msg_device_segment_add
dmsg_of (pf_segment * seg, uint64_t id)
{
  struct pf_msg_device_segment_add m;

  memset (&m, 0, sizeof (m));
  m.segment_id = id;
  m.size = pf_segment_get_size (seg);
  m.granularity = pf_segment_get_device (seg)->granularity;
  m.handle_type = PF_DEVICE_HANDLE_POSIX_FD;
  memcpy (m.device_uuid, pf_segment_get_device (seg)->uuid, 16);
  return m;
}

/* Sends @m with @fd (a copy: ours stays open); the consumer must fail
 * with -EPROTO and a reason containing @why. */
static void
expect_refused (const struct pf_msg_device_segment_add *m, int fd, int want,
    const char *why)
{
  forged f;
  pf_event ev;
  size_t len;
  int res;

  forged_start (&f, want);
  len = pf_msg_write_device_segment_add_unchecked (f.buf, m);
  CHECK_INT (pf_test_send_fds (f.peer, f.buf, len, &fd, 1), ==, 0);
  memset (&ev, 0, sizeof (ev));
  do
    res = pf_consumer_receive (f.c, 5000, &ev);
  while (res == 1 && ev.type == PF_EVENT_STREAM);
  CHECK_MSG (res == -EPROTO, "%s: receive %d (%s)", why, res,
      pf_consumer_get_error (f.c));
  CHECK_MSG (strstr (pf_consumer_get_error (f.c), why) != NULL,
      "want \"%s\" in \"%s\"", why, pf_consumer_get_error (f.c));
  forged_stop (&f);
}

/* A producer refuses to publish frames in a device segment its consumers
 * would refuse (the encoder's rules, checked once per segment). */
static void
bad_device_publish (const char *dir)
{
  pf_segment_device dev;
  pf_producer_frame fr;
  pf_segment *seg = NULL;
  pf_producer *p;
  prod_state st;
  char path[300];
  int fd;

  memset (&st, 0, sizeof (st));
  snprintf (path, sizeof (path), "%s/bad", dir);
  p = producer_up (path, &st);
  memset (&dev, 0, sizeof (dev));
  dev.granularity = 2048;       /* under the wire's 4096 */
  dev.handle_type = PF_DEVICE_HANDLE_POSIX_FD;
  memcpy (dev.uuid, "pfemu-device-000", 16);
  fd = pf_test_memfd (65536, 1);
  CHECK (fd >= 0);
  CHECK_INT (pf_segment_new_device (fd, 65536, &dev, &seg), ==, 0);
  memset (&fr, 0, sizeof (fr));
  fr.n_chunks = 1;
  fr.chunks[0].segment_id = pf_segment_get_id (seg);
  fr.chunks[0].size = 4096;
  fr.pts = fr.dts = fr.duration = fr.clock_pts = PF_TIME_NONE;
  fr.offset = fr.offset_end = UINT64_MAX;
  CHECK_INT (pf_producer_publish (p, &fr, &seg, NULL), ==, -EINVAL);
  CHECK_MSG (strstr (pf_producer_get_error (p), "granularity 2048") != NULL,
      "%s", pf_producer_get_error (p));
  pf_segment_unref (seg);
  /* pf_segment_new_device's own rules */
  dev.granularity = 3 << 12;
  CHECK_INT (pf_segment_new_device (0, 65536, &dev, &seg), ==, -EINVAL);
  dev.granularity = 4096;
  CHECK_INT (pf_segment_new_device (0, 4096 + 1, &dev, &seg), ==, -EINVAL);
  dev.handle_type = 2;
  CHECK_INT (pf_segment_new_device (0, 4096, &dev, &seg), ==, -EINVAL);
  CHECK_INT (pf_segment_new_device (-1, 4096, &dev, &seg), ==, -EINVAL);
  CHECK (seg == NULL);
  pf_producer_close (p);
  pf_producer_unref (p);
}

static int
case_hostile (const char *dir)
{
  struct pf_msg_device_segment_add m;
  pf_segment *seg = NULL, *bad_seg = NULL;
  forged f;
  pf_event ev;
  struct pf_msg_frame fr;
  uint8_t rel[64];
  int fds0, memfd, pipefd[2], fd, res;

  cuda_up (0);
  CHECK_MSG (pf_device_segment_new (0, 4 * MIB, &seg) == 0, "%s",
      pf_device_segment_error ());
  fd = pf_segment_get_fd (seg);
  fds0 = pf_test_count_fds ();
  check_vmm (1, 1, 1);

  /* the encoder refuses what the parser refuses */
  m = dmsg_of (seg, 5);
  CHECK (pf_msg_write_device_segment_add (f.buf, &m) == 64);
  m.granularity = 3 * MIB;
  CHECK (pf_msg_write_device_segment_add (f.buf, &m) == 0);
  CHECK (strstr (pf_msg_error (), "power of two") != NULL);
  m = dmsg_of (seg, 5);
  m.size = 5 * MIB;
  CHECK (pf_msg_write_device_segment_add (f.buf, &m) == 0);
  m = dmsg_of (seg, 5);
  memset (m.device_uuid, 0, 16);
  CHECK (pf_msg_write_device_segment_add (f.buf, &m) == 0);
  m = dmsg_of (seg, 5);
  m.handle_type = 2;
  CHECK (pf_msg_write_device_segment_add (f.buf, &m) == 0);

  bad_device_publish (dir);
  CHECK_INT (pf_test_count_fds (), ==, fds0);

  /* a plain memfd, sealed as a host segment is: no CUDA handle */
  memfd = pf_test_memfd (4 * MIB, 1);
  CHECK (memfd >= 0);
  m = dmsg_of (seg, 5);
  expect_refused (&m, memfd, 1, "no exported device memory");
  close (memfd);
  /* a pipe */
  CHECK_INT (pipe (pipefd), ==, 0);
  expect_refused (&m, pipefd[0], 1, "no exported device memory");
  close (pipefd[0]);
  close (pipefd[1]);
  /* the real allocation, claimed twice as large */
  m.size = 8 * MIB;
  expect_refused (&m, fd, 1, "cuMemMap");
  /* sizes and granularity the parser refuses */
  m = dmsg_of (seg, 5);
  m.granularity = 3 * MIB;
  expect_refused (&m, fd, 1, "power of two");
  m = dmsg_of (seg, 5);
  m.size = 3 * MIB;
  expect_refused (&m, fd, 1, "multiple of the granularity");
  m = dmsg_of (seg, 5);
  m.granularity = 1024;
  expect_refused (&m, fd, 1, "granularity");
  /* to a consumer that did not ask */
  m = dmsg_of (seg, 5);
  expect_refused (&m, fd, 0, "did not ask");
  check_vmm (1, 1, 1);
  CHECK_INT (pf_test_count_fds (), ==, fds0);

  /* a producer asking for what is not there */
  CHECK_INT (pf_device_segment_new (7, MIB, &bad_seg), ==, -ENODEV);
  CHECK (strstr (pf_device_segment_error (), "no CUDA device 7") != NULL);
  CHECK (bad_seg == NULL);
  CHECK_INT (pf_device_segment_new (0, 0, &bad_seg), ==, -EINVAL);
  /* a driver without virtual memory (PFEMU_VMM, read at each call): the
   * producer cannot make device segments, a consumer refuses them (not a
   * protocol error: its frames are skipped) */
  setenv ("PFEMU_VMM", "0", 1);
  CHECK_INT (pf_device_segment_new (0, MIB, &bad_seg), ==, -ENOTSUP);
  CHECK (strstr (pf_device_segment_error (), "cannot share") != NULL);
  forged_start (&f, 1);
  m = dmsg_of (seg, 9);
  CHECK_INT (pf_test_send_fds (f.peer, f.buf,
          pf_msg_write_device_segment_add (f.buf, &m), &fd, 1), ==, 0);
  CHECK_INT (pf_test_send_fds (f.peer, f.buf, pf_msg_write_eos (f.buf), NULL,
          0), ==, 0);
  do {
    res = pf_consumer_receive (f.c, 5000, &ev);
    CHECK_MSG (res == 1, "receive %d: %s", res, pf_consumer_get_error (f.c));
  } while (ev.type == PF_EVENT_STREAM);
  CHECK_INT (ev.type, ==, PF_EVENT_EOS);
  CHECK_MSG (strstr (pf_consumer_get_device_stats (f.c, NULL, NULL),
          "cannot import virtual memory") != NULL, "%s",
      pf_consumer_get_device_stats (f.c, NULL, NULL));
  forged_stop (&f);
  setenv ("PFEMU_VMM", "1", 1);
  check_vmm (1, 1, 1);
  CHECK_INT (pf_test_count_fds (), ==, fds0);

  /* a device nobody here has: refused, not fatal; its frame released */
  forged_start (&f, 1);
  m = dmsg_of (seg, 9);
  memcpy (m.device_uuid, "no-such-device!!", 16);
  CHECK_INT (pf_test_send_fds (f.peer, f.buf,
          pf_msg_write_device_segment_add (f.buf, &m), &fd, 1), ==, 0);
  memset (&fr, 0, sizeof (fr));
  fr.seq = 1;
  fr.n_chunks = 1;
  fr.chunks[0].segment_id = 9;
  fr.chunks[0].size = MIB;
  fr.pts = fr.dts = fr.duration = fr.clock_pts = PF_TIME_NONE;
  fr.offset = fr.offset_end = UINT64_MAX;
  CHECK_INT (pf_test_send_fds (f.peer, f.buf, pf_msg_write_frame (f.buf, &fr),
          NULL, 0), ==, 0);
  CHECK_INT (pf_test_send_fds (f.peer, f.buf, pf_msg_write_eos (f.buf), NULL,
          0), ==, 0);
  memset (&ev, 0, sizeof (ev));
  do {
    res = pf_consumer_receive (f.c, 5000, &ev);
    CHECK_MSG (res == 1, "receive %d: %s", res, pf_consumer_get_error (f.c));
  } while (ev.type == PF_EVENT_STREAM);
  CHECK_INT (ev.type, ==, PF_EVENT_EOS);
  {
    uint64_t skipped = 0;
    uint32_t refused = 0;
    const char *why = pf_consumer_get_device_stats (f.c, &skipped, &refused);

    CHECK_INT (skipped, ==, 1);
    CHECK_INT (refused, ==, 1);
    CHECK_MSG (strstr (why, "no CUDA device with UUID") != NULL, "%s", why);
  }
  /* the consumer's HELLO, then its RELEASE of frame 1 */
  CHECK_INT (recv (f.peer, rel, sizeof (rel), MSG_DONTWAIT), ==, 40);
  CHECK_INT (recv (f.peer, rel, sizeof (rel), MSG_DONTWAIT), ==, 24);
  CHECK_INT (rel[0], ==, PF_MSG_RELEASE);
  CHECK_INT (rel[16], ==, 1);
  forged_stop (&f);

  check_vmm (1, 1, 1);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  pf_segment_unref (seg);
  check_vmm (0, 0, 0);
  return 0;
}

int
main (int argc, char **argv)
{
  char dir[256];
  int res = 2;

  if (argc != 2) {
    fprintf (stderr, "usage: %s frames|killed|skip|hostile\n", argv[0]);
    return 2;
  }
  /* one process per case: every failed check exits 1 */
  CHECK_INT (pf_test_make_tmpdir (dir, sizeof (dir), "pf-devseg"), ==, 0);
  if (strcmp (argv[1], "frames") == 0)
    res = case_frames (dir, 0);
  else if (strcmp (argv[1], "killed") == 0)
    res = case_frames (dir, 1);
  else if (strcmp (argv[1], "skip") == 0)
    res = case_skip (dir);
  else if (strcmp (argv[1], "hostile") == 0)
    res = case_hostile (dir);
  pf_test_kill_children ();
  pf_test_remove_tree (dir);
  if (res == 0)
    printf ("%s: ok\n", argv[1]);
  return res;
}
