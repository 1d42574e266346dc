/* pinnedflow CUDA suite: device frames through the node API (issue 32,
 * item 4; docs/cuda.md "Device frames in nodes")
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   test-node-device frames|novmm
 *   test-node-device produce SOCKET N    (a helper for tests/bridge)
 *   test-node-device consume SOCKET N    (a helper for tests/bridge)
 *
 * Run with the emulators' environment and PFEMU_VMM=1 (meson:
 * emu_vmm_env). Consumer processes are forked before anything in the
 * parent touches CUDA (the emulator enforces CUDA's fork rule).
 *
 * frames: a node producer with device slots (pf_node_producer_new_device)
 *   writes each frame with cuMemcpyHtoD into its loan and publishes it once
 *   the copy completed; a node consumer process that asked for device
 *   frames gets them in the device domain (data NULL, read-only mapping),
 *   reads them back byte-exact with cuMemcpyDtoH, finds every host-only
 *   path refused with -EINVAL (DLPack/Arrow as CPU memory, the upload
 *   source) and the device exports at the frame's device address (kDLCUDA,
 *   ARROW_DEVICE_CUDA with no sync event); the frame goes back only when
 *   its last export died. A second consumer that did not ask gets no
 *   frame (the producer counts them skipped). Nothing left: holds,
 *   segments, mappings, fds.
 * mixed: a raw producer sends a frame with one chunk in host memory and
 *   one in device memory: the node consumer refuses it (-EPROTO, the
 *   reason, every later next() too), releases it, leaks nothing.
 * novmm: the consumer's process has no virtual-memory support (PFEMU_VMM
 *   unset there): it asked for device frames but cannot import the
 *   segment: refused with the reason, every frame released unseen and
 *   counted, no crash, nothing left.
 */
#include <pinnedflow/pf-arrow.h>
#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-dlpack.h>
#include <pinnedflow/pf-hold.h>
#include <pinnedflow/pf-node-cuda.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-producer.h>

#include "pf-test-util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define W 256
#define H 128
#define FRAME_BYTES (W * H * 4)
#define SLOTS 4
#define N_FRAMES 10

typedef unsigned long long CUdeviceptr;

static int (*cuInit) (unsigned int);
static int (*cuCtxCreate) (void **, unsigned int, int);
static int (*cuCtxSynchronize) (void);
static int (*cuMemcpyHtoD) (CUdeviceptr, const void *, size_t);
static int (*cuMemcpyDtoH) (void *, CUdeviceptr, size_t);
static long (*emu_query) (const char *);
static int (*cuStreamCreate) (void **, unsigned int);
static int (*cuStreamDestroy) (void *);
static int (*emu_stream_read) (void *, const void *, size_t, size_t, size_t,
    void *, long);

/* The driver stand-in, a context on device 0 made current. Only after any
 * fork. */
static void
cuda_up (void)
{
  const char *rt_path = getenv ("GST_PINNEDFLOW_CUDART");
  void *drv = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void *rt = rt_path ? dlopen (rt_path, RTLD_NOW | RTLD_LOCAL) : NULL;
  void *ctx = NULL;

  CHECK_MSG (drv && rt, "cannot load the emulators: %s", dlerror ());
  *(void **) &cuInit = dlsym (drv, "cuInit");
  *(void **) &cuCtxCreate = dlsym (drv, "cuCtxCreate_v2");
  *(void **) &cuCtxSynchronize = dlsym (drv, "cuCtxSynchronize");
  *(void **) &cuMemcpyHtoD = dlsym (drv, "cuMemcpyHtoD_v2");
  *(void **) &cuMemcpyDtoH = dlsym (drv, "cuMemcpyDtoH_v2");
  *(void **) &emu_query = dlsym (rt, "pfemu_query");
  *(void **) &cuStreamCreate = dlsym (drv, "cuStreamCreate");
  *(void **) &cuStreamDestroy = dlsym (drv, "cuStreamDestroy_v2");
  *(void **) &emu_stream_read = dlsym (rt, "pfemu_stream_read");
  CHECK (cuInit && cuCtxCreate && cuCtxSynchronize && cuMemcpyHtoD &&
      cuMemcpyDtoH && emu_query && cuStreamCreate && cuStreamDestroy &&
      emu_stream_read);
  CHECK_INT (cuInit (0), ==, 0);
  CHECK_INT (cuCtxCreate (&ctx, 0, 0), ==, 0);
}

