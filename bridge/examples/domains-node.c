/* pf-domains-node: one copy per domain (docs/cuda.md, "One copy per domain")
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: pf-domains-node produce SOCKET N W H CPU GPU [DEVICE]
 *        pf-domains-node consume SOCKET N [DEVICE]
 *
 * produce: a producer with pf_node_producer_enable_domains(), of host
 * frames (no DEVICE: its GPU consumers share one upload per frame) or of
 * frames on CUDA device DEVICE (its CPU consumers share one download per
 * frame, its consumers of DEVICE get its own frames); it waits for CPU +
 * GPU consumers (for a host stream until the GPU ones named their device),
 * publishes N RGBA frames of pf-camera-node's pattern (byte (x, y, c) of
 * frame n: x + 2y + 3c + 5n), sends EOS and prints
 * "frames F uploads U downloads D" from its domain stats.
 * consume: a consumer on the CPU (no DEVICE), or of device frames that
 * names DEVICE (pf_node_consumer_set_domain()); reads to EOS, compares
 * every frame with the pattern (device frames read back with
 * cuMemcpyDtoH), prints "frames N bad B domain host|device" and exits 0
 * when N frames came, all right.
 *
 * The CUDA driver (libcuda.so.1) is opened at run time, as the library
 * does: nothing of CUDA is needed to build it. On the emulators:
 * LD_LIBRARY_PATH=build/tests/cuda/emu PFEMU_VMM=1.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-node-domains.h>
#include <pinnedflow/pf-producer.h>

/* The few driver calls this needs, with DEVICE's primary context current. */
static int (*cu_memcpy_dtoh) (void *dst, uint64_t src, size_t n);
static int (*cu_memcpy_htod) (uint64_t dst, const void *src, size_t n);
static int (*cu_ctx_sync) (void);

static int
cuda_open (int device)
{
  void *lib = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  int (*init) (unsigned int);
  int (*dev_get) (int *, int);
  int (*retain) (void **, int);
  int (*set_current) (void *);
  int dev;
  void *ctx;

  if (lib == NULL)
    return -1;
  *(void **) &init = dlsym (lib, "cuInit");
  *(void **) &dev_get = dlsym (lib, "cuDeviceGet");
  *(void **) &retain = dlsym (lib, "cuDevicePrimaryCtxRetain");
  *(void **) &set_current = dlsym (lib, "cuCtxSetCurrent");
  *(void **) &cu_memcpy_dtoh = dlsym (lib, "cuMemcpyDtoH_v2");
  *(void **) &cu_memcpy_htod = dlsym (lib, "cuMemcpyHtoD_v2");
  *(void **) &cu_ctx_sync = dlsym (lib, "cuCtxSynchronize");
  if (!init || !dev_get || !retain || !set_current || !cu_memcpy_dtoh ||
      !cu_memcpy_htod || !cu_ctx_sync || init (0) != 0 ||
      dev_get (&dev, device) != 0 || retain (&ctx, dev) != 0 ||
      set_current (ctx) != 0)
    return -1;
  return 0;
}

static void
fill (uint8_t * p, uint32_t w, uint32_t h, uint64_t n)
{
  uint32_t x, y, c;

  for (y = 0; y < h; y++)
    for (x = 0; x < w; x++)
      for (c = 0; c < 4; c++)
        p[((uint64_t) y * w + x) * 4 + c] = (uint8_t) (x + 2 * y + 3 * c +
            5 * n);
}

static void
nap (void)
{
  struct timespec ts = { 0, 1000000 };

  nanosleep (&ts, NULL);
}

