/* The GPU kit's device-segments step (issue 32; docs/cuda.md "GPU kit"):
 * device frames between two processes on the real driver (or the driver
 * stand-in with PFEMU_VMM=1), with no GStreamer.
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   gpukit-devseg WIDTH HEIGHT N_CHECK N_LATENCY N_RATE
 *
 * The flow of tests/cuda/test-node-device (which needs the emulator's
 * counters, so cannot run on a GPU): a node producer with device slots
 * (pf_node_producer_new_device: cuMemCreate, exported as a POSIX fd) ->
 * a node consumer process that asked for device frames
 * (PF_NODE_CONSUMER_DEVICE: imports the fd once, maps it read-only or,
 * where the driver refuses, read-write, and says which).
 *
 * The consumer process is forked before the parent touches CUDA (CUDA's
 * rule: a child forked after initialisation cannot use it); each process
 * opens libcuda.so.1 itself and makes device 0's primary context current
 * on its one thread (the node consumer imports on the receiving thread).
 *
 * Three phases, one stream of RGBA frames (pts 1 .. total):
 *   check:   N_CHECK frames, each a different pattern written with
 *            cuMemcpyHtoD and cuCtxSynchronize before publish; the consumer
 *            reads each back with cuMemcpyDtoH and compares every byte, and
 *            checks the DLPack (kDLCUDA) description is at the device address.
 *   latency: N_LATENCY frames one at a time (the producer waits for each
 *            to come back): the hop, publish -> received (the frame's
 *            send_time and recv_time, CLOCK_MONOTONIC), p50/p99 in us.
 *   rate:    N_RATE frames as fast as the 4 slots allow: frames/s through
 *            publish -> receive -> release -> loan again.
 * Then: every frame came back (free slots = slots, the consumer holds
 * none), no device frame refused or skipped, no segment alive and no
 * driver teardown call failed in either process, fds as before (checked
 * on the emulator; printed on a GPU, where the driver may open its own).
 *
 * Output: lines "name: value" and last "NOTE: ..." (the kit's summary
 * note). Exit 0 pass, 1 fail, 77 with "SKIP: PARTIAL: ..." when the driver
 * reports no virtual-memory POSIX-fd sharing (device attributes 102/103):
 * a named partial result, the path cannot run there.
 *
 * Threads: one per process (the producer's I/O thread is the library's
 * and calls no CUDA).
 */
#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-dlpack.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-segment.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define N_SLOTS 4

#include "kitcu.h"

static pid_t child = -1;

static void
kit_on_fail (void)
{
  if (child > 0)
    kill (child, SIGKILL);
}

/* Frame @k's bytes (test-node-device's pattern) */
static void
pattern (uint8_t * buf, size_t n, uint64_t k)
{
  size_t i;

  for (i = 0; i < n; i++)
    buf[i] = (uint8_t) ((i * 7 + k * 131 + (i >> 11)) & 0xff);
}

static int
cmp_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

  return x < y ? -1 : x > y;
}

static double
pct_us (uint64_t * v, int n, int pct)
{
  int i = (int) ((int64_t) (n - 1) * pct / 100);

  return n > 0 ? (double) v[i] / 1000.0 : 0.0;
}

/* ---- the consumer process --------------------------------------------- */

