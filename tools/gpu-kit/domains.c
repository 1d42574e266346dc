/* The GPU kit's domains step (issue 32, item 3; docs/cuda.md "GPU kit",
 * "One copy per domain"): one copy per memory domain between processes
 * on the real driver (or the driver stand-in with PFEMU_VMM=1), with no
 * GStreamer.
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   gpukit-domains up|down WIDTH HEIGHT N_CHECK N_RATE
 *
 * The flows of tests/cuda/test-domains (`bench on`, `mixed on`), whose
 * checks lean on the emulator's counters throughout, so it cannot run on
 * a GPU; here the emulator's counters are a cross-check taken where the
 * driver is the stand-in (pfemu_query resolves through it) and left out,
 * said, on a real driver.
 *
 * up:   a host node producer (pf_node_producer_new) with
 *       pf_node_producer_enable_domains() and 4 node consumer processes
 *       that want device 0 (PF_NODE_CONSUMER_DEVICE,
 *       pf_node_consumer_set_domain): every frame reaches the 4 as a device
 *       frame, each reads it back with cuMemcpyDtoH and compares every
 *       byte; the producer's stats count exactly one upload per frame.
 * down: a device node producer (pf_node_producer_new_device, frames
 *       written with cuMemcpyHtoD + synchronise before publish) with
 *       domains enabled, 2 consumer processes of device 0 (device frames,
 *       no copy of theirs, read back byte-exact) and 2 host consumer
 *       processes with no CUDA at all (host frames, compared in place):
 *       exactly one download per frame in the producer.
 * Two phases, one stream of RGBA frames (pts 1 .. N_CHECK + N_RATE):
 *   check: N_CHECK frames, each a different pattern, compared byte for
 *          byte in every consumer (as above);
 *   rate:  N_RATE frames as fast as the slots come back, the bytes left
 *          as they are and not compared: the copy per frame and the hop
 *          alone, timed: wall time per frame (first loan to every frame
 *          back), the producer's CPU per frame (getrusage, its I/O thread
 *          included) and the consumers' (all of them, their CPU during
 *          the phase).
 * Both: every frame to every consumer in order and in its domain, one
 * copy per frame counted over both phases, every slot back on both pools,
 * nothing held, no segment alive and no driver teardown call failed in
 * any process, fds as before (checked on the emulator; printed on a GPU,
 * where the driver opens its own); on the emulator, its counts of the
 * copies in every process agree.
 *
 * Consumer processes are forked before the parent touches CUDA (CUDA's
 * rule); each device process opens libcuda.so.1 itself and makes device
 * 0's primary context current on its one thread.
 *
 * Output: lines "name: value" and last "NOTE: ..." (the summary's note).
 * Exit 0 pass, 1 fail, 77 with "SKIP: PARTIAL: ..." when the driver
 * reports no virtual-memory POSIX-fd sharing (attributes 102/103): device
 * segments, and so both flows, cannot run there.
 *
 * Threads: one per process (the producer's I/O thread is the library's
 * and calls no CUDA; the copies run on the publishing thread).
 */
#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-node-domains.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-segment.h>

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_SLOTS 4
#define MAX_KIDS 4

#include "kitcu.h"

/* What the consumer processes measured, in shared memory made before the
 * fork. */
static struct shared
{
  atomic_long frames_checked;   /* all consumers, byte-exact */
  atomic_long device_frames;    /* frames that came as device frames */
  atomic_long host_frames;      /* frames that came as host frames */
  atomic_long cpu_ns;           /* the consumers' during the rate phase */
  atomic_long emu_own_copies;   /* emulator: consumers' copies beyond reads */
  atomic_long emu_allocations;  /* emulator: their own device memory */
} *shared;

static pid_t kids[MAX_KIDS];
static int n_kids;

/* kitcu.h's failure: the consumer processes go too */
static void
kit_on_fail (void)
{
  int i;

  for (i = 0; i < n_kids; i++)
    if (kids[i] > 0)
      kill (kids[i], SIGKILL);
}

