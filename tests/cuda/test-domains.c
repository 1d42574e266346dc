/* pinnedflow CUDA suite: one copy per memory domain (issue 32, item 3;
 * docs/cuda.md "One copy per domain")
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 *   test-domains copy|off|far|download|download-none|peer|peer-host
 *   test-domains bench on|off N     (bench/domains: prints the counts)
 *   test-domains mixed on|off N     (bench/domains/mixed.sh)
 *
 * Run with the emulators' environment and PFEMU_VMM=1 (meson:
 * emu_vmm_env). The transport's and the copier's rules, in one process, are
 * test-domains-rules.c's. Consumer processes are forked before anything in the
 * parent touches CUDA (the emulator enforces CUDA's fork rule).
 *
 * copy: a host node producer with domains enabled
 *   (pf_node_producer_enable_domains()), four node consumer processes
 *   that want device 0 (pf_node_consumer_set_domain()) and one host
 *   consumer: each frame is uploaded once (the producer's stats and the
 *   emulator's count of cuMemcpyHtoD calls in the producer's process
 *   agree: N frames, N uploads), the four device consumers get every
 *   frame in the device domain and read it back byte-exact
 *   (cuMemcpyDtoH), the host consumer gets every frame in host memory
 *   byte-exact; every frame comes back on both pools; nothing left
 *   (fds, segments, VMM handles, reservations, mappings) in any process.
 * off: the same without pf_node_producer_enable_domains(): no upload in
 *   the producer, the device consumers get host frames (they would upload
 *   themselves, as before).
 * far: a device consumer whose process has two devices asks for device 1,
 *   which the producer's process (one device) cannot reach: it gets host
 *   frames, the producer counts the domain unreachable and copies nothing;
 *   a consumer of device 0 alongside still gets one copy per frame.
 * download: a device node producer (pf_node_producer_new_device()) with
 *   domains enabled, two consumer processes of device 0, two host
 *   consumers (no CUDA in their processes) and one consumer whose process
 *   names device 1, which the producer lacks: each frame is downloaded
 *   once into the producer's pinned host pool (its stats and the
 *   emulator's count of cuMemcpyDtoH in the producer's process agree: N
 *   frames, N downloads), the device consumers get the device frame with
 *   no copy (their only cuMemcpyDtoH calls are the test's reads), the host
 *   consumers and the far one read the host frame byte-exact; every frame
 *   back on both pools; nothing left anywhere.
 * download-none: the same producer with only device consumers: two of
 *   its device and one that asked for device frames but named no domain
 *   (it gets the device frame, as before domains): no download, no host
 *   pool made.
 * peer: a device producer on device 0 of a two-device process, two
 *   consumer processes (two devices each) that name device 1 and one that
 *   names device 0: each frame is copied once into device 1
 *   (cuMemcpyPeer: the producer's stats and the emulator's count in its
 *   process agree, N frames, N copies; the emulator checks each side
 *   against its own device's access, so a cuMemcpyDtoD across the two
 *   would fault), the consumers of device 1 read it there byte-exact,
 *   the consumer of device 0 the producer's own frame; no download, no
 *   copy in any consumer; every frame back on both pools; nothing left.
 * peer-host: the same producer, one consumer of device 1, one of device 0
 *   and a host one: one peer copy and one download per frame, published
 *   together, each consumer byte-exact in its domain.
 */
#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-node-cuda.h>
#include <pinnedflow/pf-node-domains.h>
#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-domains.h>
#include <pinnedflow/pf-protocol-private.h>

#include "pf-test-util.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define W 320
#define H 240
#define FRAME_BYTES (W * H * 4)
#define SLOTS 4
#define N_FRAMES 12
#define MAX_KIDS 8

typedef unsigned long long CUdeviceptr;

/* What the consumer processes counted, in shared memory made before the
 * fork: the uploads they made themselves (the node Uploader). */
static struct shared
{
  atomic_long consumer_uploads;
  atomic_long consumer_upload_bytes;
  atomic_long device_consumer_cpu_ns;   /* their whole lives, all of them */
  atomic_long consumer_device_buffers;  /* live device allocations, theirs */
  atomic_long consumer_downloads;       /* device-to-host copies, theirs */
  atomic_long consumer_extra_dtoh;      /* cuMemcpyDtoH beyond the reads */
  atomic_long consumer_cpu_ns;  /* every consumer's whole life */
} *shared;

/* This run's producer: device slots (pf_node_producer_new_device()). */
static int dev_producer;
/* Consumers of device segments that name no domain, added to a run. */
static int n_undeclared;
/* Consumers of device 1 of two, added to a run (a device producer's peer
 * copies; the producer's process then has two devices too). */
