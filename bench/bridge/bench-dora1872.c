/* bench-dora1872: a CPU producer node and a CUDA consumer node (dora-rs
 * issue #1872), three ways of getting each frame onto the device
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: bench-dora1872 [FRAMES]      (default 90 per mode: 3 s at 30 Hz)
 *
 * 1080p RGBA (8 294 400 bytes) at 30 Hz, producer and consumer nodes in two
 * processes through the bridge (pf_node_producer -> pf_node_consumer, a
 * fresh pair per mode, so no mode inherits another's registration). The
 * consumer gets every frame to device memory by
 *   (a) pageable: one cudaMemcpy2D straight from the shared mapping (not
 *       registered: the driver stages it through its own pinned buffer);
 *   (b) caller-side pinning (dora's workaround): memcpy into a private
 *       registered buffer, release the frame, cudaMemcpy2DAsync from it,
 *       wait for its event;
 *   (c) this project: pf_node_frame_upload() (the segment registered once,
 *       DMA straight from it on pf_uploader's stream, the frame released
 *       after the event), waiting for the device frame's event.
 * Figures per mode: latency to the device (producer's send time to the copy
 * complete, CLOCK_MONOTONIC) p50/p99, the copy's own time p50, host CPU per
 * frame of the consumer process (getrusage, user + system, release thread
 * included), GB/s of the copy, and ratios against a raw pinned cudaMemcpy2D
 * of the same frame measured in the same run (registered buffer to device,
 * nothing else).
 *
 * Devices: the real runtime (libcudart.so.13, .12, ...) or what
 * GST_PINNEDFLOW_CUDART names. Without a usable device it measures the host
 * side of (a)-(c) only (receive, the CPU copies each mode makes, release)
 * and says that no device figures exist. The cudart emulator of tests/cuda
 * is refused unless PFBENCH_ALLOW_EMULATOR=1; then every line is marked
 * "emulator, not GPU performance" (its copies are memcpy on a CPU thread
 * after an artificial delay).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pinnedflow/pf-cuda.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-node-cuda.h>
#include <pinnedflow/pf-upload.h>

#include "bench-util.h"

#define W 1920
#define H 1080
#define BPP 4
#define FRAME_BYTES ((size_t) W * H * BPP)
#define N_SLOTS 4
#define RAW_REPS 60

typedef struct
{
  const char *name;
  const char *how;
  unsigned int frames;
  int host_copies;              /* CPU copies of the frame per frame */
  double lat_p50, lat_p99;      /* us, send -> on device */
  double copy_p50;              /* us, the copy work alone */
  double cpu_us;                /* consumer CPU per frame */
  double gbs;                   /* FRAME_BYTES / copy_p50 */
} result;

/* What runs the device side: NULL = nothing (host side only). */
static const pf_cuda_runtime *rt;
static const char *tag = "";
static char sock_dir[] = "/tmp/pf-bench-dora-XXXXXX";

static double
pct_us (uint64_t * v, unsigned int n, double pct)
{
  unsigned int i;

  if (n == 0)
    return 0;
  bench_sort_u64 (v, n);
  i = (unsigned int) (pct * (n - 1) + 0.5);
  return v[i] / 1000.0;
}

static double
cpu_now_us (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec +
      ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
}

/* ------------------------------------------------------------ consumer */

typedef struct
{
  /* device side (rt != NULL) */
  void *dev;
  size_t pitch;
  pf_cuda_stream stream;
  pf_cuda_event event;
  uint8_t *pinned;              /* (b): registered private buffer */
  pf_uploader *up;              /* (c) */
  /* host side only: (b)'s private buffer, not registered */
  uint8_t *priv;
} consumer_ctx;

/* One frame through mode @mode; the frame is released here or by the
 * engine. Returns the time the frame is on the device (or the host work
 * is done), and the start of the copy work in *@t_copy. */
