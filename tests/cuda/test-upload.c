/* pinnedflow tests: the upload engine (pf_uploader) and the node upload
 * API (pf_node_frame_upload), against the cudart emulator
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rules checked, one case each (argv[1]):
 *   bytes      device frames are byte-exact (read back with a D2H copy),
 *              for packed and planar layouts with padded host strides, from
 *              a registered segment by DMA (no staging)
 *   late       the host frame is released only after the copy's event: the
 *              emulator completes copies late (PFEMU_COPY_DELAY_US), the
 *              release callback scribbles over the source, so a release
 *              before the copy ran shows up as wrong device bytes; the
 *              event is complete when the callback runs
 *   pool       the device pool is bounded: pool_size frames out, the next
 *              upload times out, a release lets it through
 *   inflight   max_inflight is respected (poll mode: the submit that finds
 *              the ring full completes the oldest itself)
 *   staged     memory outside any segment is staged through the engine's
 *              registered bounce slots and given back at once, bytes exact
 *   shared     the element's registration (gst_pinned_cuda_segment_register)
 *              and the engine's are one: a segment registered through one is
 *              not registered again through the other
 *   sticky     an asynchronous copy fault reaches the release callback as
 *              -EIO and fails every later submit with the same message
 *   node       pf_node_frame_upload: a producer node's frames onto the
 *              device byte-exact; the producer gets its slot back only after
 *              the copy, the consumer holds nothing at the end
 *   reuse      the documented consumer loop (issue 22, defect 4): frame N
 *              is read late on the consumer's own stream (named as
 *              __dlpack__(stream=) names it, pf_dlpack_sync_device_frame),
 *              the device frame released as soon as the read is queued,
 *              frame N+1 uploaded at once into the same buffer: every read
 *              returns frame N's bytes and no reader saw its memory change
 *              (the emulator's late reader, pfemu_stream_read)
 *   readers    pf_device_frame_read_on: two streams reading one frame,
 *              both waited for; a reallocation and the engine's end wait
 *              for the readers before cudaFree (no reader faults); a stream
 *              named twice is one reader; at most
 *              PF_DEVICE_FRAME_MAX_READERS; a released frame is refused
 *   defaults   pf_device_frame_read_on with the default streams, each made
 *              to wait: NULL and PF_CUDA_STREAM_LEGACY (__dlpack__(stream=
 *              None / 1), torch's and CuPy's default) and
 *              PF_CUDA_STREAM_PER_THREAD (stream=2); a late read queued
 *              there, the frame released at once, the next upload into the
 *              one pool buffer waits for that read (bytes of the read
 *              frame's, no read overwritten, one reader wait each)
 *   errors     GST_PINNEDFLOW_CUDART naming a missing library: -ENOENT and
 *              "Could not load the CUDA runtime"; a runtime answering 35
 *              (no driver): -ENODEV naming cudaErrorInsufficientDriver (35);
 *              no device: -ENODEV
 *   reuse-hostfunc, readers-hostfunc, defaults-hostfunc
 *              the same three with the reader a GPU runs too: a host
 *              function that sleeps on the reader's stream
 *              (cudaLaunchHostFunc), then a D2H copy of the frame into
 *              page-locked memory; a buffer rewritten before the reader's
 *              turn gives the next frame's bytes
 *   real       the real runtime (no GST_PINNEDFLOW_CUDART): on a machine
 *              without a driver -ENODEV with error 35 (or -ENOENT where no
 *              libcudart is installed); with a device, 'bytes', 'staged'
 *              and the three *-hostfunc cases on it, unchanged
 *              (UPLOAD_REAL_CUDART=path: that runtime instead of the
 *              default, as upload-real-rehearsal runs it on the emulator)
 * Every emulated case ends with nothing of the emulator's alive (no
 * registration, allocation, stream or event leaked).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dlfcn.h>
#include <sched.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pinnedflow/pf-cuda.h>
#include <pinnedflow/pf-cuda-registration.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-node-cuda.h>
#include <pinnedflow/pf-dlpack.h>
#include <pinnedflow/pf-upload.h>
#include <gst/pinnedcuda/gstpinnedcudaregistration.h>

#include "pf-test-util.h"

/* ------------------------------------------------------------ emulator */

static long (*emu_query) (const char *);
static void (*emu_reset) (void);
static long (*emu_live_total) (void);
static const char *(*emu_leak_report) (void);
static int (*emu_stream_read) (void *, const void *, size_t, size_t, size_t,
    void *, long);

/* the late readers are the portable ones (read_late) */
static int portable_reads;

static int
emulated (void)
{
  const char *m = getenv ("PINNEDFLOW_CUDA_MODE");
  return m == NULL || strcmp (m, "real") != 0;
}

static void
emu_open (void)
{
  const char *path = getenv ("GST_PINNEDFLOW_CUDART");
  void *h;

  CHECK_MSG (path != NULL, "GST_PINNEDFLOW_CUDART must name the emulator");
  h = dlopen (path, RTLD_NOW | RTLD_LOCAL);
  CHECK_MSG (h != NULL, "dlopen %s: %s", path, dlerror ());
  *(void **) (&emu_query) = dlsym (h, "pfemu_query");
  *(void **) (&emu_reset) = dlsym (h, "pfemu_reset");
  *(void **) (&emu_live_total) = dlsym (h, "pfemu_live_total");
  *(void **) (&emu_leak_report) = dlsym (h, "pfemu_leak_report");
  *(void **) (&emu_stream_read) = dlsym (h, "pfemu_stream_read");
  CHECK (emu_query && emu_reset && emu_live_total && emu_leak_report);
  emu_reset ();
}

#define EMU(name) emu_query (name)

static void
check_nothing_alive (void)
{
  if (!emulated ())
    return;
  CHECK_MSG (emu_live_total () == 0, "emulator objects alive: %s",
      emu_leak_report ());
}

/* The end of a case with one segment registered once: the engine freed,
 * then the segment, whose registration goes with it (before its unmap);
 * nothing left alive. */
static void
finish_registered (pf_uploader * up, pf_segment * seg)
{
  pf_uploader_free (up);
  pf_segment_unref (seg);
  if (emulated ())
    CHECK_INT (EMU ("unregistrations"), ==, 1);
  check_nothing_alive ();
}

/* ------------------------------------------------------------ helpers */