static int
produce (const char *path, uint64_t n, uint32_t w, uint32_t h,
    uint32_t clients, uint32_t gpu, int device)
{
  pf_node_producer_config cfg = { 0 };
  pf_node_producer *p = NULL;
  pf_node_domain_stats st;
  pf_producer_domain dom[PF_NODE_MAX_DOMAINS];
  pf_node_loan loan;
  uint8_t *frame = malloc ((size_t) w * h * 4);
  uint64_t k;
  unsigned int i, nd, named;
  int res, tries, rc = 1;

  cfg.socket_path = path;
  cfg.n_slots = 4;
  cfg.slot_size = (uint64_t) w *h * 4;
  if (frame == NULL)
    return 1;
  if (device >= 0 && cuda_open (device) < 0) {
    fprintf (stderr, "no CUDA device %d\n", device);
    goto out;
  }
  res = device >= 0 ? pf_node_producer_new_device (&cfg, device, &p) :
      pf_node_producer_new (&cfg, &p);
  if (res < 0 || (res = pf_node_producer_enable_domains (p)) < 0 ||
      (res = pf_node_producer_set_video (p, "RGBA", w, h, 30, 1)) < 0 ||
      (res = pf_node_producer_wait_clients (p, clients, 30000)) < 0) {
    fprintf (stderr, "producer: %s\n", pf_node_strerror (res));
    goto out;
  }
  for (tries = 0; device < 0 && tries < 30000; tries++) {
    nd = pf_producer_get_device_domains (pf_node_producer_get_transport (p),
        dom, PF_NODE_MAX_DOMAINS);
    for (i = 0, named = 0; i < nd && i < PF_NODE_MAX_DOMAINS; i++)
      named += dom[i].n_clients;
    if (named >= gpu)
      break;
    nap ();
  }
  for (k = 0; k < n; k++) {
    if ((res = pf_node_producer_loan_video (p, 5000, &loan)) < 0) {
      fprintf (stderr, "loan: %s\n", pf_node_strerror (res));
      goto out;
    }
    fill (frame, w, h, k);
    if (loan.domain == PF_NODE_DOMAIN_DEVICE) {
      /* complete before publish: its consumers read it once sent */
      if (cu_memcpy_htod ((uint64_t) (uintptr_t) loan.data, frame,
              (size_t) w * h * 4) != 0 || cu_ctx_sync () != 0) {
        pf_node_producer_discard (p, &loan);
        goto out;
      }
    } else {
      memcpy (loan.data, frame, (size_t) w * h * 4);
    }
    loan.pts = k;
    if ((res = pf_node_producer_publish (p, &loan)) < 0) {
      fprintf (stderr, "publish: %s\n", pf_node_strerror (res));
      goto out;
    }
  }
  pf_node_producer_send_eos (p);
  pf_node_producer_wait_idle (p, 10000);        /* host slots back */
  for (tries = 0; tries < 10000; tries++) {     /* and every domain's */
    pf_node_producer_get_domain_stats (p, &st);
    for (i = 0; i < st.n_domains; i++)
      if (st.domain[i].free_slots != st.domain[i].n_slots)
        break;
    if (i == st.n_domains && st.host_free_slots == st.host_slots)
      break;
    nap ();
  }
  printf ("frames %" PRIu64 " uploads %" PRIu64 " downloads %" PRIu64 "\n",
      st.frames, st.uploads, st.downloads);
  rc = 0;
out:
  if (p)
    pf_node_producer_free (p);
  free (frame);
  return rc;
}

static int
consume (const char *path, uint64_t n, int device)
{
  pf_node_consumer *c = NULL;
  pf_node_frame *f;
  pf_node_device_info dev;
  uint8_t *want = NULL, *got = NULL;
  uint64_t count = 0, bad = 0, size;
  const char *domain = "-";
  int res;

  if (device >= 0 && cuda_open (device) < 0) {
    fprintf (stderr, "no CUDA device %d\n", device);
    return 1;
  }
  res = pf_node_consumer_new_full (path, 30000, PF_DELIVERY_EVERY_FRAME,
      device >= 0 ? PF_NODE_CONSUMER_DEVICE : 0, &c);
  /* the DOMAIN message: this consumer's frames on its device */
  if (res == 0 && device >= 0)
    res = pf_node_consumer_set_domain (c, device);
  if (res < 0) {
    fprintf (stderr, "consumer: %s\n", pf_node_strerror (res));
    goto out;
  }
  while ((res = pf_node_consumer_next (c, 10000, &f)) == 1) {
    size = (uint64_t) f->info.width * f->info.height * 4;
    free (want);
    free (got);
    want = malloc (size);
    got = malloc (size);
    if (want == NULL || got == NULL || f->size < size) {
      pf_node_frame_release (f);
      bad++;
      break;
    }
    fill (want, f->info.width, f->info.height, f->pts);
    domain = f->domain == PF_NODE_DOMAIN_DEVICE ? "device" : "host";
    if (f->domain == PF_NODE_DOMAIN_DEVICE) {
      if (pf_node_frame_get_device (f, &dev) < 0 ||
          cu_memcpy_dtoh (got, dev.ptr, (size_t) size) != 0)
        memset (got, 0, size), want[0] ^= 1;    /* counted bad */
    } else {
      memcpy (got, f->data, size);
    }
    bad += memcmp (got, want, size) != 0;
    count++;
    pf_node_frame_release (f);  /* after the reads completed */
  }
  printf ("frames %" PRIu64 " bad %" PRIu64 " domain %s\n", count, bad, domain);
out:
  if (c)
    pf_node_consumer_free (c);
  free (want);
  free (got);
  return res == PF_NODE_EOS && count == n && bad == 0 ? 0 : 1;
}

int
main (int argc, char **argv)
{
  setvbuf (stdout, NULL, _IOLBF, 0);
  if (argc >= 8 && strcmp (argv[1], "produce") == 0)
    return produce (argv[2], strtoull (argv[3], NULL, 10),
        (uint32_t) atoi (argv[4]), (uint32_t) atoi (argv[5]),
        (uint32_t) (atoi (argv[6]) + atoi (argv[7])),
        (uint32_t) atoi (argv[7]), argc > 8 ? atoi (argv[8]) : -1);
  if (argc >= 4 && strcmp (argv[1], "consume") == 0)
    return consume (argv[2], strtoull (argv[3], NULL, 10),
        argc > 4 ? atoi (argv[4]) : -1);
  fprintf (stderr, "usage: %s produce SOCKET N W H CPU GPU [DEVICE]\n"
      "       %s consume SOCKET N [DEVICE]\n", argv[0], argv[0]);
  return 2;
}