static int n_peer;
/* The emulator's count of cuMemcpyPeer in the producer's process, a run's. */
static long producer_peer_calls;
/* The device memory of this run's producer's pool (a device producer). */
static uint64_t producer_device_bytes;

static int (*cuInit) (unsigned int);
static int (*cuCtxCreate) (void **, unsigned int, int);
static int (*cuMemcpyDtoH) (void *, CUdeviceptr, size_t);
static int (*cuMemcpyHtoD) (CUdeviceptr, const void *, size_t);
static int (*cuCtxSynchronize) (void);
static long (*emu_query) (const char *);

/* The driver stand-in, a context on device @dev made current. Only after
 * any fork. */
static void
cuda_up (int dev)
{
  const char *rt_path = getenv ("GST_PINNEDFLOW_CUDART");
  void *drv = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  void *rt = rt_path ? dlopen (rt_path, RTLD_NOW | RTLD_LOCAL) : NULL;
  void *ctx = NULL;

  CHECK_MSG (drv && rt, "cannot load the emulators: %s", dlerror ());
  *(void **) &cuInit = dlsym (drv, "cuInit");
  *(void **) &cuCtxCreate = dlsym (drv, "cuCtxCreate_v2");
  *(void **) &cuMemcpyDtoH = dlsym (drv, "cuMemcpyDtoH_v2");
  *(void **) &cuMemcpyHtoD = dlsym (drv, "cuMemcpyHtoD_v2");
  *(void **) &cuCtxSynchronize = dlsym (drv, "cuCtxSynchronize");
  *(void **) &emu_query = dlsym (rt, "pfemu_query");
  CHECK (cuInit && cuCtxCreate && cuMemcpyDtoH && cuMemcpyHtoD
      && cuCtxSynchronize && emu_query);
  CHECK_INT (cuInit (0), ==, 0);
  CHECK_INT (cuCtxCreate (&ctx, 0, dev), ==, 0);
}