typedef struct
{
  int released;
  int status;
  /* scribbled over at release (what a producer reusing its slot does) */
  uint8_t *scribble;
  size_t scribble_len;
  /* checked at release: the copy's event must be complete */
  const pf_cuda_runtime *rt;
  pf_cuda_event event;
  int event_done_at_release;
} release_probe;

static void
probe_release (void *data, int status)
{
  release_probe *p = data;

  if (p->rt) {
    /* the device frame's event is known once pf_uploader_upload()
     * returned, which never waits for this frame's own release */
    while (__atomic_load_n (&p->event, __ATOMIC_SEQ_CST) == NULL)
      sched_yield ();
    p->event_done_at_release = p->rt->EventQuery (p->event) == PF_CUDA_SUCCESS;
  }
  if (p->scribble)
    memset (p->scribble, 0xEE, p->scribble_len);
  p->status = status;
  __atomic_add_fetch (&p->released, 1, __ATOMIC_SEQ_CST);
}

static uint8_t
pattern (unsigned int plane, unsigned int row, unsigned int col, unsigned n)
{
  return (uint8_t) (plane * 71 + row * 13 + col * 7 + n * 29 + 1);
}

/* A frame of @n_planes planes (rows[p] x row_bytes[p], stride
 * row_bytes + pad) at the start of @seg's mapping (or @mem). */
static void
fill_source (pf_upload_source * src, uint8_t * base, unsigned int n_planes,
    const uint32_t * rows, const uint32_t * row_bytes, size_t pad,
    unsigned int n)
{
  size_t off = 0;
  unsigned int p, r, c;

  memset (src, 0, sizeof (*src));
  src->n_planes = n_planes;
  for (p = 0; p < n_planes; p++) {
    size_t stride = row_bytes[p] + pad;
    src->plane_data[p] = base + off;
    src->plane_stride[p] = stride;
    src->plane_rows[p] = rows[p];
    src->plane_row_bytes[p] = row_bytes[p];
    for (r = 0; r < rows[p]; r++) {
      for (c = 0; c < row_bytes[p]; c++)
        base[off + r * stride + c] = pattern (p, r, c, n);
      memset (base + off + r * stride + row_bytes[p], 0xAA, pad);
    }
    off += stride * rows[p];
  }
}

static size_t
source_packed (const pf_upload_source * src)
{
  size_t s = 0;
  unsigned int p;

  for (p = 0; p < src->n_planes; p++)
    s += (size_t) src->plane_rows[p] * src->plane_row_bytes[p];
  return s;
}

/* Reads @d back and compares with pattern(n). */
static void
check_device_bytes (const pf_device_frame * d, unsigned int n)
{
  size_t size = 0, off = 0;
  uint8_t *buf;
  unsigned int p, r, c;

  for (p = 0; p < d->n_planes; p++)
    size += (size_t) d->plane_rows[p] * d->plane_row_bytes[p];
  buf = malloc (size);
  CHECK (buf != NULL);
  CHECK_INT (pf_device_frame_download (d, buf, size), ==, 0);
  CHECK_INT (pf_device_frame_download (d, buf, size - 1), ==, -ENOSPC);
  for (p = 0; p < d->n_planes; p++) {
    for (r = 0; r < d->plane_rows[p]; r++)
      for (c = 0; c < d->plane_row_bytes[p]; c++)
        CHECK_MSG (buf[off + r * d->plane_row_bytes[p] + c] ==
            pattern (p, r, c, n), "frame %u plane %u row %u col %u: %u, "
            "expected %u", n, p, r, c, buf[off + r * d->plane_row_bytes[p] +
                c], pattern (p, r, c, n));
    off += (size_t) d->plane_rows[p] * d->plane_row_bytes[p];
  }
  free (buf);
}

static pf_uploader *
new_uploader (unsigned int max_inflight, unsigned int pool_size,
    unsigned int flags)
{
  pf_uploader_config cfg = { 0 };
  pf_uploader *up = NULL;
  char msg[1024] = "";
  int res;

  cfg.max_inflight = max_inflight;
  cfg.pool_size = pool_size;
  cfg.flags = flags;
  res = pf_uploader_new (&cfg, &up, msg, sizeof (msg));
  CHECK_MSG (res == 0, "pf_uploader_new: %d %s", res, msg);
  return up;
}

/* I420-like odd geometry: 3 planes. */
static const uint32_t i420_rows[3] = { 37, 19, 19 };
static const uint32_t i420_bytes[3] = { 61, 31, 31 };
static const uint32_t rgba_rows[1] = { 48 };
static const uint32_t rgba_bytes[1] = { 64 * 4 };

/* ------------------------------------------------------------ cases */

static void
run_bytes (void)
{
  pf_uploader *up = new_uploader (2, 3, 0);
  pf_uploader_stats st;
  pf_segment *seg;
  unsigned int n;

  CHECK_INT (pf_segment_new ("test-upload", 1 << 20, 0, &seg), ==, 0);
  for (n = 0; n < 8; n++) {
    pf_upload_source src;
    pf_upload_result res;
    pf_device_frame *d = NULL;
    int planar = n % 2;
    release_probe probe = { 0 };

    fill_source (&src, pf_segment_get_base (seg), planar ? 3 : 1,
        planar ? i420_rows : rgba_rows, planar ? i420_bytes : rgba_bytes,
        n * 3, n);
    src.segments[0] = seg;
    src.n_segments = 1;
    src.release = probe_release;
    src.release_data = &probe;
    CHECK_INT (pf_uploader_upload (up, &src, -1, &d, &res), ==, 0);
    CHECK (d != NULL && d->n_planes == src.n_planes);
    CHECK (!res.staged);
    CHECK_INT (res.registered_now, ==, n == 0);
    CHECK (d->pitch >= src.plane_row_bytes[0] && d->event != NULL);
    CHECK (d->stream == pf_uploader_get_stream (up));
    check_device_bytes (d, n);
    /* the source goes back (its segment is reused by the next frame) */
    CHECK_INT (pf_uploader_flush (up), ==, 0);
    CHECK_INT (probe.released, ==, 1);
    CHECK_INT (probe.status, ==, 0);
    pf_device_frame_release (d);
  }
  pf_uploader_get_stats (up, &st);
  CHECK_INT (st.frames, ==, 8);
  CHECK_INT (st.pinned_copies, ==, 8);
  CHECK_INT (st.staged_copies, ==, 0);
  CHECK_INT (st.registrations, ==, 1);
  if (emulated ()) {
    CHECK_INT (EMU ("registrations"), ==, 1);
    CHECK_INT (EMU ("copies.pageable"), ==, 0);
    CHECK_INT (EMU ("copies.pinned"), ==, 4 * 1 + 4 * 3);
    /* the geometry changed every frame: buffers were reallocated, never
     * freed while a copy into them was pending */
    CHECK_INT (EMU ("free.pending"), ==, 0);
  }
  finish_registered (up, seg);
}