static int
handle_frame (consumer_ctx * cx, char mode, pf_node_frame * f,
    uint64_t * t_copy, uint64_t * t_done)
{
  pf_device_frame *d = NULL;
  int err = 0;

  *t_copy = pf_monotonic_ns ();
  switch (mode) {
    case 'a':
      if (rt)
        err = rt->Memcpy2D (cx->dev, cx->pitch, f->data,
            (size_t) f->layout.plane_stride[0], (size_t) W * BPP, H,
            PF_CUDA_MEMCPY_HOST_TO_DEVICE);
      pf_node_frame_release (f);
      break;
    case 'b':
      memcpy (rt ? cx->pinned : cx->priv, f->data, FRAME_BYTES);
      pf_node_frame_release (f);
      if (rt) {
        err = rt->Memcpy2DAsync (cx->dev, cx->pitch, cx->pinned,
            (size_t) W * BPP, (size_t) W * BPP, H,
            PF_CUDA_MEMCPY_HOST_TO_DEVICE, cx->stream);
        if (err == 0)
          err = rt->EventRecord (cx->event, cx->stream);
        if (err == 0)
          err = rt->EventSynchronize (cx->event);
      }
      break;
    case 'c':
      if (rt) {
        err = pf_node_frame_upload (cx->up, f, -1, &d);
        if (err < 0) {
          pf_node_frame_release (f);
          break;
        }
        err = rt->EventSynchronize (d->event);
        pf_device_frame_release (d);
      } else {
        pf_node_frame_release (f);
      }
      break;
  }
  *t_done = pf_monotonic_ns ();
  return err;
}

static int
run_mode (result * r, consumer_ctx * cx, char mode, unsigned int frames)
{
  char path[128];
  pf_node_consumer *c = NULL;
  pf_node_frame *f;
  uint64_t *lat = calloc (frames, sizeof (uint64_t));
  uint64_t *copy = calloc (frames, sizeof (uint64_t));
  unsigned int n = 0;
  double cpu0, cpu1;
  pid_t pid;
  int status = 0, res = 0;

  snprintf (path, sizeof (path), "%s/%c.sock", sock_dir, mode);
  pid = fork ();
  if (pid == 0)
    bench_node_producer (path, N_SLOTS, W, H, frames, 1);
  if (pf_node_consumer_new (path, 10000, &c) < 0) {
    fprintf (stderr, "mode %c: cannot connect\n", mode);
    res = -1;
    goto done;
  }
  cpu0 = cpu_now_us ();
  while (n < frames && (res = pf_node_consumer_next (c, 10000, &f)) == 1) {
    uint64_t sent = f->send_time, t_copy, t_done;

    if (handle_frame (cx, mode, f, &t_copy, &t_done) != 0) {
      fprintf (stderr, "mode %c: frame %u: copy failed\n", mode, n);
      res = -1;
      break;
    }
    lat[n] = t_done - sent;
    copy[n] = t_done - t_copy;
    n++;
  }
  if (cx->up)
    pf_uploader_flush (cx->up);
  cpu1 = cpu_now_us ();
  pf_node_consumer_free (c);
  r->frames = n;
  r->cpu_us = n ? (cpu1 - cpu0) / n : 0;
  r->lat_p50 = pct_us (lat, n, 0.50);
  r->lat_p99 = pct_us (lat, n, 0.99);
  r->copy_p50 = pct_us (copy, n, 0.50);
  r->gbs = r->copy_p50 > 0 ? FRAME_BYTES / (r->copy_p50 * 1e3) : 0;
  res = n == frames ? 0 : -1;
done:
  waitpid (pid, &status, 0);
  free (lat);
  free (copy);
  return res;
}

/* ------------------------------------------------------------ baseline */

/* Raw pinned cudaMemcpy2D of one frame, registered buffer to device,
 * RAW_REPS times: the copy's p50 in us. */
static double
raw_pinned_us (consumer_ctx * cx)
{
  uint64_t t[RAW_REPS];
  unsigned int i;

  for (i = 0; i < RAW_REPS; i++) {
    uint64_t t0 = pf_monotonic_ns ();
    if (rt->Memcpy2D (cx->dev, cx->pitch, cx->pinned, (size_t) W * BPP,
            (size_t) W * BPP, H, PF_CUDA_MEMCPY_HOST_TO_DEVICE) != 0)
      return 0;
    t[i] = pf_monotonic_ns () - t0;
  }
  return pct_us (t, RAW_REPS, 0.50);
}