static int
consumer_main (const char *path, int w, int h, int n_check, int n_lat,
    int n_rate)
{
  size_t fs = (size_t) w * h * 4;
  uint8_t *want = malloc (fs), *got = malloc (fs);
  uint64_t *lat = calloc ((size_t) n_lat + 1, sizeof (uint64_t));
  uint64_t skipped = 0, t_first = 0, t_last = 0, check_ns = 0;
  uint32_t refused = 0;
  int total = n_check + n_lat + n_rate, seen = 0, n_l = 0, res, fds0;
  unsigned int access = 0;
  pf_node_consumer *c = NULL;
  pf_node_frame *f;

  who = "consumer";
  CHECK (want && got && lat, "out of memory");
  res = cuda_up (0);
  if (res != 0)
    return res;
  fds0 = count_fds ();
  res = pf_node_consumer_new_full (path, 20000, PF_DELIVERY_EVERY_FRAME,
      PF_NODE_CONSUMER_DEVICE, &c);
  CHECK (res == 0, "connect: %d %s", res, pf_consumer_connect_error ());
  for (;;) {
    pf_node_device_info dev;
    pf_dlpack_desc dl;

    res = pf_node_consumer_next (c, 20000, &f);
    CHECK (res == 1 || res == PF_NODE_EOS, "next: %d %s (after %d frames; "
        "device frames refused: %s)", res, pf_node_consumer_get_error (c),
        seen, pf_node_consumer_get_device_stats (c, NULL, NULL));
    if (res == PF_NODE_EOS)
      break;
    seen++;
    CHECK (f->pts == (uint64_t) seen, "frame %d has pts %llu", seen,
        (unsigned long long) f->pts);
    CHECK (f->domain == PF_NODE_DOMAIN_DEVICE, "frame %d in the host domain",
        seen);
    CHECK (f->data == NULL && f->size == fs, "frame %d: data %p size %llu",
        seen, f->data, (unsigned long long) f->size);
    CHECK (pf_node_frame_get_device (f, &dev) == 0, "no device info");
    CHECK (dev.ptr != 0 && dev.ordinal == 0, "frame %d: ptr %llx device %d",
        seen, (unsigned long long) dev.ptr, dev.ordinal);
    if (seen == 1) {
      access = dev.access;
      printf ("consumer: mapping %s (access %u), device address 0x%llx\n",
          access == PF_DEVICE_ACCESS_READ ? "read-only" :
          "read-write: the driver refused read-only (fallback)", access,
          (unsigned long long) pf_device_segment_get_ptr (f->segment));
    }
    CHECK (dev.access == access, "access changed");
    if (seen <= n_check) {
      uint64_t t0 = now_ns ();

      CHECK (pf_dlpack_desc_from_frame (f, PF_DLPACK_CUDA, &dl) == 0 &&
          dl.device_type == PF_DLPACK_CUDA && dl.device_id == 0 &&
          (uintptr_t) dl.data == dev.ptr + f->layout.plane_offset[0],
          "frame %d: no kDLCUDA description at the device address", seen);
      pattern (want, fs, f->pts);
      memset (got, 0, fs);
      CU (cu.MemcpyDtoH (got, dev.ptr, fs));
      if (memcmp (want, got, fs) != 0) {
        size_t i = 0;

        while (want[i] == got[i])
          i++;
        FAIL ("frame %d: bytes differ at %zu (got %02x, want %02x)", seen,
            i, got[i], want[i]);
      }
      check_ns += now_ns () - t0;
    } else if (seen <= n_check + n_lat) {
      lat[n_l++] = f->recv_time - f->send_time;
    } else {
      if (seen == n_check + n_lat + 1)
        t_first = f->recv_time;
      t_last = f->recv_time;
    }
    res = pf_node_frame_release (f);
    CHECK (res == 0, "release of frame %d: %d", seen, res);
  }
  /* a refused import first: its reason says more than the count */
  (void) pf_node_consumer_get_device_stats (c, &skipped, &refused);
  CHECK (skipped == 0 && refused == 0, "%llu device frames skipped, %u "
      "segments refused (after %d frames seen): %s",
      (unsigned long long) skipped, refused, seen,
      pf_node_consumer_get_device_stats (c, NULL, NULL));
  CHECK (seen == total, "%d frames, want %d", seen, total);
  CHECK (pf_node_consumer_get_held (c) == 0, "%u frames held at the end",
      pf_node_consumer_get_held (c));
  pf_node_consumer_free (c);
  CHECK (pf_segment_count_live () == 0, "%d segments alive after the "
      "consumer was freed", pf_segment_count_live ());
  CHECK (pf_node_device_sync_errors () == 0, "release waits failed");
  CHECK (pf_device_segment_teardown_errors () == 0, "%llu driver calls "
      "undoing the mapping failed",
      (unsigned long long) pf_device_segment_teardown_errors ());
  printf ("consumer: fds %d before, %d after\n", fds0, count_fds ());
  if (getenv ("PFEMU_VMM") != NULL)
    CHECK (count_fds () == fds0, "fds %d before, %d after", fds0, count_fds ());
  qsort (lat, (size_t) n_l, sizeof (uint64_t), cmp_u64);
  printf ("consumer: %d frames checked byte-exact (cuMemcpyDtoH, %.0f us "
      "per frame with the compare)\n", n_check,
      n_check ? check_ns / 1000.0 / n_check : 0.0);
  printf ("hop_us: p50 %.1f p99 %.1f (%d frames one at a time, publish -> "
      "received)\n", pct_us (lat, n_l, 50), pct_us (lat, n_l, 99), n_l);
  printf ("rate_consumer_fps: %.0f (%d frames, first to last received)\n",
      n_rate > 1 && t_last > t_first ?
      (n_rate - 1) * 1e9 / (double) (t_last - t_first) : 0.0, n_rate);
  printf ("access: %s\n", access == PF_DEVICE_ACCESS_READ ? "read-only" :
      "read-write (read-only refused by the driver)");
  fflush (stdout);
  free (want);
  free (got);
  free (lat);
  return 0;
}