static void
check_vmm_empty (void)
{
  CHECK_INT (pf_device_segment_teardown_errors (), ==, 0);
  CHECK_INT (emu_query ("live.vmm.handles"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.reservations"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.mappings"), ==, 0);
}

/* Frame @k's bytes (also tests/bridge/test_device_frames.py's). */
static void
pattern (uint8_t * buf, size_t n, uint64_t k)
{
  size_t i;

  for (i = 0; i < n; i++)
    buf[i] = (uint8_t) ((i * 7 + k * 131 + (i >> 11)) & 0xff);
}

/* ---- the producer ------------------------------------------------------ */

/* Publishes @n device frames (pts = 1..n, the pattern of pts) to whoever
 * asked for them, once @n_clients consumers are connected; returns the
 * consumers each frame reached (the same for all, checked). */
static int
produce (pf_node_producer * p, unsigned int n_clients, int n)
{
  uint8_t *buf = malloc (FRAME_BYTES);
  pf_node_loan loan;
  int i, got, reached = -1;

  CHECK (buf != NULL);
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  CHECK_INT (pf_node_producer_wait_clients (p, n_clients, 20000), ==, 0);
  for (i = 1; i <= n; i++) {
    CHECK_INT (pf_node_producer_loan_video (p, 20000, &loan), ==, 0);
    CHECK_INT (loan.domain, ==, PF_NODE_DOMAIN_DEVICE);
    CHECK_INT (loan.size, ==, FRAME_BYTES);
    CHECK (loan.data != NULL);
    pattern (buf, FRAME_BYTES, (uint64_t) i);
    /* the rule: every write completed before publish */
    CHECK_INT (cuMemcpyHtoD ((CUdeviceptr) (uintptr_t) loan.data, buf,
            FRAME_BYTES), ==, 0);
    CHECK_INT (cuCtxSynchronize (), ==, 0);
    loan.pts = (uint64_t) i;
    got = pf_node_producer_publish (p, &loan);
    CHECK_MSG (got >= 0, "publish: %d", got);
    CHECK (reached < 0 || got == reached);
    reached = got;
  }
  free (buf);
  return reached;
}

static pf_node_producer *
producer_up (const char *path)
{
  pf_node_producer_config cfg;
  pf_node_producer *p = NULL;
  int res;

  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.n_slots = SLOTS;
  cfg.slot_size = FRAME_BYTES;
  res = pf_node_producer_new_device (&cfg, 0, &p);
  CHECK_MSG (res == 0, "pf_node_producer_new_device: %d %s", res,
      pf_device_segment_error ());
  CHECK (pf_segment_get_device (pf_node_producer_get_segment (p)) != NULL);
  /* a negative device is refused */
  CHECK_INT (pf_node_producer_new_device (&cfg, -1, &(pf_node_producer *) {
          NULL}
      ), ==, -EINVAL);
  return p;
}

/* ---- the consumers ----------------------------------------------------- */

/* Every host-only path refuses a device frame; the device exports give
 * its device address. Exports borrow the frame: it goes back when the
 * last of them died. Takes the frame. */