static void
run_late (void)
{
  pf_uploader *up = new_uploader (3, 4, 0);
  const pf_cuda_runtime *rt = pf_uploader_get_runtime (up);
  pf_segment *seg;
  release_probe probe[6];
  pf_device_frame *d[6];
  size_t slot = 64 * 1024;
  unsigned int n;

  CHECK_INT (pf_segment_new ("test-upload-late", slot * 6, 0, &seg), ==, 0);
  memset (probe, 0, sizeof (probe));
  for (n = 0; n < 6; n++) {
    pf_upload_source src;
    uint8_t *base = (uint8_t *) pf_segment_get_base (seg) + n * slot;

    fill_source (&src, base, 1, rgba_rows, rgba_bytes, 0, n);
    src.segments[0] = seg;
    src.n_segments = 1;
    src.release = probe_release;
    src.release_data = &probe[n];
    probe[n].scribble = base;
    probe[n].scribble_len = source_packed (&src);
    probe[n].rt = rt;
    CHECK_INT (pf_uploader_upload (up, &src, -1, &d[n], NULL), ==, 0);
    __atomic_store_n (&probe[n].event, d[n]->event, __ATOMIC_SEQ_CST);
    /* frames 3.. waited for a free buffer or in-flight slot: release the
     * oldest device frame once checked below */
    if (n >= 3) {
      check_device_bytes (d[n - 3], n - 3);
      pf_device_frame_release (d[n - 3]);
    }
  }
  CHECK_INT (pf_uploader_flush (up), ==, 0);
  for (n = 0; n < 6; n++) {
    CHECK_INT (probe[n].released, ==, 1);
    CHECK_MSG (probe[n].event_done_at_release, "frame %u released before "
        "its copy's event completed", n);
  }
  for (n = 3; n < 6; n++) {
    check_device_bytes (d[n], n);
    pf_device_frame_release (d[n]);
  }
  if (emulated ())
    CHECK_INT (EMU ("copies.pinned"), ==, 6);
  pf_uploader_free (up);
  pf_segment_unref (seg);
  check_nothing_alive ();
}

static void
run_pool (void)
{
  pf_uploader *up = new_uploader (2, 2, 0);
  pf_uploader_stats st;
  pf_device_frame *d[3] = { NULL, NULL, NULL };
  pf_segment *seg;
  pf_upload_source src;
  unsigned int n;

  CHECK_INT (pf_segment_new ("test-upload-pool", 1 << 16, 0, &seg), ==, 0);
  fill_source (&src, pf_segment_get_base (seg), 1, rgba_rows, rgba_bytes, 0, 7);
  src.segments[0] = seg;
  src.n_segments = 1;
  for (n = 0; n < 2; n++)
    CHECK_INT (pf_uploader_upload (up, &src, 0, &d[n], NULL), ==, 0);
  CHECK_INT (pf_uploader_upload (up, &src, 0, &d[2], NULL), ==, -ETIMEDOUT);
  CHECK_INT (pf_uploader_upload (up, &src, 20, &d[2], NULL), ==, -ETIMEDOUT);
  CHECK (d[2] == NULL);
  pf_device_frame_release (d[0]);
  CHECK_INT (pf_uploader_upload (up, &src, 0, &d[2], NULL), ==, 0);
  check_device_bytes (d[2], 7);
  /* the engine outlives pf_uploader_free() while frames are out */
  pf_uploader_get_stats (up, &st);
  CHECK_INT (st.pool_out_max, ==, 2);
  CHECK_INT (st.pool_waits, >=, 1);
  pf_uploader_free (up);
  check_device_bytes (d[1], 7);
  pf_device_frame_release (d[1]);
  if (emulated ())
    CHECK_INT (EMU ("live.allocations"), >, 0);
  pf_device_frame_release (d[2]);
  pf_segment_unref (seg);
  check_nothing_alive ();
}

static void
run_inflight (void)
{
  pf_uploader *up = new_uploader (2, 4, PF_UPLOADER_NO_THREAD);
  pf_uploader_stats st;
  pf_segment *seg;
  release_probe probe[5];
  pf_device_frame *d[5];
  size_t slot = 64 * 1024;
  unsigned int n;

  memset (probe, 0, sizeof (probe));
  CHECK_INT (pf_segment_new ("test-upload-inflight", slot * 5, 0, &seg), ==, 0);
  for (n = 0; n < 5; n++) {
    pf_upload_source src;
    pf_upload_dest dest;
    pf_upload_result res;
    /* caller-owned destination: a device frame of an earlier upload would
     * do, here a second engine-independent allocation through the
     * runtime */
    const pf_cuda_runtime *rt = pf_uploader_get_runtime (up);
    void *dev = NULL;
    size_t pitch = 0;

    fill_source (&src, (uint8_t *) pf_segment_get_base (seg) + n * slot, 1,
        rgba_rows, rgba_bytes, 4, n);
    src.segments[0] = seg;
    src.n_segments = 1;
    src.release = probe_release;
    src.release_data = &probe[n];
    if (n == 4) {
      /* pf_uploader_submit into memory of the caller's */
      CHECK_INT (rt->MallocPitch (&dev, &pitch, rgba_bytes[0], rgba_rows[0]),
          ==, 0);
      memset (&dest, 0, sizeof (dest));
      dest.plane_ptr[0] = dev;
      dest.plane_pitch[0] = pitch;
      CHECK_INT (pf_uploader_submit (up, &src, &dest, &res), ==, 0);
      CHECK_INT (res.inflight, <=, 2);
      CHECK_INT (pf_uploader_poll (up, -1), ==, 0);
      CHECK_INT (probe[4].released, ==, 1);
      {
        uint8_t *buf = malloc (rgba_bytes[0] * rgba_rows[0]);
        unsigned int r, c;
        CHECK_INT (rt->Memcpy2D (buf, rgba_bytes[0], dev, pitch,
                rgba_bytes[0], rgba_rows[0], PF_CUDA_MEMCPY_DEVICE_TO_HOST),
            ==, 0);
        for (r = 0; r < rgba_rows[0]; r++)
          for (c = 0; c < rgba_bytes[0]; c++)
            CHECK (buf[r * rgba_bytes[0] + c] == pattern (0, r, c, 4));
        free (buf);
      }
      CHECK_INT (rt->Free (dev), ==, 0);
      break;
    }
    CHECK_INT (pf_uploader_upload (up, &src, 0, &d[n], &res), ==, 0);
    CHECK_INT (res.inflight, <=, 2);
    CHECK_INT (pf_uploader_get_inflight (up), <=, 2);
    if (n == 2) {
      /* the ring was full: this submit completed the oldest itself */
      CHECK (res.waited_full);
      CHECK_INT (probe[0].released, ==, 1);
    }
    /* no release thread: nothing is released behind the caller's back
     * except by its own calls */
    if (n < 2)
      CHECK_INT (probe[n].released, ==, 0);
  }
  CHECK_INT (pf_uploader_poll (up, -1), ==, 0);
  for (n = 0; n < 5; n++)
    CHECK_INT (probe[n].released, ==, 1);
  pf_uploader_get_stats (up, &st);
  CHECK_INT (st.inflight_max, ==, 2);
  CHECK_INT (st.waits_full, >=, 2);
  for (n = 0; n < 4; n++) {
    check_device_bytes (d[n], n);
    pf_device_frame_release (d[n]);
  }
  pf_uploader_free (up);
  pf_segment_unref (seg);
  check_nothing_alive ();
}