/* ---- the producer (the parent) ------------------------------------------ */

static void
publish (pf_node_producer * p, pf_node_loan * loan, uint64_t pts)
{
  int res;

  loan->pts = pts;
  res = pf_node_producer_publish (p, loan);
  CHECK (res == 1, "publish of frame %llu reached %d consumers, want 1",
      (unsigned long long) pts, res);
}

int
main (int argc, char **argv)
{
  char path[200];
  const char *tmp = getenv ("TMPDIR");
  pf_node_producer_config cfg;
  pf_node_producer *p = NULL;
  pf_node_loan loan;
  pf_segment *seg;
  uint8_t *buf;
  uint64_t t0, t1, write_ns = 0;
  int w, h, n_check, n_lat, n_rate, i, res, st, fds0;
  size_t fs;

  if (argc != 6) {
    fprintf (stderr, "usage: %s WIDTH HEIGHT N_CHECK N_LATENCY N_RATE\n",
        argv[0]);
    return 2;
  }
  w = atoi (argv[1]);
  h = atoi (argv[2]);
  n_check = atoi (argv[3]);
  n_lat = atoi (argv[4]);
  n_rate = atoi (argv[5]);
  if (w <= 0 || h <= 0 || n_check < 1 || n_lat < 1 || n_rate < 2) {
    fprintf (stderr, "bad arguments\n");
    return 2;
  }
  fs = (size_t) w *h * 4;
  snprintf (path, sizeof (path), "%s/gpukit-devseg-%d.sock",
      tmp ? tmp : "/tmp", (int) getpid ());
  unlink (path);
  setvbuf (stdout, NULL, _IOLBF, 0);

  /* before any CUDA here */
  child = fork ();
  CHECK (child >= 0, "fork: %s", strerror (errno));
  if (child == 0) {
    child = -1;
    res = consumer_main (path, w, h, n_check, n_lat, n_rate);
    fflush (stdout);
    _exit (res);
  }

  res = cuda_up (1);
  if (res != 0) {
    kill (child, SIGKILL);
    waitpid (child, NULL, 0);
    return res;
  }
  buf = malloc (fs);
  CHECK (buf != NULL, "out of memory");
  fds0 = count_fds ();
  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.n_slots = N_SLOTS;
  cfg.slot_size = fs;
  res = pf_node_producer_new_device (&cfg, 0, &p);
  CHECK (res == 0, "pf_node_producer_new_device: %s (%d): %s",
      strerror (-res), res, pf_device_segment_error ());
  seg = pf_node_producer_get_segment (p);
  printf ("segment: %llu bytes of device memory (%d slots of %zu bytes, "
      "%dx%d RGBA), granularity %llu, exported as a POSIX fd\n",
      (unsigned long long) pf_segment_get_size (seg), N_SLOTS, fs, w, h,
      (unsigned long long) pf_segment_get_device (seg)->granularity);
  CHECK (pf_node_producer_set_video (p, "RGBA", w, h, 30, 1) == 0, "set_video");
  res = pf_node_producer_wait_clients (p, 1, 20000);
  CHECK (res == 0, "no consumer connected in 20 s: %d", res);

  /* check: a different pattern per frame, complete before publish */
  for (i = 1; i <= n_check; i++) {
    CHECK (pf_node_producer_loan_video (p, 20000, &loan) == 0, "loan %d", i);
    CHECK (loan.domain == PF_NODE_DOMAIN_DEVICE && loan.size == fs,
        "loan %d: domain %u size %llu", i, loan.domain,
        (unsigned long long) loan.size);
    pattern (buf, fs, (uint64_t) i);
    t0 = now_ns ();
    CU (cu.MemcpyHtoD ((cu_ptr) (uintptr_t) loan.data, buf, fs));
    CU (cu.CtxSynchronize ());
    write_ns += now_ns () - t0;
    publish (p, &loan, (uint64_t) i);
  }
  res = pf_node_producer_wait_idle (p, 20000);
  CHECK (res == 0, "the checked frames did not all come back: %d", res);
  /* latency: one frame at a time */
  for (i = 1; i <= n_lat; i++) {
    CHECK (pf_node_producer_loan_video (p, 20000, &loan) == 0, "loan");
    publish (p, &loan, (uint64_t) (n_check + i));
    CHECK (pf_node_producer_wait_idle (p, 20000) == 0, "frame %d not back",
        n_check + i);
  }
  /* rate: as fast as the slots come back */
  t0 = now_ns ();
  for (i = 1; i <= n_rate; i++) {
    CHECK (pf_node_producer_loan_video (p, 20000, &loan) == 0, "loan");
    publish (p, &loan, (uint64_t) (n_check + n_lat + i));
  }
  res = pf_node_producer_wait_idle (p, 20000);
  t1 = now_ns ();
  CHECK (res == 0, "the rate frames did not all come back: %d", res);
  CHECK (pf_node_producer_get_free_slots (p) == N_SLOTS, "%u of %d slots "
      "free at the end", pf_node_producer_get_free_slots (p), N_SLOTS);
  CHECK (pf_node_producer_send_eos (p) >= 0, "send_eos");
  CHECK (waitpid (child, &st, 0) == child, "waitpid");
  child = -1;
  CHECK (WIFEXITED (st) && WEXITSTATUS (st) == 0, "the consumer process "
      "failed (status 0x%x)", st);
  pf_node_producer_free (p);
  CHECK (pf_segment_count_live () == 0, "%d segments alive after the "
      "producer was freed", pf_segment_count_live ());
  CHECK (pf_device_segment_teardown_errors () == 0, "%llu driver calls "
      "undoing the segment failed",
      (unsigned long long) pf_device_segment_teardown_errors ());
  printf ("producer: fds %d before, %d after\n", fds0, count_fds ());
  if (getenv ("PFEMU_VMM") != NULL)
    CHECK (count_fds () == fds0, "fds %d before, %d after", fds0, count_fds ());
  printf ("producer: %d frames written (cuMemcpyHtoD from pageable + "
      "synchronize, %.0f us per frame)\n", n_check,
      write_ns / 1000.0 / n_check);
  printf ("rate_fps: %.0f (%d frames %dx%d RGBA, publish -> release -> "
      "loan, %d slots)\n", n_rate * 1e9 / (double) (t1 - t0), n_rate, w, h,
      N_SLOTS);
  printf ("released: all %d frames came back, no segment or mapping left\n",
      n_check + n_lat + n_rate);
  free (buf);
  unlink (path);
  return 0;
}