static void
check_device_frame (pf_node_consumer * c, pf_node_frame * f, uint8_t * want,
    uint8_t * got)
{
  pf_node_device_info dev;
  pf_dlpack_desc dl;
  pf_arrow_desc ad;
  pf_upload_source src;
  struct ArrowSchema schema;
  struct ArrowDeviceArray arr;
  void *tensor = NULL;
  pf_hold *hold;

  CHECK_INT (f->domain, ==, PF_NODE_DOMAIN_DEVICE);
  CHECK (f->data == NULL && f->chunk_data[0] == NULL);
  CHECK (f->segment_base == NULL);
  CHECK_INT (f->readonly, ==, 1);
  CHECK_INT (f->size, ==, FRAME_BYTES);
  CHECK_INT (pf_node_frame_get_device (f, &dev), ==, 0);
  CHECK_INT (dev.ordinal, ==, 0);
  CHECK_INT (dev.access, ==, PF_DEVICE_ACCESS_READ);
  CHECK (dev.ptr != 0 && dev.ptr == dev.chunk_ptr[0]);
  CHECK_INT (dev.ptr, ==, pf_device_segment_get_ptr (f->segment) +
      f->segment_offset);

  /* the bytes, through the driver */
  pattern (want, FRAME_BYTES, f->pts);
  memset (got, 0, FRAME_BYTES);
  CHECK_INT (cuMemcpyDtoH (got, dev.ptr, FRAME_BYTES), ==, 0);
  CHECK_MSG (memcmp (want, got, FRAME_BYTES) == 0, "frame %llu: bytes "
      "differ", (unsigned long long) f->pts);

  /* host-only paths: -EINVAL, never a host pointer */
  CHECK_INT (pf_dlpack_desc_from_frame (f, PF_DLPACK_CPU, &dl), ==, -EINVAL);
  CHECK_INT (pf_dlpack_desc_from_frame (f, PF_DLPACK_CUDA_HOST, &dl), ==,
      -EINVAL);
  CHECK_INT (pf_arrow_desc_from_frame (f, ARROW_DEVICE_CPU, &ad), ==, -EINVAL);
  CHECK_INT (pf_arrow_desc_from_frame (f, ARROW_DEVICE_CUDA_HOST, &ad), ==,
      -EINVAL);
  CHECK_INT (pf_node_frame_to_upload_source (f, &src), ==, -EINVAL);

  /* the device views: (H, W, 4) uint8 at the device address */
  CHECK_INT (pf_dlpack_desc_from_frame (f, PF_DLPACK_CUDA, &dl), ==, 0);
  CHECK_INT (dl.device_type, ==, PF_DLPACK_CUDA);
  CHECK_INT (dl.device_id, ==, 0);
  CHECK_INT ((uintptr_t) dl.data, ==, dev.ptr + f->layout.plane_offset[0]);
  CHECK_INT (dl.ndim, ==, 3);
  CHECK (dl.shape[0] == H && dl.shape[1] == W && dl.shape[2] == 4);
  CHECK (dl.strides[0] == W * 4 && dl.strides[1] == 4 && dl.strides[2] == 1);
  CHECK_INT (pf_arrow_desc_from_frame (f, ARROW_DEVICE_CUDA, &ad), ==, 0);
  CHECK_INT ((uintptr_t) ad.data, ==, dev.ptr);
  CHECK_INT (ad.size, ==, FRAME_BYTES);
  CHECK (ad.cuda_event == NULL);

  /* lent out: the frame stays held until the last export died */
  hold = pf_hold_new_node_frame (f);
  CHECK (hold != NULL);
  CHECK_INT (pf_dlpack_export (&dl, hold, PF_DLPACK_VERSIONED |
          PF_DLPACK_READ_ONLY, &tensor), ==, 0);
  CHECK_INT (pf_arrow_export (&ad, hold, &schema, &arr), ==, 0);
  CHECK_INT (arr.device_type, ==, ARROW_DEVICE_CUDA);
  CHECK_INT (arr.device_id, ==, 0);
  CHECK (arr.sync_event == NULL);
  CHECK_INT ((uintptr_t) arr.array.buffers[1], ==, dev.ptr);
  pf_hold_unref (hold);         /* the application's reference */
  CHECK_INT (pf_node_consumer_get_held (c), ==, 1);
  schema.release (&schema);
  arr.array.release (&arr.array);
  CHECK_INT (pf_node_consumer_get_held (c), ==, 1);
  pf_dlpack_free (tensor, PF_DLPACK_VERSIONED);
  CHECK_INT (pf_node_consumer_get_held (c), ==, 0);
  CHECK_INT (pf_hold_count_live (), ==, 0);
}