static void
run_staged (void)
{
  pf_uploader *up = new_uploader (2, 2, 0);
  pf_uploader_stats st;
  unsigned int n;
  uint8_t *mem = malloc (1 << 16);

  CHECK (mem != NULL);
  for (n = 0; n < 4; n++) {
    pf_upload_source src;
    pf_upload_result res;
    pf_device_frame *d = NULL;
    release_probe probe = { 0 };

    fill_source (&src, mem, 3, i420_rows, i420_bytes, 5, n);
    src.release = probe_release;
    src.release_data = &probe;
    CHECK_INT (pf_uploader_upload (up, &src, -1, &d, &res), ==, 0);
    CHECK (res.staged);
    /* staged: nothing reads the source after the CPU copy */
    CHECK_INT (probe.released, ==, 1);
    memset (mem, 0xEE, 1 << 16);
    check_device_bytes (d, n);
    pf_device_frame_release (d);
  }
  pf_uploader_get_stats (up, &st);
  CHECK_INT (st.staged_copies, ==, 4);
  CHECK_INT (st.pinned_copies, ==, 0);
  CHECK_INT (st.pageable_copies, ==, 0);
  CHECK (pf_uploader_get_bounce_warning (up) == NULL);
  if (emulated ()) {
    /* the bounce segment, once */
    CHECK_INT (EMU ("registrations"), ==, 1);
    CHECK_INT (EMU ("copies.pageable"), ==, 0);
  }
  pf_uploader_free (up);
  free (mem);
  check_nothing_alive ();
}

static void
run_shared (void)
{
  pf_uploader *up = new_uploader (2, 2, 0);
  const pf_cuda_runtime *rt = pf_uploader_get_runtime (up);
  const GstPinnedCudaRuntime *grt;
  const GstPinnedCudaRegistration *greg;
  pf_upload_source src;
  pf_upload_result res;
  pf_device_frame *d;
  pf_segment *seg;
  gboolean created = FALSE;
  GError *error = NULL;

  gst_init (NULL, NULL);

  /* one loader: the GStreamer library hands out the same table */
  grt = gst_pinned_cuda_runtime_get (&error);
  CHECK (grt != NULL);
  CHECK ((const void *) grt == (const void *) rt);

  CHECK_INT (pf_segment_new ("test-upload-shared", 1 << 16, 0, &seg), ==, 0);
  CHECK (pf_cuda_segment_get_registration (seg) == NULL);
  greg = gst_pinned_cuda_segment_register (grt, 0, seg, &created);
  CHECK (created && greg->registered);
  CHECK ((const void *) greg == (const void *) pf_cuda_segment_get_registration
      (seg));

  fill_source (&src, pf_segment_get_base (seg), 1, rgba_rows, rgba_bytes, 0, 3);
  src.segments[0] = seg;
  src.n_segments = 1;
  CHECK_INT (pf_uploader_upload (up, &src, -1, &d, &res), ==, 0);
  CHECK (!res.staged && !res.registered_now);
  check_device_bytes (d, 3);
  pf_device_frame_release (d);
  if (emulated ())
    CHECK_INT (EMU ("registrations"), ==, 1);
  finish_registered (up, seg);
}

static void
run_sticky (void)
{
  pf_uploader *up;
  pf_segment *seg;
  release_probe probe[3];
  pf_device_frame *d[3] = { NULL, NULL, NULL };
  pf_upload_result res;
  unsigned int n;
  int r;

  /* the second cudaMemcpy2DAsync faults when it runs */
  setenv ("PFEMU_FAIL", "Memcpy2DAsync:2:700:async", 1);
  emu_reset ();
  up = new_uploader (2, 3, 0);
  memset (probe, 0, sizeof (probe));
  CHECK_INT (pf_segment_new ("test-upload-sticky", 1 << 18, 0, &seg), ==, 0);
  for (n = 0; n < 2; n++) {
    pf_upload_source src;
    fill_source (&src, (uint8_t *) pf_segment_get_base (seg) + n * 65536, 1,
        rgba_rows, rgba_bytes, 0, n);
    src.segments[0] = seg;
    src.n_segments = 1;
    src.release = probe_release;
    src.release_data = &probe[n];
    CHECK_INT (pf_uploader_upload (up, &src, -1, &d[n], NULL), ==, 0);
  }
  CHECK_INT (pf_uploader_flush (up), ==, -EIO);
  CHECK_INT (probe[0].released, ==, 1);
  CHECK_INT (probe[0].status, ==, 0);
  CHECK_INT (probe[1].released, ==, 1);
  CHECK_INT (probe[1].status, ==, -EIO);
  CHECK (pf_uploader_get_error (up) != NULL);
  CHECK_MSG (strstr (pf_uploader_get_error (up), "cudaEventSynchronize") &&
      strstr (pf_uploader_get_error (up), "(700)"), "%s",
      pf_uploader_get_error (up));
  {
    pf_upload_source src;
    fill_source (&src, (uint8_t *) pf_segment_get_base (seg) + 2 * 65536, 1,
        rgba_rows, rgba_bytes, 0, 2);
    src.release = probe_release;
    src.release_data = &probe[2];
    r = pf_uploader_upload (up, &src, -1, &d[2], &res);
  }
  CHECK_INT (r, ==, -EIO);
  CHECK (res.sticky && res.cuda_error == 700);
  CHECK_INT (probe[2].released, ==, 0);
  CHECK (d[2] == NULL);
  pf_device_frame_release (d[0]);
  pf_device_frame_release (d[1]);
  pf_uploader_free (up);
  pf_segment_unref (seg);
  unsetenv ("PFEMU_FAIL");
  emu_reset ();
  check_nothing_alive ();
}