static void
check_vmm_empty (void)
{
  CHECK_INT (pf_device_segment_teardown_errors (), ==, 0);
  CHECK_INT (emu_query ("live.vmm.handles"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.reservations"), ==, 0);
  CHECK_INT (emu_query ("live.vmm.mappings"), ==, 0);
}

static void
pattern (uint8_t * buf, size_t n, uint64_t k)
{
  size_t i;

  for (i = 0; i < n; i++)
    buf[i] = (uint8_t) ((i * 13 + k * 71 + (i >> 9)) & 0xff);
}

/* CPU time of this process so far (user + system), ns. */
static uint64_t
cpu_ns (void)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  return (uint64_t) (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000u +
      (uint64_t) (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000u;
}

/* ---- consumers --------------------------------------------------------- */

enum
{
  HOST,                         /* no device frames asked for */
  DEVICE,                       /* device 0: device frames expected */
  DEVICE_HOSTED,                /* device 0, host frames expected (off):
                                 * uploads each itself (the node Uploader) */
  FAR,                          /* device 1 the producer lacks: host frames */
  HOST_DOWNLOADING,             /* device segments, no domain named: device
                                 * frames, each downloaded here (what a CPU
                                 * consumer of a device stream does without
                                 * domains) */
  PEER,                         /* device 1 of two, a device producer on
                                 * device 0 with two too: device frames on
                                 * device 1 expected (the producer's peer
                                 * copy) */
};

static int
consumer_main (const char *path, int mode, int n_frames)
{
  uint8_t *want = malloc (FRAME_BYTES), *got = malloc (FRAME_BYTES);
  pf_node_consumer *c = NULL;
  pf_uploader *up = NULL;
  pf_node_frame *f;
  int fds0, seen = 0, res;

  CHECK (want && got);
  if (mode == FAR || mode == PEER)
    setenv ("PFEMU_DEVICE_COUNT", "2", 1);      /* this process: 2 devices */
  if (mode != HOST)
    cuda_up (mode == FAR || mode == PEER ? 1 : 0);
  fds0 = pf_test_count_fds ();
  res = pf_node_consumer_new_full (path, 20000, PF_DELIVERY_EVERY_FRAME,
      mode == HOST ? 0 : PF_NODE_CONSUMER_DEVICE, &c);
  CHECK_MSG (res == 0, "connect: %d %s", res, pf_consumer_connect_error ());
  if (mode == DEVICE_HOSTED) {
    pf_uploader_config ucfg;

    memset (&ucfg, 0, sizeof (ucfg));
    ucfg.pool_size = 4;
    res = pf_uploader_new (&ucfg, &up, NULL, 0);
    CHECK_MSG (res == 0, "pf_uploader_new: %d", res);
  }
  if (mode == HOST) {
    /* a host consumer names no device */
    CHECK_INT (pf_node_consumer_set_domain (c, 0), ==, -EINVAL);
  } else if (mode != HOST_DOWNLOADING) {
    CHECK_INT (pf_node_consumer_set_domain (c, -1), ==, -EINVAL);
    CHECK_INT (pf_node_consumer_set_domain (c, 7), ==, -ENODEV);
    CHECK_INT (pf_node_consumer_set_domain (c, mode == FAR || mode == PEER ?
            1 : 0), ==, 0);
  }
  for (;;) {
    res = pf_node_consumer_next (c, 20000, &f);
    CHECK_MSG (res == 1 || res == PF_NODE_EOS, "next: %d %s", res,
        pf_node_consumer_get_error (c));
    if (res == PF_NODE_EOS)
      break;
    seen++;
    CHECK_INT (f->pts, ==, (uint64_t) seen);    /* every frame, in order */
    CHECK_INT (f->size, ==, FRAME_BYTES);
    pattern (want, FRAME_BYTES, f->pts);
    if (mode == DEVICE || mode == HOST_DOWNLOADING || mode == PEER) {
      pf_node_device_info dev;

      CHECK_INT (f->domain, ==, PF_NODE_DOMAIN_DEVICE);
      CHECK_INT (pf_node_frame_get_device (f, &dev), ==, 0);
      CHECK_INT (dev.ordinal, ==, mode == PEER ? 1 : 0);
      memset (got, 0, FRAME_BYTES);
      CHECK_INT (cuMemcpyDtoH (got, dev.ptr, FRAME_BYTES), ==, 0);
      CHECK_MSG (memcmp (want, got, FRAME_BYTES) == 0, "frame %d: device "
          "bytes differ", seen);
      if (mode == HOST_DOWNLOADING)
        atomic_fetch_add (&shared->consumer_downloads, 1);
    } else {
      CHECK_INT (f->domain, ==, PF_NODE_DOMAIN_HOST);
      CHECK (f->data != NULL);
      CHECK_MSG (memcmp (want, f->data, FRAME_BYTES) == 0, "frame %d: host "
          "bytes differ", seen);
    }
    if (up != NULL) {
      pf_device_frame *d = NULL;

      /* as today: this consumer uploads the frame itself (the engine
       * releases it once copied) */
      CHECK_INT (pf_node_frame_upload (up, f, 20000, &d), ==, 0);
      memset (got, 0, FRAME_BYTES);
      CHECK_INT (pf_device_frame_download (d, got, FRAME_BYTES), ==, 0);
      CHECK_MSG (memcmp (want, got, FRAME_BYTES) == 0, "frame %d: uploaded "
          "bytes differ", seen);
      pf_device_frame_release (d);
      continue;
    }
    CHECK_INT (pf_node_frame_release (f), ==, 0);
  }
  CHECK_INT (seen, ==, n_frames);
  /* a device consumer's only device-to-host copies are this test's reads,
   * and it copies nothing between devices */
  if (mode == DEVICE || mode == PEER)
    atomic_fetch_add (&shared->consumer_extra_dtoh,
        emu_query ("calls.cuMemcpyDtoH_v2") - seen +
        emu_query ("calls.cuMemcpyPeer") + emu_query ("calls.cuMemcpyDtoD_v2"));
  /* and its device memory is the producer's, mapped: none of its own */
  if (mode == DEVICE || mode == PEER)
    atomic_fetch_add (&shared->consumer_device_buffers,
        emu_query ("live.allocations"));
  if (up != NULL) {
    pf_uploader_stats us;

    pf_uploader_get_stats (up, &us);
    CHECK_INT (us.frames, ==, (uint64_t) n_frames);
    atomic_fetch_add (&shared->consumer_uploads, (long) us.frames);
    atomic_fetch_add (&shared->consumer_upload_bytes, (long) us.bytes);
    /* the device memory this consumer holds for the stream: its Uploader's
     * pool, as the emulator counts it */
    atomic_fetch_add (&shared->consumer_device_buffers,
        emu_query ("live.allocations"));
    pf_uploader_free (up);
  }
  CHECK_INT (pf_node_consumer_get_held (c), ==, 0);
  pf_node_consumer_free (c);
  CHECK_INT (pf_segment_count_live (), ==, 0);
  if (mode != HOST)
    check_vmm_empty ();
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  atomic_fetch_add (&shared->consumer_cpu_ns, (long) cpu_ns ());
  if (mode != HOST && mode != FAR)
    atomic_fetch_add (&shared->device_consumer_cpu_ns, (long) cpu_ns ());
  free (want);
  free (got);
  return 0;
}

static pid_t
spawn_consumer (const char *path, int mode, int n_frames)
{
  pid_t pid = pf_test_fork ();

  CHECK (pid >= 0);
  if (pid == 0)
    _exit (consumer_main (path, mode, n_frames));
  return pid;
}

static void
check_child (pid_t pid)
{
  int st = pf_test_wait (pid);

  CHECK_MSG (pf_test_exit_code (st) == 0, "child %d: exit %d", (int) pid,
      pf_test_exit_code (st));
}

/* ---- the producer ------------------------------------------------------ */

/* Every slot of every domain with a pool back. */
static int
all_free (const pf_node_domain_stats * st)
{
  uint32_t i;

  if (st->host_free_slots != st->host_slots)
    return 0;
  for (i = 0; i < st->n_domains; i++)
    if (st->domain[i].ordinal >= 0 &&
        st->domain[i].free_slots != st->domain[i].n_slots)
      return 0;
  return 1;
}

/* The stats' entry of device @ordinal, or NULL. */
static const pf_node_domain_info *
domain_of (const pf_node_domain_stats * st, int ordinal)
{
  uint32_t i;

  for (i = 0; i < st->n_domains; i++)
    if (st->domain[i].ordinal == ordinal)
      return &st->domain[i];
  return NULL;
}

/* Device domains wanted, and by how many consumers in all. */
static unsigned int
wanted (pf_node_producer * p, unsigned int *n_clients)
{
  pf_producer_domain d[4];
  unsigned int n, i;

  n = pf_producer_get_device_domains (pf_node_producer_get_transport (p), d, 4);
  *n_clients = 0;
  for (i = 0; i < n && i < 4; i++)
    *n_clients += d[i].n_clients;
  return n;
}

/* One run: @n_dev consumers of device 0, @n_host host consumers, @n_far
 * consumers of device 1; domains enabled or not; a host producer, or a
 * device one (dev_producer). Checks everything; the figures in @st
 * (zeroed without domains), @cpu_per_frame and @copy_calls (the
 * emulator's count of the producer's process's copies into the other
 * domain: cuMemcpyHtoD for a host producer, cuMemcpyDtoH for a device
 * one). */
static void
run (const char *dir, int enable, int n_dev, int n_host, int n_far,
    int n_frames, pf_node_domain_stats * st, uint64_t * cpu_per_frame,
    long *copy_calls)
{
  const char *copy_call = dev_producer ? "calls.cuMemcpyDtoH_v2" :
      "calls.cuMemcpyHtoD_v2";
  uint8_t *src;
  char path[300];
  pf_node_producer_config cfg;
  pf_client_stats cs[MAX_KIDS];
  pf_node_producer *p = NULL;
  pid_t pid[MAX_KIDS];
  unsigned int n_clients = (unsigned int) (n_dev + n_host + n_far +
      n_undeclared + n_peer), nd;
  long copy0, peer0;
  uint64_t cpu0;
  int fds0, i, k = 0, res;

  snprintf (path, sizeof (path), "%s/sock", dir);
  atomic_store (&shared->consumer_uploads, 0);
  atomic_store (&shared->consumer_upload_bytes, 0);
  atomic_store (&shared->device_consumer_cpu_ns, 0);
  atomic_store (&shared->consumer_device_buffers, 0);
  atomic_store (&shared->consumer_downloads, 0);
  atomic_store (&shared->consumer_extra_dtoh, 0);
  atomic_store (&shared->consumer_cpu_ns, 0);
  /* before any CUDA (or allocation the children would inherit) here */
  for (i = 0; i < n_dev; i++)
    pid[k++] = spawn_consumer (path, enable || dev_producer ? DEVICE :
        DEVICE_HOSTED, n_frames);
  for (i = 0; i < n_host; i++)
    pid[k++] = spawn_consumer (path, dev_producer && !enable ?
        HOST_DOWNLOADING : HOST, n_frames);
  for (i = 0; i < n_far; i++)
    pid[k++] = spawn_consumer (path, FAR, n_frames);
  for (i = 0; i < n_undeclared; i++)
    pid[k++] = spawn_consumer (path, HOST_DOWNLOADING, n_frames);
  for (i = 0; i < n_peer; i++)
    pid[k++] = spawn_consumer (path, PEER, n_frames);
  if (n_peer > 0)
    setenv ("PFEMU_DEVICE_COUNT", "2", 1);      /* this process: 2 devices */
  cuda_up (0);
  fds0 = pf_test_count_fds ();
  src = malloc (FRAME_BYTES);
  CHECK (src != NULL);

  memset (&cfg, 0, sizeof (cfg));
  cfg.socket_path = path;
  cfg.n_slots = SLOTS;
  cfg.slot_size = FRAME_BYTES;
  if (dev_producer)
    CHECK_INT (pf_node_producer_new_device (&cfg, 0, &p), ==, 0);
  else
    CHECK_INT (pf_node_producer_new (&cfg, &p), ==, 0);
  CHECK_INT (pf_node_producer_get_domain_stats (p, st), ==, -EINVAL);
  if (enable) {
    res = pf_node_producer_enable_domains (p);
    CHECK_MSG (res == 0, "enable_domains: %d", res);
    CHECK_INT (pf_node_producer_enable_domains (p), ==, -EBUSY);
  }
  CHECK_INT (pf_node_producer_set_video (p, "RGBA", W, H, 30, 1), ==, 0);
  if (dev_producer)
    producer_device_bytes =
        pf_segment_get_size (pf_node_producer_get_segment (p));
  CHECK_INT (pf_node_producer_wait_clients (p, n_clients, 20000), ==, 0);
  /* every device consumer has named its domain */
  WAIT_FOR (wanted (p, &nd) == (unsigned int) ((n_dev > 0) + (n_far > 0 ||
              n_peer > 0)) && nd == (unsigned int) (n_dev + n_far + n_peer));

  copy0 = emu_query (copy_call);
  peer0 = emu_query ("calls.cuMemcpyPeer");
  cpu0 = cpu_ns ();
  for (i = 1; i <= n_frames; i++) {
    pf_node_loan loan;

    CHECK_INT (pf_node_producer_loan_video (p, 20000, &loan), ==, 0);
    if (dev_producer) {
      /* the frame written on the device, complete before publish */
      CHECK_INT (loan.domain, ==, PF_NODE_DOMAIN_DEVICE);
      pattern (src, FRAME_BYTES, (uint64_t) i);
      CHECK_INT (cuMemcpyHtoD ((CUdeviceptr) (uintptr_t) loan.data, src,
              FRAME_BYTES), ==, 0);
      CHECK_INT (cuCtxSynchronize (), ==, 0);
    } else {
      CHECK_INT (loan.domain, ==, PF_NODE_DOMAIN_HOST);
      pattern (loan.data, FRAME_BYTES, (uint64_t) i);
    }
    loan.pts = (uint64_t) i;
    res = pf_node_producer_publish (p, &loan);
    CHECK_MSG (res == (int) n_clients, "publish %d: %d", i, res);
  }
  *cpu_per_frame = (cpu_ns () - cpu0) / (uint64_t) n_frames;
  *copy_calls = emu_query (copy_call) - copy0;
  producer_peer_calls = emu_query ("calls.cuMemcpyPeer") - peer0;

  /* every frame back on both pools */
  CHECK_INT (pf_node_producer_wait_idle (p, 20000), ==, 0);
  CHECK_INT (pf_node_producer_get_free_slots (p), ==, SLOTS);
  if (enable) {
    WAIT_FOR (pf_node_producer_get_domain_stats (p, st) == 0 && all_free (st));
  } else {
    memset (st, 0, sizeof (*st));
  }
  CHECK_INT (pf_producer_get_client_stats (pf_node_producer_get_transport
          (p), cs, MAX_KIDS), ==, n_clients);
  for (i = 0; i < (int) n_clients; i++) {
    CHECK_INT (cs[i].frames_sent, ==, (uint64_t) n_frames);
    CHECK_INT (cs[i].frames_released, ==, (uint64_t) n_frames);
    CHECK_INT (cs[i].frames_skipped_device, ==, 0);
  }
  CHECK_INT (pf_node_producer_send_eos (p), >=, 0);
  for (i = 0; i < k; i++)
    check_child (pid[i]);
  pf_node_producer_free (p);
  check_vmm_empty ();
  CHECK_INT (pf_segment_count_live (), ==, 0);
  CHECK_INT (pf_test_count_fds (), ==, fds0);
  unlink (path);
  free (src);
}

static int
case_copy (const char *dir)
{
  pf_node_domain_stats st;
  uint64_t cpu;
  long htod;

  run (dir, 1, 4, 1, 0, N_FRAMES, &st, &cpu, &htod);
  CHECK_INT (atomic_load (&shared->consumer_uploads), ==, 0);
  /* one upload per frame, for four consumers of the domain */
  CHECK_INT (st.frames, ==, N_FRAMES);
  CHECK_INT (st.uploads, ==, N_FRAMES);
  CHECK_INT (st.frames_uploaded, ==, N_FRAMES);
  CHECK_INT (htod, ==, N_FRAMES);       /* the emulator agrees */
  CHECK_INT (st.unreachable, ==, 0);
  CHECK_INT (st.n_domains, ==, 1);
  CHECK (domain_of (&st, 0) == &st.domain[0]);
  CHECK (memcmp (st.domain[0].uuid, "pfemu-device-000", 16) == 0);
  CHECK_INT (st.domain[0].uploads, ==, N_FRAMES);
  CHECK_INT (st.domain[0].bytes, ==, (uint64_t) N_FRAMES * FRAME_BYTES);
  CHECK_INT (st.domain[0].no_slot, ==, 0);
  CHECK_INT (st.domain[0].n_slots, ==, 2 * SLOTS);      /* twice the host's */
  CHECK (st.domain[0].device_bytes >= (uint64_t) 2 * SLOTS * FRAME_BYTES);
  CHECK_INT (st.device_bytes, ==, st.domain[0].device_bytes);
  return 0;
}

static int
case_off (const char *dir)
{
  pf_node_domain_stats st;
  uint64_t cpu;
  long htod;

  run (dir, 0, 2, 1, 0, N_FRAMES, &st, &cpu, &htod);
  CHECK_INT (htod, ==, 0);      /* nothing copied by the producer */
  /* each device consumer uploaded every frame itself */
  CHECK_INT (atomic_load (&shared->consumer_uploads), ==, 2 * N_FRAMES);
  return 0;
}

static int
case_far (const char *dir)
{
  pf_node_domain_stats st;
  uint64_t cpu;
  long htod;

  run (dir, 1, 1, 0, 1, N_FRAMES, &st, &cpu, &htod);
  CHECK_INT (st.uploads, ==, N_FRAMES); /* device 0's, once per frame */
  CHECK_INT (htod, ==, N_FRAMES);
  CHECK_INT (st.unreachable, ==, N_FRAMES);
  CHECK_INT (st.n_domains, ==, 2);
  CHECK (domain_of (&st, 0) != NULL);
  CHECK_INT (domain_of (&st, 0)->uploads, ==, N_FRAMES);
  CHECK (domain_of (&st, -1) != NULL);
  CHECK_INT (domain_of (&st, -1)->uploads, ==, 0);
  return 0;
}

/* A device producer: one download per frame for its host consumers. */
static int
case_download (const char *dir)
{
  pf_node_domain_stats st;
  uint64_t cpu;
  long dtoh;

  dev_producer = 1;
  run (dir, 1, 2, 2, 1, N_FRAMES, &st, &cpu, &dtoh);
  CHECK_INT (st.frames, ==, N_FRAMES);
  CHECK_INT (st.downloads, ==, N_FRAMES);
  CHECK_INT (dtoh, ==, N_FRAMES);       /* the emulator agrees */
  CHECK_INT (st.download_bytes, ==, (uint64_t) N_FRAMES * FRAME_BYTES);
  CHECK_INT (st.host_no_slot, ==, 0);
  CHECK_INT (st.host_slots, ==, 2 * SLOTS);     /* twice the producer's */
  CHECK (st.host_bytes >= (uint64_t) 2 * SLOTS * FRAME_BYTES);
  /* nothing uploaded, no device pool: the device consumers share the
   * producer's own frames; the far one's device is not here (an entry
   * without a pool, counted unreachable: it gets the host frame) */
  CHECK_INT (st.uploads, ==, 0);
  CHECK_INT (st.peer_copies, ==, 0);
  CHECK_INT (producer_peer_calls, ==, 0);
  CHECK_INT (st.n_domains, ==, 1);
  CHECK (domain_of (&st, -1) != NULL);
  CHECK_INT (st.unreachable, ==, N_FRAMES);
  CHECK_INT (st.device_bytes, ==, 0);
  CHECK_INT (atomic_load (&shared->consumer_extra_dtoh), ==, 0);
  CHECK_INT (atomic_load (&shared->consumer_downloads), ==, 0);
  return 0;
}

/* A device producer without host consumers: nothing copied. */
static int
case_download_none (const char *dir)
{
  pf_node_domain_stats st;
  uint64_t cpu;
  long dtoh;

  dev_producer = 1;
  n_undeclared = 1;             /* takes the device frame, as before */
  run (dir, 1, 2, 0, 0, N_FRAMES, &st, &cpu, &dtoh);
  CHECK_INT (atomic_load (&shared->consumer_downloads), ==, N_FRAMES);
  CHECK_INT (st.frames, ==, N_FRAMES);
  CHECK_INT (st.downloads, ==, 0);
  CHECK_INT (dtoh, ==, 0);
  CHECK_INT (st.host_slots, ==, 0);     /* no host pool made */
  CHECK_INT (st.host_bytes, ==, 0);
  CHECK_INT (atomic_load (&shared->consumer_extra_dtoh), ==, 0);
  return 0;
}

/* A device producer on device 0 of two: its consumers of device 1 share
 * one peer copy per frame, its consumer of device 0 its own frame. */
static int
case_peer (const char *dir)
{
  const pf_node_domain_info *d;
  pf_node_domain_stats st;
  uint64_t cpu;
  long dtoh;

  dev_producer = 1;
  n_peer = 2;
  run (dir, 1, 1, 0, 0, N_FRAMES, &st, &cpu, &dtoh);
  CHECK_INT (st.frames, ==, N_FRAMES);
  CHECK_INT (st.peer_copies, ==, N_FRAMES);
  CHECK_INT (producer_peer_calls, ==, N_FRAMES);        /* the emulator agrees */
  CHECK_INT (st.n_domains, ==, 1);
  CHECK ((d = domain_of (&st, 1)) != NULL);
  CHECK (memcmp (d->uuid, "pfemu-device-001", 16) == 0);
  CHECK_INT (d->peer_copies, ==, N_FRAMES);
  CHECK_INT (d->uploads, ==, 0);
  CHECK_INT (d->bytes, ==, (uint64_t) N_FRAMES * FRAME_BYTES);
  CHECK_INT (d->no_slot, ==, 0);
  CHECK_INT (d->n_slots, ==, 2 * SLOTS);
  CHECK (d->device_bytes >= (uint64_t) 2 * SLOTS * FRAME_BYTES);
  CHECK_INT (st.device_bytes, ==, d->device_bytes);
  CHECK_INT (st.unreachable, ==, 0);
  /* nobody in the host domain: no download, no host pool; nothing
   * uploaded */
  CHECK_INT (st.downloads, ==, 0);
  CHECK_INT (dtoh, ==, 0);
  CHECK_INT (st.host_slots, ==, 0);
  CHECK_INT (st.uploads, ==, 0);
  /* the consumers copied nothing between devices, nor downloaded */
  CHECK_INT (atomic_load (&shared->consumer_extra_dtoh), ==, 0);
  CHECK_INT (atomic_load (&shared->consumer_device_buffers), ==, 0);
  return 0;
}

/* The same with a host consumer too: one peer copy and one download per
 * frame, published together (the host variant, the producer's frame, the
 * copy on device 1). */
static int
case_peer_host (const char *dir)
{
  const pf_node_domain_info *d;
  pf_node_domain_stats st;
  uint64_t cpu;
  long dtoh;

  dev_producer = 1;
  n_peer = 1;
  run (dir, 1, 1, 1, 0, N_FRAMES, &st, &cpu, &dtoh);
  CHECK_INT (st.frames, ==, N_FRAMES);
  CHECK_INT (st.peer_copies, ==, N_FRAMES);
  CHECK_INT (producer_peer_calls, ==, N_FRAMES);
  CHECK ((d = domain_of (&st, 1)) != NULL);
  CHECK_INT (d->peer_copies, ==, N_FRAMES);
  CHECK_INT (st.downloads, ==, N_FRAMES);
  CHECK_INT (dtoh, ==, N_FRAMES);
  CHECK_INT (st.host_no_slot, ==, 0);
  CHECK_INT (d->no_slot, ==, 0);
  CHECK_INT (st.unreachable, ==, 0);
  CHECK_INT (atomic_load (&shared->consumer_extra_dtoh), ==, 0);
  return 0;
}

/* bench/domains (one run per process: CUDA's fork rule): four device
 * consumers and a host one, the producer copying once per frame ("on")
 * or not at all ("off": each device consumer then uploads the frame
 * itself, pf_upload / the node Uploader, one copy per consumer per frame
 * and four device copies of each frame). One line of counts. */
static int
bench (const char *dir, int on, int n_frames)
{
  pf_node_domain_stats st;
  uint64_t cpu;
  long htod;

  run (dir, on, 4, 1, 0, n_frames, &st, &cpu, &htod);
  if (on) {
    const pf_node_domain_info *d = domain_of (&st, 0);

    CHECK (d != NULL);
    CHECK_INT (htod, ==, n_frames);
    CHECK_INT (atomic_load (&shared->consumer_uploads), ==, 0);
    printf ("after: frames %d, producer uploads %llu (%.2f per frame; the "
        "emulator counts %ld cuMemcpyHtoD), consumer uploads 0, device "
        "pool %llu bytes in %u slots shared by the 4, producer CPU per "
        "frame %.1f us, the 4 device consumers' CPU per frame %.1f us\n",
        n_frames, (unsigned long long) st.uploads,
        (double) st.uploads / (double) st.frames, htod,
        (unsigned long long) st.device_bytes, d->n_slots, cpu / 1000.0,
        atomic_load (&shared->device_consumer_cpu_ns) / 1000.0 / n_frames);
  } else {
    long ups = atomic_load (&shared->consumer_uploads);

    CHECK_INT (htod, ==, 0);
    CHECK_INT (ups, ==, 4L * n_frames);
    printf ("before: frames %d, producer uploads 0, consumer uploads %ld "
        "(%.2f per frame, each of the 4 device consumers through its node "
        "Uploader), %ld bytes uploaded, %ld device buffers of at least a "
        "frame live in the 4 consumers, producer CPU per frame %.1f us, the "
        "4 device consumers' CPU per frame %.1f us\n", n_frames, ups,
        (double) ups / n_frames, atomic_load (&shared->consumer_upload_bytes),
        atomic_load (&shared->consumer_device_buffers), cpu / 1000.0,
        atomic_load (&shared->device_consumer_cpu_ns) / 1000.0 / n_frames);
  }
  return 0;
}

/* bench/domains/mixed.sh: a device producer, two consumers of its device
 * and two CPU consumers; "off": the producer copies nothing (today's
 * device stream: a CPU consumer gets frames only by asking for device
 * segments and downloading each frame itself, one download per CPU
 * consumer per frame, CUDA in every consumer); "on": one download per
 * frame in the producer, shared by the two. One line of counts. */
static int
mixed (const char *dir, int on, int n_frames)
{
  pf_node_domain_stats st;
  uint64_t cpu;
  long dtoh, downs;

  dev_producer = 1;
  run (dir, on, 2, 2, 0, n_frames, &st, &cpu, &dtoh);
  downs = atomic_load (&shared->consumer_downloads);
  CHECK_INT (atomic_load (&shared->consumer_extra_dtoh), ==, 0);
  CHECK_INT (atomic_load (&shared->consumer_device_buffers), ==, 0);
  if (on) {
    CHECK_INT (dtoh, ==, n_frames);
    CHECK_INT (st.downloads, ==, (uint64_t) n_frames);
    CHECK_INT (downs, ==, 0);
  } else {
    CHECK_INT (dtoh, ==, 0);
    CHECK_INT (downs, ==, 2L * n_frames);
  }
  printf ("%s: frames %d, producer downloads %ld (%.2f per frame, the "
      "emulator's cuMemcpyDtoH count), consumer downloads %ld (%.2f per "
      "frame), the 2 GPU consumers' own copies %ld and device buffers %ld "
      "(they map the producer's %llu-byte device pool), pinned host pool "
      "%llu bytes in %u slots, producer "
      "CPU per frame %.1f us, the 4 consumers' CPU per frame %.1f us "
      "(the 2 CPU ones %s)\n", on ? "after" : "before", n_frames, dtoh,
      (double) dtoh / n_frames, downs, (double) downs / n_frames,
      atomic_load (&shared->consumer_extra_dtoh),
      atomic_load (&shared->consumer_device_buffers),
      (unsigned long long) producer_device_bytes,
      (unsigned long long) st.host_bytes, st.host_slots, cpu / 1000.0,
      atomic_load (&shared->consumer_cpu_ns) / 1000.0 / n_frames,
      on ? "without CUDA" : "with CUDA, downloading");
  return 0;
}

int
main (int argc, char **argv)
{
  char dir[] = "/tmp/pf-domains-XXXXXX";
  int res;

  static const char *const cases[] = { "copy", "off", "far", "download",
    "download-none", "peer", "peer-host"
  };
  int is_case = 0, is_bench;
  unsigned int i;

  for (i = 0; i < sizeof (cases) / sizeof (cases[0]); i++)
    is_case |= argc == 2 && strcmp (argv[1], cases[i]) == 0;
  is_bench = argc == 4 && (strcmp (argv[1], "bench") == 0 ||
      strcmp (argv[1], "mixed") == 0) && (strcmp (argv[2], "on") == 0 ||
      strcmp (argv[2], "off") == 0) && atoi (argv[3]) > 0;
  if (!is_case && !is_bench) {
    fprintf (stderr,
        "usage: %s copy|off|far|download|download-none|peer|peer-host "
        "| bench|mixed on|off N_FRAMES\n", argv[0]);
    return 2;
  }
  CHECK (mkdtemp (dir) != NULL);
  shared = mmap (NULL, sizeof (*shared), PROT_READ | PROT_WRITE,
      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  CHECK (shared != MAP_FAILED);
  if (strcmp (argv[1], "copy") == 0)
    res = case_copy (dir);
  else if (strcmp (argv[1], "off") == 0)
    res = case_off (dir);
  else if (strcmp (argv[1], "far") == 0)
    res = case_far (dir);
  else if (strcmp (argv[1], "download") == 0)
    res = case_download (dir);
  else if (strcmp (argv[1], "download-none") == 0)
    res = case_download_none (dir);
  else if (strcmp (argv[1], "peer") == 0)
    res = case_peer (dir);
  else if (strcmp (argv[1], "peer-host") == 0)
    res = case_peer_host (dir);
  else if (strcmp (argv[1], "mixed") == 0)
    res = mixed (dir, strcmp (argv[2], "on") == 0, atoi (argv[3]));
  else
    res = bench (dir, strcmp (argv[2], "on") == 0, atoi (argv[3]));
  rmdir (dir);
  if (res == 0)
    printf ("ok %s\n", argv[1]);
  return res;
}