/* A reader's stream named with pf_node_frame_read_on(): a kernel reading
 * the frame 150 ms late on it (the emulator's late reader) has completed
 * when the release returns, so the producer cannot rewrite the slot under
 * it. At most 8 streams. Takes the frame. */
static void
check_late_reader (pf_node_consumer * c, pf_node_frame * f, uint8_t * want,
    uint8_t * got)
{
  pf_node_device_info dev;
  void *streams[8];
  long reads0 = emu_query ("reads");
  int i;

  CHECK_INT (pf_node_frame_get_device (f, &dev), ==, 0);
  pattern (want, FRAME_BYTES, f->pts);
  for (i = 0; i < 8; i++)
    CHECK_INT (cuStreamCreate (&streams[i], 1), ==, 0);
  memset (got, 0, FRAME_BYTES);
  CHECK_INT (emu_stream_read (streams[0], (const void *) (uintptr_t) dev.ptr,
          W * 4, W * 4, H, got, 150000), ==, 0);
  CHECK_INT (pf_node_frame_read_on (f, 0), ==, -EINVAL);
  CHECK_INT (pf_node_frame_read_on (f, (uintptr_t) streams[0]), ==, 0);
  CHECK_INT (pf_node_frame_read_on (f, (uintptr_t) streams[0]), ==, 0);
  CHECK_INT (pf_node_frame_read_on (f, 1), ==, 0);      /* legacy stream */
  for (i = 1; i < 7; i++)
    CHECK_INT (pf_node_frame_read_on (f, (uintptr_t) streams[i]), ==, 0);
  CHECK_INT (pf_node_frame_read_on (f, (uintptr_t) streams[7]), ==, -ENOSPC);
  CHECK_INT (emu_query ("reads"), ==, reads0);  /* still running */
  CHECK_INT (pf_node_frame_release (f), ==, 0);
  CHECK_INT (pf_node_device_sync_errors (), ==, 0);
  CHECK_INT (emu_query ("reads"), ==, reads0 + 1);
  CHECK_INT (emu_query ("reads.overwritten"), ==, 0);
  CHECK_INT (pf_node_consumer_get_held (c), ==, 0);
  CHECK (memcmp (want, got, FRAME_BYTES) == 0);
  for (i = 0; i < 8; i++)
    CHECK_INT (cuStreamDestroy (streams[i]), ==, 0);
}

enum
{
  DEVICE,                       /* asks for device frames, reads them */
  HOST_ONLY,                    /* does not ask: gets none */
  NO_VMM,                       /* asks, its process cannot import */
  MIXED,                        /* asks, gets a frame in both domains */
};