static void
run_node (void)
{
  char dir[256], path[300];
  pf_node_producer_config cfg = { 0 };
  pf_node_producer *p = NULL;
  pf_node_consumer *c = NULL;
  pf_uploader *up;
  const unsigned int W = 64, H = 48;
  unsigned int n;

  CHECK_INT (pf_test_make_tmpdir (dir, sizeof (dir), "pf-upload"), ==, 0);
  snprintf (path, sizeof (path), "%s/node.sock", dir);
  cfg.socket_path = path;
  cfg.n_slots = 3;
  cfg.slot_size = W * H * 4;
  CHECK_INT (pf_node_producer_new (&cfg, &p), ==, 0);
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  CHECK_INT (pf_node_consumer_new (path, 5000, &c), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, 1, 10000), ==, 0);
  up = new_uploader (2, 2, PF_UPLOADER_NO_THREAD);

  for (n = 0; n < 6; n++) {
    pf_node_loan loan;
    pf_node_frame *f = NULL;
    pf_device_frame *d = NULL;
    unsigned int r, col;
    int res;

    CHECK_INT (pf_node_producer_loan_video (p, 5000, &loan), ==, 0);
    for (r = 0; r < H; r++)
      for (col = 0; col < W * 4; col++)
        ((uint8_t *) loan.data)[loan.layout.plane_offset[0] +
            r * loan.layout.plane_stride[0] + col] = pattern (0, r, col, n);
    CHECK_INT (pf_node_producer_publish (p, &loan), ==, 1);
    res = pf_node_consumer_next (c, 10000, &f);
    CHECK_MSG (res == 1, "next: %d %s", res, pf_node_consumer_get_error (c));
    CHECK_INT (pf_node_frame_cuda_registered (f), ==, n > 0);
    CHECK_INT (pf_node_frame_upload (up, f, -1, &d), ==, 0);
    /* f belongs to the engine now, held until the copy completed */
    CHECK_INT (pf_node_consumer_get_held (c), ==, 1);
    CHECK (d->width == W && d->height == H && strcmp (d->format, "RGBA") == 0);
    CHECK (d->pixel_stride == 4 && d->n_planes == 1);
    CHECK (d->plane_row_bytes[0] == W * 4 && d->plane_rows[0] == H);
    check_device_bytes (d, n);
    CHECK_INT (pf_uploader_poll (up, -1), ==, 0);
    CHECK_INT (pf_node_consumer_get_held (c), ==, 0);
    pf_device_frame_release (d);
  }
  CHECK_INT (pf_node_producer_wait_idle (p, 10000), ==, 0);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, 3);
  if (emulated ()) {
    /* the producer's segment, mapped read-only here */
    CHECK_INT (EMU ("registrations"), ==, 1);
    CHECK_INT (EMU ("copies.pinned"), ==, 6);
  }
  pf_uploader_free (up);
  pf_node_consumer_free (c);
  pf_node_producer_free (p);
  pf_test_remove_tree (dir);
  check_nothing_alive ();
}

static void
run_errors (void)
{
  pf_uploader_config cfg = { 0 };
  pf_uploader *up = NULL;
  char msg[1024];
  char *emu = strdup (getenv ("GST_PINNEDFLOW_CUDART"));
  int res;

  setenv ("GST_PINNEDFLOW_CUDART", "/nonexistent/libcudart.so.12", 1);
  res = pf_uploader_new (&cfg, &up, msg, sizeof (msg));
  CHECK_INT (res, ==, -ENOENT);
  CHECK (up == NULL);
  CHECK_MSG (strstr (msg, "Could not load the CUDA runtime "
          "GST_PINNEDFLOW_CUDART=/nonexistent/libcudart.so.12") != NULL, "%s",
      msg);
  setenv ("GST_PINNEDFLOW_CUDART", emu, 1);

  setenv ("PFEMU_INSUFFICIENT_DRIVER", "1", 1);
  emu_reset ();
  res = pf_uploader_new (&cfg, &up, msg, sizeof (msg));
  CHECK_INT (res, ==, -ENODEV);
  CHECK_MSG (strstr (msg, "No usable CUDA device") &&
      strstr (msg, "cudaErrorInsufficientDriver (35)"), "%s", msg);
  unsetenv ("PFEMU_INSUFFICIENT_DRIVER");

  setenv ("PFEMU_DEVICE_COUNT", "0", 1);
  emu_reset ();
  CHECK_INT (pf_uploader_new (&cfg, &up, msg, sizeof (msg)), ==, -ENODEV);
  CHECK_MSG (strstr (msg, "CUDA device"), "%s", msg);
  unsetenv ("PFEMU_DEVICE_COUNT");
  emu_reset ();

  cfg.device_id = 3;
  CHECK_INT (pf_uploader_new (&cfg, &up, msg, sizeof (msg)), ==, -ENODEV);
  CHECK_MSG (strstr (msg, "No CUDA device 3"), "%s", msg);
  cfg.device_id = 0;
  cfg.max_inflight = 1000;
  CHECK_INT (pf_uploader_new (&cfg, &up, msg, sizeof (msg)), ==, -EINVAL);
  free (emu);
  check_nothing_alive ();
}

static void run_reuse (void);
static void run_readers (void);
static void run_defaults (void);