static int
device_setup (consumer_ctx * cx)
{
  pf_uploader_config cfg = { 0 };

  if (rt->MallocPitch (&cx->dev, &cx->pitch, (size_t) W * BPP, H) != 0
      || posix_memalign ((void **) &cx->pinned, 4096, FRAME_BYTES) != 0)
    return -1;
  memset (cx->pinned, 0x5a, FRAME_BYTES);
  if (rt->HostRegister (cx->pinned, FRAME_BYTES,
          PF_CUDA_HOST_REGISTER_PORTABLE) != 0)
    return -1;
  if (rt->StreamCreateWithFlags (&cx->stream, PF_CUDA_STREAM_NON_BLOCKING)
      != 0 || rt->EventCreateWithFlags (&cx->event,
          PF_CUDA_EVENT_BLOCKING_SYNC | PF_CUDA_EVENT_DISABLE_TIMING) != 0)
    return -1;
  cfg.max_inflight = 2;
  cfg.pool_size = 2;
  if (pf_uploader_new (&cfg, &cx->up, NULL, 0) < 0) {
    fprintf (stderr, "pf_uploader_new: %s\n", pf_cuda_runtime_error ());
    return -1;
  }
  return 0;
}

static void
device_teardown (consumer_ctx * cx)
{
  pf_uploader_free (cx->up);
  cx->up = NULL;
  if (cx->event)
    rt->EventDestroy (cx->event);
  if (cx->stream)
    rt->StreamDestroy (cx->stream);
  if (cx->pinned) {
    rt->HostUnregister (cx->pinned);
    free (cx->pinned);
  }
  if (cx->dev)
    rt->Free (cx->dev);
}

/* ------------------------------------------------------------ main */

static void
print_row (const result * r, double raw_us)
{
  double raw_gbs = raw_us > 0 ? FRAME_BYTES / (raw_us * 1e3) : 0;

  if (rt) {
    printf ("| %s | %-44s | %6u | %6d | %8.0f | %8.0f | %8.0f | %6.2f | "
        "%8.1f | %6.2f | %6.2f |%s\n", r->name, r->how, r->frames,
        r->host_copies, r->lat_p50, r->lat_p99, r->copy_p50, r->gbs,
        r->cpu_us, raw_us > 0 ? r->copy_p50 / raw_us : 0,
        raw_gbs > 0 ? r->gbs / raw_gbs : 0, tag);
  } else {
    printf ("| %s | %-44s | %6u | %6d | %8.0f | %8.1f |\n", r->name, r->how,
        r->frames, r->host_copies, r->copy_p50, r->cpu_us);
  }
}