static int
consumer_main (const char *path, int mode, int expect)
{
  uint8_t *want = malloc (FRAME_BYTES), *got = malloc (FRAME_BYTES);
  pf_node_consumer *c = NULL;
  pf_node_frame *f;
  uint64_t skipped = 0;
  uint32_t refused = 0;
  int fds0, seen = 0, res;

  CHECK (want && got);
  if (mode == NO_VMM)
    unsetenv ("PFEMU_VMM");     /* this process's driver has no VMM */
  if (mode != HOST_ONLY)
    cuda_up ();
  fds0 = pf_test_count_fds ();
  res = pf_node_consumer_new_full (path, 20000, PF_DELIVERY_EVERY_FRAME,
      mode == HOST_ONLY ? 0 : PF_NODE_CONSUMER_DEVICE, &c);
  CHECK_MSG (res == 0, "connect: %d %s", res, pf_consumer_connect_error ());
  if (mode == MIXED) {
    /* a frame in host and device memory at once: refused, released */
    CHECK_INT (pf_node_consumer_next (c, 20000, &f), ==, -EPROTO);
    CHECK (f == NULL);
    CHECK_MSG (strstr (pf_node_consumer_get_error (c), "host and device") !=
        NULL, "error: %s", pf_node_consumer_get_error (c));
    CHECK_INT (pf_node_consumer_next (c, 0, &f), ==, -EPROTO);
    CHECK_INT (pf_node_consumer_get_held (c), ==, 0);
    pf_node_consumer_free (c);
    CHECK_INT (pf_segment_count_live (), ==, 0);
    check_vmm_empty ();
    CHECK_INT (pf_test_count_fds (), ==, fds0);
    free (want);
    free (got);
    return 0;
  }
  for (;;) {
    res = pf_node_consumer_next (c, 20000, &f);
    CHECK_MSG (res == 1 || res == PF_NODE_EOS, "next: %d %s", res,
        pf_node_consumer_get_error (c));
    if (res == PF_NODE_EOS)
      break;
    seen++;
    CHECK (mode == DEVICE);
    CHECK_INT (f->pts, ==, (uint64_t) seen);    /* every frame, in order */
    if (seen == 2)
      check_late_reader (c, f, want, got);
    else
      check_device_frame (c, f, want, got);
  }
  CHECK_INT (seen, ==, expect);
  (void) pf_node_consumer_get_device_stats (c, &skipped, &refused);
  if (mode == NO_VMM) {
    const char *why = pf_node_consumer_get_device_stats (c, NULL, NULL);

    CHECK_INT (refused, ==, 1);
    CHECK_INT (skipped, ==, N_FRAMES);
    CHECK_MSG (why[0] != '\0', "no reason for the refusal");
    fprintf (stderr, "refused as expected: %s\n", why);
  } else {
    CHECK_INT (refused, ==, 0);
    CHECK_INT (skipped, ==, 0);
  }
  CHECK_INT (pf_node_consumer_get_held (c), ==, 0);
  pf_node_consumer_free (c);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_hold_count_live (), ==, 0);
  if (mode != HOST_ONLY)
    check_vmm_empty ();
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  free (want);
  free (got);
  return 0;
}

static pid_t
spawn_consumer (const char *path, int mode, int expect)
{
  pid_t pid = pf_test_fork ();

  CHECK (pid >= 0);
  if (pid == 0)
    _exit (consumer_main (path, mode, expect));
  return pid;
}

static void
check_child (pid_t pid)
{
  int st = pf_test_wait (pid);

  CHECK_MSG (pf_test_exit_code (st) == 0, "child %d: exit %d", (int) pid,
      pf_test_exit_code (st));
}

/* ---- the cases --------------------------------------------------------- */

static int
case_frames (const char *dir, int novmm)
{
  char path[300];
  pf_client_stats cs[2];
  pf_node_producer *p;
  pid_t pid[2];
  int fds0, n_clients = novmm ? 1 : 2, i, k;

  snprintf (path, sizeof (path), "%s/sock", dir);
  /* before any CUDA here */
  pid[0] = spawn_consumer (path, novmm ? NO_VMM : DEVICE, novmm ? 0 : N_FRAMES);
  if (!novmm)
    pid[1] = spawn_consumer (path, HOST_ONLY, 0);
  cuda_up ();
  fds0 = pf_test_count_fds ();
  p = producer_up (path);
  /* the consumer that asked gets each frame (and, without VMM, releases
   * it unseen); the other is skipped */
  CHECK_INT (produce (p, (unsigned int) n_clients, N_FRAMES), ==, 1);
  CHECK_INT (pf_producer_get_client_stats (pf_node_producer_get_transport
          (p), cs, 2), ==, n_clients);
  for (i = 0, k = 0; i < n_clients; i++)
    k += cs[i].frames_skipped_device == N_FRAMES;
  CHECK_INT (k, ==, novmm ? 0 : 1);
  CHECK_INT (pf_node_producer_wait_idle (p, 20000), ==, 0);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, SLOTS);
  CHECK_INT (pf_node_producer_send_eos (p), >=, 0);
  for (i = 0; i < n_clients; i++)
    check_child (pid[i]);
  pf_node_producer_free (p);
  check_vmm_empty ();
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  return 0;
}

static atomic_int mixed_released, mixed_connected;

static void
on_mixed_released (void *user_data, void *token)
{
  atomic_fetch_add (&mixed_released, 1);
}