static void
run_real (void)
{
  pf_uploader_config cfg = { 0 };
  pf_uploader *up = NULL;
  char msg[2048] = "";
  int res;

  /* the default runtime; UPLOAD_REAL_CUDART names another (meson's
   * upload-real-rehearsal: the emulator, read as a real runtime) */
  if (getenv ("UPLOAD_REAL_CUDART"))
    setenv ("GST_PINNEDFLOW_CUDART", getenv ("UPLOAD_REAL_CUDART"), 1);
  else
    unsetenv ("GST_PINNEDFLOW_CUDART");
  res = pf_uploader_new (&cfg, &up, msg, sizeof (msg));
  if (res == 0) {
    pf_uploader_free (up);
    printf ("real CUDA device: running 'bytes', 'staged', "
        "'reuse-hostfunc', 'readers-hostfunc', 'defaults-hostfunc' on it\n");
    run_bytes ();
    printf ("real: bytes ok (DMA from a registered segment)\n");
    run_staged ();
    printf ("real: staged ok (staged through the bounce slots)\n");
    portable_reads = 1;
    run_reuse ();
    printf ("real: reuse-hostfunc ok (a buffer rewritten only after a slow "
        "reader on another stream)\n");
    run_readers ();
    printf ("real: readers-hostfunc ok (several readers waited for)\n");
    run_defaults ();
    printf ("real: defaults-hostfunc ok (readers on the default streams)\n");
    return;
  }
  printf ("no usable real CUDA runtime/device: %d %s\n", res, msg);
  if (res == -ENODEV) {
    /* a runtime without a driver answers 35 (or 100 without a device) */
    CHECK_MSG (strstr (msg, "No usable CUDA device: cudaGetDeviceCount "
            "failed with cudaError") != NULL, "%s", msg);
  } else {
    CHECK_INT (res, ==, -ENOENT);
    CHECK_MSG (strstr (msg, "Could not load the CUDA runtime (tried "
            "libcudart.so.13") != NULL, "%s", msg);
  }
  CHECK (up == NULL);
}

/* The consumer that reads late, two ways. The emulator's reader
 * (pfemu_stream_read: it counts reads whose memory changed under them), or
 * (portable_reads: the *-hostfunc cases, and 'real' on a GPU) what runs
 * unchanged on a GPU: a host function that sleeps, queued on the reader's
 * stream (cudaLaunchHostFunc: the stream's later work waits for it, on the
 * device), then a D2H copy of the plane into page-locked memory (into
 * pageable memory the copy would make the host wait for the stream, and
 * nothing could overlap). A buffer rewritten before the reader's turn
 * shows up as the next frame's bytes. */
static const pf_cuda_runtime *reads_rt;
static pf_cuda_error (*launch_host_func) (pf_cuda_stream, void (*)(void *),
    void *);

static void
sleep_host_func (void *data)
{
  usleep ((useconds_t) (uintptr_t) data);
}

/* The readers' destination, zeroed (page-locked and the runtime's
 * cudaLaunchHostFunc looked up for portable reads). */
static uint8_t *
out_new (const pf_cuda_runtime * rt, size_t size)
{
  void *p = NULL, *lib;

  CHECK (posix_memalign (&p, 4096, size) == 0);
  memset (p, 0, size);
  if (portable_reads) {
    lib = dlopen (rt->library, RTLD_NOW | RTLD_NOLOAD);
    CHECK_MSG (lib != NULL, "%s not loaded: %s", rt->library, dlerror ());
    *(void **) (&launch_host_func) = dlsym (lib, "cudaLaunchHostFunc");
    CHECK_MSG (launch_host_func != NULL, "%s has no cudaLaunchHostFunc",
        rt->library);
    dlclose (lib);              /* the runtime keeps it loaded */
    reads_rt = rt;
    CHECK_INT (rt->HostRegister (p, size, 0), ==, PF_CUDA_SUCCESS);
  }
  return p;
}

static void
out_free (const pf_cuda_runtime * rt, uint8_t * out)
{
  if (portable_reads)
    CHECK_INT (rt->HostUnregister (out), ==, PF_CUDA_SUCCESS);
  free (out);
}

/* Reads @d's plane 0 late on @stream into @out (packed). */
static void
read_late (pf_cuda_stream stream, const pf_device_frame * d, uint8_t * out,
    long late_us)
{
  if (portable_reads) {
    CHECK_INT (launch_host_func (stream, sleep_host_func,
            (void *) (uintptr_t) late_us), ==, PF_CUDA_SUCCESS);
    CHECK_INT (reads_rt->Memcpy2DAsync (out, d->plane_row_bytes[0],
            d->data[0], d->pitch, d->plane_row_bytes[0], d->plane_rows[0],
            PF_CUDA_MEMCPY_DEVICE_TO_HOST, stream), ==, PF_CUDA_SUCCESS);
    return;
  }
  CHECK_MSG (emu_stream_read != NULL, "the emulator has no pfemu_stream_read");
  CHECK_INT (emu_stream_read (stream, d->data[0], d->pitch,
          d->plane_row_bytes[0], d->plane_rows[0], out, late_us), ==, 0);
}

static void
check_read (const uint8_t * out, unsigned int n, unsigned int frame)
{
  unsigned int r, c;

  for (r = 0; r < rgba_rows[0]; r++)
    for (c = 0; c < rgba_bytes[0]; c++)
      CHECK_MSG (out[r * rgba_bytes[0] + c] == pattern (0, r, c, n),
          "read %u: row %u col %u is %u, frame %u's is %u (frame %u's "
          "%u): the buffer was rewritten before the consumer's stream "
          "read it", frame, r, c, out[r * rgba_bytes[0] + c], n,
          pattern (0, r, c, n), n + 1, pattern (0, r, c, n + 1));
}

#define REUSE_FRAMES 6