/* CPU time of this process so far (user + system, all threads), ns. */
static uint64_t
cpu_ns (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
      (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* Frame @k's bytes (test-domains' pattern) */
static void
pattern (uint8_t * buf, size_t n, uint64_t k)
{
  size_t i;

  for (i = 0; i < n; i++)
    buf[i] = (uint8_t) ((i * 13 + k * 71 + (i >> 9)) & 0xff);
}

/* ---- the consumer processes -------------------------------------------- */

static int
consumer_main (const char *path, int device, size_t fs, int n_check,
    int n_frames)
{
  uint8_t *want = malloc (fs), *got = malloc (fs);
  pf_node_consumer *c = NULL;
  pf_node_frame *f;
  uint64_t skipped = 0;
  uint32_t refused = 0;
  uint64_t cpu0 = 0, cpu1 = 0;
  int seen = 0, res, fds0;

  who = device ? "device consumer" : "host consumer";
  n_kids = 0;                   /* a consumer kills no one */
  CHECK (want && got, "out of memory");
  if (device && (res = cuda_up (0)) != 0)
    return res;
  fds0 = count_fds ();
  res = pf_node_consumer_new_full (path, 20000, PF_DELIVERY_EVERY_FRAME,
      device ? PF_NODE_CONSUMER_DEVICE : 0, &c);
  CHECK (res == 0, "connect: %d %s", res, pf_consumer_connect_error ());
  if (device) {
    res = pf_node_consumer_set_domain (c, 0);
    CHECK (res == 0, "pf_node_consumer_set_domain (0): %d", res);
  }
  for (;;) {
    res = pf_node_consumer_next (c, 20000, &f);
    CHECK (res == 1 || res == PF_NODE_EOS, "next: %d %s (after %d frames)",
        res, pf_node_consumer_get_error (c), seen);
    if (res == PF_NODE_EOS)
      break;
    seen++;
    if (seen == n_check + 1)
      cpu0 = cpu_ns ();         /* the rate phase's first frame */
    CHECK (f->pts == (uint64_t) seen, "frame %d has pts %llu", seen,
        (unsigned long long) f->pts);
    CHECK (f->size == fs, "frame %d: size %llu", seen,
        (unsigned long long) f->size);
    if (device) {
      pf_node_device_info dev;

      CHECK (f->domain == PF_NODE_DOMAIN_DEVICE, "frame %d came in the host "
          "domain, not as a device frame", seen);
      CHECK (pf_node_frame_get_device (f, &dev) == 0 && dev.ptr != 0 &&
          dev.ordinal == 0, "frame %d: no device 0 address", seen);
      if (seen <= n_check) {
        pattern (want, fs, f->pts);
        memset (got, 0, fs);
        CU (cu.MemcpyDtoH (got, dev.ptr, fs));
        CHECK (memcmp (want, got, fs) == 0, "frame %d: device bytes differ",
            seen);
        atomic_fetch_add (&shared->frames_checked, 1);
      }
      atomic_fetch_add (&shared->device_frames, 1);
    } else {
      CHECK (f->domain == PF_NODE_DOMAIN_HOST && f->data != NULL,
          "frame %d is not a host frame", seen);
      if (seen <= n_check) {
        pattern (want, fs, f->pts);
        CHECK (memcmp (want, f->data, fs) == 0, "frame %d: host bytes "
            "differ", seen);
        atomic_fetch_add (&shared->frames_checked, 1);
      }
      atomic_fetch_add (&shared->host_frames, 1);
    }
    res = pf_node_frame_release (f);
    CHECK (res == 0, "release of frame %d: %d", seen, res);
    if (seen == n_frames)
      cpu1 = cpu_ns ();
  }
  CHECK (seen == n_frames, "%d frames, want %d", seen, n_frames);
  if (device) {
    (void) pf_node_consumer_get_device_stats (c, &skipped, &refused);
    CHECK (skipped == 0 && refused == 0, "%llu device frames skipped, %u "
        "segments refused: %s", (unsigned long long) skipped, refused,
        pf_node_consumer_get_device_stats (c, NULL, NULL));
  }
  if (device && cu.emu_query != NULL) {
    /* the emulator's count: no copy of its own beyond the reads above,
     * no device memory of its own (it maps the producer's) */
    atomic_fetch_add (&shared->emu_own_copies,
        cu.emu_query ("calls.cuMemcpyDtoH_v2") - n_check +
        cu.emu_query ("calls.cuMemcpyHtoD_v2"));
    atomic_fetch_add (&shared->emu_allocations,
        cu.emu_query ("live.allocations"));
  }
  CHECK (pf_node_consumer_get_held (c) == 0, "%u frames held at the end",
      pf_node_consumer_get_held (c));
  pf_node_consumer_free (c);
  CHECK (pf_segment_count_live () == 0, "%d segments alive after the "
      "consumer was freed", pf_segment_count_live ());
  CHECK (pf_device_segment_teardown_errors () == 0, "%llu driver calls "
      "undoing a mapping failed",
      (unsigned long long) pf_device_segment_teardown_errors ());
  if (getenv ("PFEMU_VMM") != NULL || !device)
    CHECK (count_fds () == fds0, "fds %d before, %d after", fds0, count_fds ());
  atomic_fetch_add (&shared->cpu_ns, (long) (cpu1 - cpu0));
  fflush (stdout);
  free (want);
  free (got);
  return 0;
}

static void
spawn (const char *path, int device, size_t fs, int n_check, int n_frames)
{
  pid_t pid = fork ();

  CHECK (pid >= 0, "fork: %s", strerror (errno));
  if (pid == 0)
    _exit (consumer_main (path, device, fs, n_check, n_frames));
  kids[n_kids++] = pid;
}

/* ---- the producer (the parent) ------------------------------------------ */

/* Every slot of the copier's pools back. */
static int
all_free (pf_node_producer * p, pf_node_domain_stats * st)
{
  uint32_t i;

  if (pf_node_producer_get_domain_stats (p, st) != 0)
    return 0;
  if (st->host_free_slots != st->host_slots)
    return 0;
  for (i = 0; i < st->n_domains; i++)
    if (st->domain[i].free_slots != st->domain[i].n_slots)
      return 0;
  return 1;
}

static void
wait_until (int (*cond) (pf_node_producer *, pf_node_domain_stats *),
    pf_node_producer * p, pf_node_domain_stats * st, const char *what)
{
  uint64_t end = now_ns () + 20000000000ull;

  while (!cond (p, st)) {
    CHECK (now_ns () < end, "%s: not in 20 s", what);
    usleep (1000);
  }
}

int
main (int argc, char **argv)
{
  char path[200];
  const char *tmp = getenv ("TMPDIR");
  pf_node_producer_config cfg;
  pf_node_domain_stats st;
  pf_node_producer *p = NULL;
  pf_node_loan loan;
  uint8_t *buf;
  uint64_t t0 = 0, t1, c0 = 0, c1;
  long e0 = 0, e1 = 0;
  int w, h, n, n_check, n_rate, i, res, stt, fds0, up, n_dev, n_host, copies;
  size_t fs;

  if (argc != 6 || (strcmp (argv[1], "up") != 0 &&
          strcmp (argv[1], "down") != 0)) {
    fprintf (stderr, "usage: %s up|down WIDTH HEIGHT N_CHECK N_RATE\n",
        argv[0]);
    return 2;
  }
  up = strcmp (argv[1], "up") == 0;
  w = atoi (argv[2]);
  h = atoi (argv[3]);
  n_check = atoi (argv[4]);
  n_rate = atoi (argv[5]);
  n = n_check + n_rate;
  if (w <= 0 || h <= 0 || n_check < 1 || n_rate < 1
      || (size_t) w * h * 4 % 4096 != 0) {
    fprintf (stderr,
        "bad arguments (a frame must be a multiple of 4096 " "bytes)\n");
    return 2;
  }
  fs = (size_t) w *h * 4;
  n_dev = up ? 4 : 2;
  n_host = up ? 0 : 2;
  snprintf (path, sizeof (path), "%s/gpukit-domains-%d.sock",
      tmp ? tmp : "/tmp", (int) getpid ());
  unlink (path);
  setvbuf (stdout, NULL, _IOLBF, 0);
  shared = mmap (NULL, sizeof (*shared), PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK (shared != MAP_FAILED, "mmap: %s", strerror (errno));

  /* before any CUDA here */
  for (i = 0; i < n_dev; i++)
    spawn (path, 1, fs, n_check, n);
  for (i = 0; i < n_host; i++)
    spawn (path, 0, fs, n_check, n);

  res = cuda_up (up);
  if (res != 0) {
    kit_on_fail ();
    for (i = 0; i < n_kids; i++)
      waitpid (kids[i], NULL, 0);
    return res;
  }
  buf = malloc (fs);
  CHECK (buf != NULL, "out of memory");
  fds0 = count_fds ();
  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.n_slots = N_SLOTS;
  cfg.slot_size = fs;
  if (up)
    res = pf_node_producer_new (&cfg, &p);
  else
    res = pf_node_producer_new_device (&cfg, 0, &p);
  CHECK (res == 0, "pf_node_producer_new%s: %s (%d): %s", up ? "" :
      "_device", strerror (-res), res, up ? "" : pf_device_segment_error ());
  res = pf_node_producer_enable_domains (p);
  CHECK (res == 0, "pf_node_producer_enable_domains: %s (%d)",
      strerror (-res), res);
  CHECK (pf_node_producer_set_video (p, "RGBA", w, h, 30, 1) == 0, "set_video");
  res = pf_node_producer_wait_clients (p, (unsigned int) n_kids, 20000);
  CHECK (res == 0, "%d consumers did not connect in 20 s: %d", n_kids, res);
  /* every device consumer has named device 0 */
  {
    uint64_t end = now_ns () + 20000000000ull;
    pf_producer_domain d[2];

    while (pf_producer_get_device_domains (pf_node_producer_get_transport
            (p), d, 2) != 1 || d[0].n_clients != (uint32_t) n_dev) {
      CHECK (now_ns () < end, "the %d device consumers did not name device "
          "0 in 20 s", n_dev);
      usleep (1000);
    }
  }

  if (cu.emu_query)
    e0 = cu.emu_query (up ? "calls.cuMemcpyHtoD_v2" : "calls.cuMemcpyDtoH_v2");
  for (i = 1; i <= n; i++) {
    if (i == n_check + 1) {
      /* the checked frames back first: the rate phase on its own */
      res = pf_node_producer_wait_idle (p, 20000);
      CHECK (res == 0, "the checked frames did not all come back: %d", res);
      t0 = now_ns ();
      c0 = cpu_ns ();
    }
    res = pf_node_producer_loan_video (p, 20000, &loan);
    CHECK (res == 0, "loan %d: %d", i, res);
    CHECK (loan.size == fs && loan.domain == (up ? PF_NODE_DOMAIN_HOST :
            PF_NODE_DOMAIN_DEVICE), "loan %d: domain %u size %llu", i,
        loan.domain, (unsigned long long) loan.size);
    if (i > n_check) {
      /* rate: the bytes as they are */
    } else if (up) {
      pattern (loan.data, fs, (uint64_t) i);
    } else {
      /* the frame on the device, complete before publish */
      pattern (buf, fs, (uint64_t) i);
      CU (cu.MemcpyHtoD ((cu_ptr) (uintptr_t) loan.data, buf, fs));
      CU (cu.CtxSynchronize ());
    }
    loan.pts = (uint64_t) i;
    res = pf_node_producer_publish (p, &loan);
    CHECK (res == n_kids, "publish of frame %d reached %d consumers, want %d",
        i, res, n_kids);
  }
  res = pf_node_producer_wait_idle (p, 20000);
  t1 = now_ns ();
  c1 = cpu_ns ();
  CHECK (res == 0, "the frames did not all come back: %d", res);
  if (cu.emu_query)
    e1 = cu.emu_query (up ? "calls.cuMemcpyHtoD_v2" : "calls.cuMemcpyDtoH_v2");
  CHECK (pf_node_producer_get_free_slots (p) == N_SLOTS, "%u of %d slots "
      "free at the end", pf_node_producer_get_free_slots (p), N_SLOTS);
  wait_until (all_free, p, &st, "the copier's slots back");
  CHECK (st.frames == (uint64_t) n, "domain stats: %llu frames, want %d",
      (unsigned long long) st.frames, n);
  if (up) {
    CHECK (st.uploads == (uint64_t) n && st.frames_uploaded == (uint64_t) n
        && st.n_domains == 1 && st.domain[0].ordinal == 0 &&
        st.domain[0].uploads == (uint64_t) n && st.domain[0].no_slot == 0 &&
        st.unreachable == 0 && st.downloads == 0, "stats: %llu uploads "
        "(%llu frames uploaded, %u domains, %llu without a slot, %llu "
        "unreachable), %llu downloads; want %d uploads into device 0",
        (unsigned long long) st.uploads,
        (unsigned long long) st.frames_uploaded, st.n_domains,
        (unsigned long long) (st.n_domains ? st.domain[0].no_slot : 0),
        (unsigned long long) st.unreachable,
        (unsigned long long) st.downloads, n);
    copies = (int) st.uploads;
  } else {
    CHECK (st.downloads == (uint64_t) n && st.host_no_slot == 0 &&
        st.uploads == 0 && st.n_domains == 0, "stats: %llu downloads (%llu "
        "without a host slot), %llu uploads, %u device pools; want %d "
        "downloads and no upload", (unsigned long long) st.downloads,
        (unsigned long long) st.host_no_slot,
        (unsigned long long) st.uploads, st.n_domains, n);
    copies = (int) st.downloads;
  }
  CHECK (pf_node_producer_send_eos (p) >= 0, "send_eos");
  for (i = 0; i < n_kids; i++) {
    CHECK (waitpid (kids[i], &stt, 0) == kids[i], "waitpid");
    kids[i] = 0;
    CHECK (WIFEXITED (stt) && WEXITSTATUS (stt) == 0, "consumer process %d "
        "failed (status 0x%x)", i, stt);
  }
  pf_node_producer_free (p);
  CHECK (pf_segment_count_live () == 0, "%d segments alive after the "
      "producer was freed", pf_segment_count_live ());
  CHECK (pf_device_segment_teardown_errors () == 0, "%llu driver calls "
      "undoing a segment failed",
      (unsigned long long) pf_device_segment_teardown_errors ());
  if (getenv ("PFEMU_VMM") != NULL)
    CHECK (count_fds () == fds0, "fds %d before, %d after", fds0, count_fds ());
  CHECK (shared->frames_checked == (long) n_check * n_kids &&
      shared->device_frames == (long) n * n_dev &&
      shared->host_frames == (long) n * n_host, "consumers checked %ld "
      "frames byte-exact, received %ld device and %ld host frames, want %d "
      "and %d of %d", (long) shared->frames_checked,
      (long) shared->device_frames, (long) shared->host_frames,
      n_check * n_kids, n * n_dev, n * n_host);
  if (cu.emu_query) {
    CHECK (e1 - e0 == n, "the emulator counts %ld %s in the producer, want %d",
        e1 - e0, up ? "cuMemcpyHtoD" : "cuMemcpyDtoH", n);
    CHECK (shared->emu_own_copies == 0 && shared->emu_allocations == 0,
        "the emulator counts %ld copies and %ld allocations of the device "
        "consumers' own, want none", (long) shared->emu_own_copies,
        (long) shared->emu_allocations);
    printf ("%s: emulator: %ld %s in the producer's process; the %d device "
        "consumers made no copy but their reads and hold no device memory "
        "of their own\n", argv[1], e1 - e0, up ? "cuMemcpyHtoD" :
        "cuMemcpyDtoH", n_dev);
  } else {
    printf ("%s: emulator cross-check: none (a real driver: the copies are "
        "the producer's own count)\n", argv[1]);
  }
  printf ("%s: producer fds %d before, %d after\n", argv[1], fds0,
      count_fds ());
  if (up)
    printf ("%s: %d frames %dx%d RGBA, host producer -> 4 consumers of "
        "device 0: uploads %d (%.2f per frame), device pool %llu bytes in %u "
        "slots shared by the 4, all in device memory, the first %d "
        "byte-exact in each\n", argv[1], n, w, h, copies, (double) copies / n,
        (unsigned long long) st.device_bytes, st.domain[0].n_slots, n_check);
  else
    printf ("%s: %d frames %dx%d RGBA, device producer -> 2 consumers of "
        "device 0 + 2 host consumers (no CUDA): downloads %d (%.2f per "
        "frame), pinned host pool %llu bytes in %u slots, each in its "
        "domain, the first %d byte-exact in each of the 4\n", argv[1], n, w,
        h, copies, (double) copies / n, (unsigned long long) st.host_bytes,
        st.host_slots, n_check);
  printf ("%s: copies_per_frame %.2f wall_us_per_frame %.1f "
      "producer_cpu_us_per_frame %.1f consumers_cpu_us_per_frame %.1f "
      "(rate phase, %d frames, %d consumers)\n", argv[1],
      (double) copies / n, (t1 - t0) / 1000.0 / n_rate,
      (c1 - c0) / 1000.0 / n_rate, (double) shared->cpu_ns / 1000.0 / n_rate,
      n_rate, n_kids);
  free (buf);
  unlink (path);
  return 0;
}