int
main (int argc, char **argv)
{
  unsigned int frames = argc > 1 ? (unsigned int) atoi (argv[1]) : 90;
  const char *allow = getenv ("PFBENCH_ALLOW_EMULATOR");
  consumer_ctx cx = { 0 };
  result res[3] = {
    {"(a)", "pageable cudaMemcpy2D from the shared mapping", 0, 0},
    {"(b)", "memcpy to private pinned buffer, then copy", 0, 1},
    {"(c)", "pinned segment + pf_uploader (async DMA)", 0, 0},
  };
  char msg[1024] = "";
  double raw_us = 0;
  int r, i, failed = 0;

  if (frames == 0)
    frames = 90;
  if (mkdtemp (sock_dir) == NULL) {
    perror ("mkdtemp");
    return 1;
  }
  r = pf_cuda_runtime_open_device (0, &rt, NULL, 0);
  if (r < 0) {
    rt = NULL;
    snprintf (msg, sizeof (msg), "%s", pf_cuda_runtime_error ());
  } else if (strstr (rt->library, "pfemu") != NULL) {
    if (allow == NULL || strcmp (allow, "1") != 0) {
      snprintf (msg, sizeof (msg), "GST_PINNEDFLOW_CUDART names the cudart "
          "emulator (%s); set PFBENCH_ALLOW_EMULATOR=1 to run through it",
          rt->library);
      rt = NULL;
    } else {
      tag = " emulator, not GPU performance";
    }
  }

  printf ("dora #1872 workload: 1080p RGBA (%zu bytes/frame) at 30 Hz, %u "
      "frames per mode, producer and consumer nodes in two processes, %d "
      "slots\n", FRAME_BYTES, frames, N_SLOTS);
  if (rt == NULL) {
    printf ("NO CUDA DEVICE: %s\n", msg);
    printf ("No device figures exist from this run: it measures the host side "
        "of (a)-(c) only (receive, the CPU copies each mode makes, release). "
        "(a)'s pageable copy is staged by the driver inside "
        "cudaMemcpy, which is not run here; (b)'s memcpy into a private "
        "buffer is; (c) makes no CPU copy.\n\n");
    cx.priv = malloc (FRAME_BYTES);
    if (cx.priv == NULL)
      return 1;
    memset (cx.priv, 0, FRAME_BYTES);
    for (i = 0; i < 3; i++)
      if (run_mode (&res[i], &cx, "abc"[i], frames) < 0)
        failed = 1;
    free (cx.priv);
    printf ("| mode | path | frames | CPU copies/frame | host work p50 us | "
        "consumer CPU us/frame |\n|---|---|---|---|---|---|\n");
    for (i = 0; i < 3; i++)
      print_row (&res[i], 0);
    if (res[0].cpu_us > 0)
      printf ("\nconsumer CPU per frame relative to (a)'s host side: (b) "
          "%.2fx, (c) %.2fx (host side only; no device figures)\n",
          res[1].cpu_us / res[0].cpu_us, res[2].cpu_us / res[0].cpu_us);
    rmdir (sock_dir);
    return failed;
  }

  if (device_setup (&cx) < 0) {
    fprintf (stderr, "device setup failed\n");
    return 1;
  }
  printf ("runtime %s (version %d), device 0\n", rt->library,
      rt->runtime_version);
  if (*tag)
    printf ("EMULATOR: every figure below is the CPU emulator's, not GPU "
        "performance\n");
  raw_us = raw_pinned_us (&cx);
  printf ("baseline raw pinned cudaMemcpy2D of one frame: p50 %.0f us, "
      "%.2f GB/s%s\n\n", raw_us, raw_us > 0 ? FRAME_BYTES / (raw_us * 1e3) : 0,
      tag);
  for (i = 0; i < 3; i++)
    if (run_mode (&res[i], &cx, "abc"[i], frames) < 0)
      failed = 1;
  {
    pf_uploader_stats st;

    /* (c) is DMA only where the consumer's read-only mapping could be
     * registered (cudaHostRegisterReadOnly); else the engine staged it */
    pf_uploader_get_stats (cx.up, &st);
    if (st.frames > 0 && st.staged_copies > 0)
      res[2].host_copies = 1;
    printf ("(c) engine: %" PRIu64 " frames, %" PRIu64 " by DMA from the "
        "registered segment, %" PRIu64 " staged through its bounce slots, %"
        PRIu64 " pageable%s\n\n", st.frames, st.pinned_copies,
        st.staged_copies, st.pageable_copies, tag);
  }
  printf ("| mode | path | frames | CPU copies/frame | latency to device p50 "
      "us | p99 us | copy p50 us | GB/s | consumer CPU us/frame | copy time "
      "/ raw pinned | GB/s / raw pinned |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (i = 0; i < 3; i++)
    print_row (&res[i], raw_us);
  printf ("\nlatency p50 (a)/(c) %.2f, (b)/(c) %.2f; consumer CPU per frame "
      "(a)/(c) %.2f, (b)/(c) %.2f%s\n",
      res[2].lat_p50 > 0 ? res[0].lat_p50 / res[2].lat_p50 : 0,
      res[2].lat_p50 > 0 ? res[1].lat_p50 / res[2].lat_p50 : 0,
      res[2].cpu_us > 0 ? res[0].cpu_us / res[2].cpu_us : 0,
      res[2].cpu_us > 0 ? res[1].cpu_us / res[2].cpu_us : 0, tag);
  device_teardown (&cx);
  rmdir (sock_dir);
  return failed;
}