static void
run_reuse (void)
{
  pf_uploader *up = new_uploader (2, 2, 0);
  const pf_cuda_runtime *rt = pf_uploader_get_runtime (up);
  pf_cuda_stream consumer = NULL;
  pf_segment *seg;
  size_t slot = 64 * 1024, frame_bytes = (size_t) rgba_rows[0] * rgba_bytes[0];
  uint8_t *out = out_new (rt, REUSE_FRAMES * frame_bytes);
  unsigned int n;

  CHECK (out != NULL);
  CHECK_INT (rt->StreamCreateWithFlags (&consumer,
          PF_CUDA_STREAM_NON_BLOCKING), ==, PF_CUDA_SUCCESS);
  CHECK_INT (pf_segment_new ("test-upload-reuse", slot * REUSE_FRAMES, 0,
          &seg), ==, 0);
  for (n = 0; n < REUSE_FRAMES; n++) {
    pf_upload_source src;
    pf_device_frame *d = NULL;

    fill_source (&src, (uint8_t *) pf_segment_get_base (seg) + n * slot, 1,
        rgba_rows, rgba_bytes, 0, n);
    src.segments[0] = seg;
    src.n_segments = 1;
    CHECK_INT (pf_uploader_upload (up, &src, 1000, &d, NULL), ==, 0);
    /* torch.from_dlpack (dev): __dlpack__ (stream=the current stream) */
    CHECK_INT (pf_dlpack_sync_device_frame (d, (intptr_t) consumer), ==, 0);
    /* the kernel reading the tensor runs late (its stream is busy) */
    read_late (consumer, d, out + n * frame_bytes, 30000);
    /* the loop goes on: the tensor dies, the frame goes back */
    pf_device_frame_release (d);
  }
  CHECK_INT (rt->StreamSynchronize (consumer), ==, PF_CUDA_SUCCESS);
  for (n = 0; n < REUSE_FRAMES; n++)
    check_read (out + n * frame_bytes, n, n);
  if (emulated () && !portable_reads) {
    CHECK_INT (EMU ("reads"), ==, REUSE_FRAMES);
    CHECK_INT (EMU ("reads.overwritten"), ==, 0);
  }
  CHECK_INT (pf_uploader_flush (up), ==, 0);
  CHECK_INT (rt->StreamDestroy (consumer), ==, PF_CUDA_SUCCESS);
  out_free (rt, out);
  pf_uploader_free (up);
  pf_segment_unref (seg);
  if (emulated ())
    CHECK_INT (EMU ("free.pending"), ==, 0);
  check_nothing_alive ();
}

static void
run_readers (void)
{
  pf_uploader *up = new_uploader (2, 1, 0);
  const pf_cuda_runtime *rt = pf_uploader_get_runtime (up);
  pf_cuda_stream s[PF_DEVICE_FRAME_MAX_READERS + 1];
  pf_uploader_stats st;
  pf_segment *seg;
  pf_upload_source src;
  pf_device_frame *d = NULL;
  size_t frame_bytes = (size_t) rgba_rows[0] * rgba_bytes[0];
  /* two frames of 48 rows, two of 96 */
  uint8_t *out = out_new (rt, 6 * frame_bytes);
  uint32_t big_rows[1] = { 96 };
  unsigned int i;

  CHECK (out != NULL);
  for (i = 0; i < PF_DEVICE_FRAME_MAX_READERS + 1; i++)
    CHECK_INT (rt->StreamCreateWithFlags (&s[i],
            PF_CUDA_STREAM_NON_BLOCKING), ==, PF_CUDA_SUCCESS);
  CHECK_INT (pf_segment_new ("test-upload-readers", 1 << 20, 0, &seg), ==, 0);

  /* two readers of frame 1, one late, one later; then a frame that needs
   * a bigger buffer: the old one is freed only after both read it */
  fill_source (&src, pf_segment_get_base (seg), 1, rgba_rows, rgba_bytes, 0, 1);
  src.segments[0] = seg;
  src.n_segments = 1;
  CHECK_INT (pf_uploader_upload (up, &src, 1000, &d, NULL), ==, 0);
  CHECK_INT (pf_device_frame_read_on (d, s[0], 0), ==, 0);
  CHECK_INT (pf_device_frame_read_on (d, s[1], 0), ==, 0);
  CHECK_INT (pf_device_frame_read_on (d, s[0], 0), ==, 0);      /* one reader */
  read_late (s[0], d, out, 20000);
  read_late (s[1], d, out + frame_bytes, 40000);
  pf_device_frame_release (d);
  CHECK_INT (pf_device_frame_read_on (d, s[2], 0), ==, -EINVAL);
  CHECK_INT (pf_uploader_flush (up), ==, 0);
  fill_source (&src, pf_segment_get_base (seg), 1, big_rows, rgba_bytes, 0, 2);
  CHECK_INT (pf_uploader_upload (up, &src, 1000, &d, NULL), ==, 0);
  CHECK_INT (rt->StreamSynchronize (s[0]), ==, PF_CUDA_SUCCESS);
  CHECK_INT (rt->StreamSynchronize (s[1]), ==, PF_CUDA_SUCCESS);
  check_read (out, 1, 0);
  check_read (out + frame_bytes, 1, 1);
  check_device_bytes (d, 2);

  /* at most PF_DEVICE_FRAME_MAX_READERS streams */
  for (i = 0; i < PF_DEVICE_FRAME_MAX_READERS; i++)
    CHECK_INT (pf_device_frame_read_on (d, s[i], 0), ==, 0);
  CHECK_INT (pf_device_frame_read_on (d, s[i], 0), ==, -ENOSPC);
  CHECK_INT (pf_device_frame_read_on (d, s[0], 0), ==, 0);
  CHECK_INT (pf_device_frame_read_on (NULL, s[0], 0), ==, -EINVAL);
  pf_device_frame_release (d);

  /* the next write waits for all eight; a CUDA-array-interface consumer
   * (it waited for the frame itself) reads on the legacy stream, named
   * without a wait */
  fill_source (&src, pf_segment_get_base (seg), 1, big_rows, rgba_bytes, 0, 3);
  CHECK_INT (pf_uploader_upload (up, &src, 1000, &d, NULL), ==, 0);
  CHECK_INT (rt->EventSynchronize (d->event), ==, PF_CUDA_SUCCESS);
  CHECK_INT (pf_device_frame_read_on (d, PF_CUDA_STREAM_LEGACY,
          PF_DEVICE_FRAME_READ_NO_WAIT), ==, 0);
  CHECK_INT (pf_device_frame_read_on (d, s[0], 0x100), ==, -EINVAL);
  read_late (NULL, d, out + 2 * frame_bytes, 20000);
  pf_device_frame_release (d);
  fill_source (&src, pf_segment_get_base (seg), 1, big_rows, rgba_bytes, 0, 4);
  CHECK_INT (pf_uploader_upload (up, &src, 1000, &d, NULL), ==, 0);
  CHECK_INT (rt->StreamSynchronize (NULL), ==, PF_CUDA_SUCCESS);
  check_read (out + 2 * frame_bytes, 3, 2);

  /* one reader still late when the engine goes: its buffer is freed after
   * the read */
  CHECK_INT (pf_device_frame_read_on (d, s[3], 0), ==, 0);
  read_late (s[3], d, out + 4 * frame_bytes, 30000);
  pf_uploader_get_stats (up, &st);
  /* (the reallocation waited on the host instead) */
  CHECK_INT (st.reader_waits, ==, 2);
  CHECK_INT (st.reader_errors, ==, 0);
  pf_uploader_free (up);
  pf_device_frame_release (d);
  for (i = 0; i < PF_DEVICE_FRAME_MAX_READERS + 1; i++) {
    CHECK_INT (rt->StreamSynchronize (s[i]), ==, PF_CUDA_SUCCESS);
    CHECK_INT (rt->StreamDestroy (s[i]), ==, PF_CUDA_SUCCESS);
  }
  check_read (out + 4 * frame_bytes, 4, 3);
  if (emulated () && !portable_reads) {
    CHECK_INT (EMU ("reads"), ==, 4);
    CHECK_INT (EMU ("reads.overwritten"), ==, 0);
    CHECK_INT (EMU ("reads.faulted"), ==, 0);
  }
  if (emulated ())
    CHECK_INT (EMU ("free.pending"), ==, 0);
  out_free (rt, out);
  pf_segment_unref (seg);
  check_nothing_alive ();
}