static void
on_mixed_connected (void *user_data, const pf_client_info * info)
{
  atomic_fetch_add (&mixed_connected, 1);
}

static int
case_mixed (const char *dir)
{
  char path[300];
  pf_producer_config cfg;
  pf_producer_frame fr;
  pf_segment *segs[2] = { NULL, NULL };
  pf_producer *p = NULL;
  pid_t pid;

  snprintf (path, sizeof (path), "%s/sock", dir);
  pid = spawn_consumer (path, MIXED, 0);
  cuda_up ();
  CHECK_INT (pf_segment_new ("host", 1 << 20, 0, &segs[0]), ==, 0);
  CHECK_MSG (pf_device_segment_new (0, 1 << 20, &segs[1]) == 0, "%s",
      pf_device_segment_error ());
  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.perms = 0600;
  cfg.max_client_frames = 2;
  cfg.reliable_timeout_ms = -1;
  cfg.callbacks.frame_released = on_mixed_released;
  cfg.callbacks.client_connected = on_mixed_connected;
  CHECK_INT (pf_producer_new (&cfg, &p), ==, 0);
  WAIT_FOR (atomic_load (&mixed_connected) == 1);
  memset (&fr, 0, sizeof (fr));
  fr.n_chunks = 2;
  fr.chunks[0].segment_id = pf_segment_get_id (segs[0]);
  fr.chunks[0].size = 4096;
  fr.chunks[1].segment_id = pf_segment_get_id (segs[1]);
  fr.chunks[1].size = 4096;
  fr.pts = fr.dts = fr.duration = fr.clock_pts = PF_TIME_NONE;
  fr.offset = fr.offset_end = UINT64_MAX;
  CHECK_INT (pf_producer_publish (p, &fr, segs, (void *) (intptr_t) 1), ==, 1);
  WAIT_FOR (atomic_load (&mixed_released) == 1);        /* given back */
  check_child (pid);
  pf_producer_close (p);
  pf_producer_unref (p);
  pf_segment_unref (segs[0]);
  pf_segment_unref (segs[1]);
  check_vmm_empty ();
  CHECK_INT (pf_segment_count_live (), ==, 0);
  return 0;
}

/* A producer for another process's consumer (the Python binding's test):
 * @n frames to the one consumer that connects, then EOS. */
static int
run_produce (const char *path, int n)
{
  pf_node_producer *p;

  cuda_up ();
  p = producer_up (path);
  CHECK_INT (produce (p, 1, n), ==, 1);
  CHECK_INT (pf_node_producer_wait_idle (p, 20000), ==, 0);
  CHECK_INT (pf_node_producer_send_eos (p), >=, 0);
  /* the consumer hangs up after EOS; give it the time to read it */
  WAIT_FOR (pf_node_producer_get_n_clients (p) == 0);
  pf_node_producer_free (p);
  check_vmm_empty ();
  return 0;
}

int
main (int argc, char **argv)
{
  char dir[] = "/tmp/pf-node-device-XXXXXX";
  int res;

  if (argc == 4 && strcmp (argv[1], "produce") == 0)
    return run_produce (argv[2], atoi (argv[3]));
  if (argc == 4 && strcmp (argv[1], "consume") == 0)
    return consumer_main (argv[2], DEVICE, atoi (argv[3]));
  if (argc != 2 || (strcmp (argv[1], "frames") && strcmp (argv[1], "novmm")
          && strcmp (argv[1], "mixed"))) {
    fprintf (stderr, "usage: %s frames|novmm|mixed | produce|consume "
        "SOCKET N\n", argv[0]);
    return 2;
  }
  CHECK (mkdtemp (dir) != NULL);
  if (strcmp (argv[1], "mixed") == 0)
    res = case_mixed (dir);
  else
    res = case_frames (dir, strcmp (argv[1], "novmm") == 0);
  {
    char path[300];

    snprintf (path, sizeof (path), "%s/sock", dir);
    unlink (path);
  }
  rmdir (dir);
  if (res == 0)
    printf ("ok %s\n", argv[1]);
  return res;
}