#define DEFAULT_STREAMS 3

static void
run_defaults (void)
{
  static const pf_cuda_stream handle[DEFAULT_STREAMS] = {
    NULL, PF_CUDA_STREAM_LEGACY, PF_CUDA_STREAM_PER_THREAD
  };
  /* one pool buffer: every upload rewrites the frame just released */
  pf_uploader *up = new_uploader (2, 1, 0);
  const pf_cuda_runtime *rt = pf_uploader_get_runtime (up);
  pf_uploader_stats st;
  pf_segment *seg;
  size_t slot = 64 * 1024, frame_bytes = (size_t) rgba_rows[0] * rgba_bytes[0];
  uint8_t *out = out_new (rt, DEFAULT_STREAMS * frame_bytes);
  void *buffer = NULL;
  pf_device_frame *d = NULL;
  pf_upload_source src;
  unsigned int n;

  CHECK (out != NULL);
  CHECK_INT (pf_segment_new ("test-upload-defaults",
          slot * (DEFAULT_STREAMS + 1), 0, &seg), ==, 0);
  for (n = 0; n <= DEFAULT_STREAMS; n++) {
    fill_source (&src, (uint8_t *) pf_segment_get_base (seg) + n * slot, 1,
        rgba_rows, rgba_bytes, 0, n);
    src.segments[0] = seg;
    src.n_segments = 1;
    /* frame n lands where frame n - 1 is still being read */
    CHECK_INT (pf_uploader_upload (up, &src, 1000, &d, NULL), ==, 0);
    if (n == 0)
      buffer = d->data[0];
    CHECK_MSG (d->data[0] == buffer, "frame %u in another buffer", n);
    if (n == DEFAULT_STREAMS)
      break;
    /* __dlpack__(stream=None / 1 / 2): that stream waits for the copy */
    CHECK_INT (pf_device_frame_read_on (d, handle[n], 0), ==, 0);
    /* the consumer's kernel, queued there, runs late */
    read_late (handle[n], d, out + n * frame_bytes, 30000);
    pf_device_frame_release (d);
  }
  /* every default stream is (or, per-thread, orders after) the legacy one */
  CHECK_INT (rt->StreamSynchronize (NULL), ==, PF_CUDA_SUCCESS);
  for (n = 0; n < DEFAULT_STREAMS; n++)
    check_read (out + n * frame_bytes, n, n);
  check_device_bytes (d, DEFAULT_STREAMS);
  pf_device_frame_release (d);
  pf_uploader_get_stats (up, &st);
  CHECK_INT (st.reader_waits, ==, DEFAULT_STREAMS);
  CHECK_INT (st.reader_errors, ==, 0);
  if (emulated () && !portable_reads) {
    CHECK_INT (EMU ("reads"), ==, DEFAULT_STREAMS);
    CHECK_INT (EMU ("reads.overwritten"), ==, 0);
    CHECK_INT (EMU ("reads.faulted"), ==, 0);
  }
  CHECK_INT (pf_uploader_flush (up), ==, 0);
  pf_uploader_free (up);
  pf_segment_unref (seg);
  out_free (rt, out);
  if (emulated ())
    CHECK_INT (EMU ("free.pending"), ==, 0);
  check_nothing_alive ();
}

/* The same rules with the portable reader (what 'real' runs on a GPU). */
static void
run_reuse_hostfunc (void)
{
  portable_reads = 1;
  run_reuse ();
}

static void
run_readers_hostfunc (void)
{
  portable_reads = 1;
  run_readers ();
}

static void
run_defaults_hostfunc (void)
{
  portable_reads = 1;
  run_defaults ();
}

static const struct
{
  const char *name;
  void (*run) (void);
} cases[] = {
  {"bytes", run_bytes}, {"late", run_late}, {"pool", run_pool},
  {"inflight", run_inflight}, {"staged", run_staged}, {"shared", run_shared},
  {"sticky", run_sticky}, {"node", run_node}, {"reuse", run_reuse},
  {"readers", run_readers}, {"defaults", run_defaults},
  {"errors", run_errors}, {"reuse-hostfunc", run_reuse_hostfunc},
  {"readers-hostfunc", run_readers_hostfunc},
  {"defaults-hostfunc", run_defaults_hostfunc},
  {"real", run_real},
};

int
main (int argc, char **argv)
{
  size_t i;

  if (argc != 2) {
    fprintf (stderr, "usage: %s CASE\n", argv[0]);
    return 2;
  }
  for (i = 0; i < sizeof (cases) / sizeof (cases[0]); i++) {
    if (strcmp (argv[1], cases[i].name) == 0) {
      if (strcmp (argv[1], "real") != 0)
        emu_open ();
      cases[i].run ();
      printf ("%s: ok\n", argv[1]);
      return 0;
    }
  }
  fprintf (stderr, "unknown case %s\n", argv[1]);
  return 2;
}
