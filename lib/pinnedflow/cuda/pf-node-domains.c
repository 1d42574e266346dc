/* pinnedflow: one copy per memory domain for host node producers, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pf_node_producer_enable_domains() and pf_node_producer_get_domain_stats()
 * (pf-node-domains.h; docs/cuda.md, "One copy per domain"). The node layer
 * below knows nothing of CUDA: at each publish it asks the hooks installed
 * here (pf_node_producer_set_domain_hooks(), pf-node-private.h) for the
 * device variants of its host frame. For each device domain its consumers
 * want (pf_producer_get_device_domains()) this file keeps a pool of device
 * slots in one device segment on that device (pf_device_segment_new(),
 * twice as many slots of the host pool's stride), loans a slot, copies
 * the frame into it once (cuMemcpyHtoD in the device's primary context)
 * (then cuCtxSynchronize: complete before publish) and hands back a
 * variant whose token names the domain and the slot; the
 * slot goes back to its pool when that token does (every consumer of the
 * domain released it, or nobody got it).
 *
 * Tokens: PF_NODE_DOMAIN_TOKEN_MIN + (domain << 16) + slot.
 *
 * Threading: prepare() runs on the publishing thread, release() on the
 * transport's I/O thread or the publisher's, stats on any: @lock guards
 * the domain table and the counters (a leaf: never held while calling the
 * transport); release() takes no lock but the pool's (see there). A domain once made stays
 * until the producer is freed (destroy(), after the transport closed and
 * every token came back).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-node-domains.h>
#include <pinnedflow/pf-node-private.h>
#include <pinnedflow/pf-pool.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The driver calls of the copy (opened once, never linked). */
static struct
{
  int (*init) (unsigned int flags);
  int (*device_get_count) (int *n);
  int (*device_get) (int *dev, int ordinal);
  int (*device_get_uuid) (void *uuid, int dev);
  int (*primary_retain) (void **ctx, int dev);
  int (*primary_release) (int dev);
  int (*ctx_push) (void *ctx);
  int (*ctx_pop) (void **ctx);
  int (*memcpy_htod) (uint64_t dst, const void *src, size_t bytes);
  int (*ctx_sync) (void);
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

static void
drv_load (void)
{
  void *h = dlopen ("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

  if (h == NULL)
    return;
  *(void **) &drv.init = dlsym (h, "cuInit");
  *(void **) &drv.device_get_count = dlsym (h, "cuDeviceGetCount");
  *(void **) &drv.device_get = dlsym (h, "cuDeviceGet");
  *(void **) &drv.device_get_uuid = dlsym (h, "cuDeviceGetUuid_v2");
  if (drv.device_get_uuid == NULL)
    *(void **) &drv.device_get_uuid = dlsym (h, "cuDeviceGetUuid");
  *(void **) &drv.primary_retain = dlsym (h, "cuDevicePrimaryCtxRetain");
  *(void **) &drv.primary_release = dlsym (h, "cuDevicePrimaryCtxRelease_v2");
  *(void **) &drv.ctx_push = dlsym (h, "cuCtxPushCurrent_v2");
  *(void **) &drv.ctx_pop = dlsym (h, "cuCtxPopCurrent_v2");
  *(void **) &drv.memcpy_htod = dlsym (h, "cuMemcpyHtoD_v2");
  *(void **) &drv.ctx_sync = dlsym (h, "cuCtxSynchronize");
  if (!drv.init || !drv.device_get_count || !drv.device_get ||
      !drv.device_get_uuid || !drv.primary_retain || !drv.primary_release ||
      !drv.ctx_push || !drv.ctx_pop || !drv.memcpy_htod || !drv.ctx_sync)
    memset (&drv, 0, sizeof (drv));
  /* the handle stays open for the process's life, as the CUDA layer's */
}

/* How long a publish waits for a free device slot (its consumers' last
 * release may be on its way from the transport's I/O thread) before the
 * domain gets the host frame instead: short, so that consumers sitting on
 * their device frames cannot slow a live producer much. */
#define DEVICE_LOAN_MS 20
/* Device slots per host slot: consumers of a domain with newest-frame
 * delivery may hold other frames than the host consumers do. */
#define DEVICE_SLOTS_PER_HOST_SLOT 2

struct domain
{
  pf_node_domain_info info;
  pf_pool *pool;                /* NULL: no device here (ordinal -1) */
  void *ctx;                    /* the device's primary context, retained */
  int dev;
};

struct domains
{
  pthread_mutex_t lock;
  uint32_t n_slots;
  uint64_t stride;
  unsigned int n;
  struct domain d[PF_NODE_MAX_DOMAINS];
  pf_node_domain_stats st;      /* frames, uploads, ... (domain[] copied
                                 * from d[] when read) */
};

/* The ordinal of the device with @uuid here, or -1. */
static int
find_device (const uint8_t uuid[16], int *dev_out)
{
  uint8_t u[16];
  int n = 0, i, dev;

  if (drv.device_get_count (&n) != 0)
    return -1;
  for (i = 0; i < n; i++) {
    if (drv.device_get (&dev, i) != 0 || drv.device_get_uuid (u, dev) != 0)
      continue;
    if (memcmp (u, uuid, 16) == 0) {
      *dev_out = dev;
      return i;
    }
  }
  return -1;
}

/* The domain of @uuid, made on first sight (under d->lock): NULL when the
 * table is full. A device not in this process gets an entry without a
 * pool (counted as unreachable at each frame). */
static struct domain *
domain_get (struct domains *ds, const uint8_t uuid[16])
{
  struct domain *d;
  pf_segment *seg = NULL;
  unsigned int i;

  for (i = 0; i < ds->n; i++)
    if (memcmp (ds->d[i].info.uuid, uuid, 16) == 0)
      return &ds->d[i];
  if (ds->n == PF_NODE_MAX_DOMAINS)
    return NULL;
  d = &ds->d[ds->n++];
  memset (d, 0, sizeof (*d));
  memcpy (d->info.uuid, uuid, 16);
  d->info.ordinal = find_device (uuid, &d->dev);
  if (d->info.ordinal < 0)
    return d;
  if (drv.primary_retain (&d->ctx, d->dev) != 0) {
    d->info.ordinal = -1;
    return d;
  }
  if (pf_device_segment_new (d->info.ordinal, ds->stride * ds->n_slots,
          &seg) < 0 || pf_pool_new (seg, ds->stride, ds->n_slots,
          &d->pool) < 0) {
    d->pool = NULL;
    drv.primary_release (d->dev);
    d->ctx = NULL;
    d->info.ordinal = -1;
  } else {
    d->info.n_slots = ds->n_slots;
    d->info.device_bytes = pf_segment_get_size (seg);
    ds->st.device_bytes += d->info.device_bytes;
  }
  if (seg != NULL)
    pf_segment_unref (seg);     /* the pool holds it */
  return d;
}

/* One copy of @bytes into a free slot of @d: 0 with the slot in @slot,
 * -EAGAIN (none free), -EIO (the copy failed: the slot went back). */
static int
domain_upload (struct domain *d, pf_producer * transport, const void *bytes,
    uint64_t size, pf_pool_slot * slot)
{
  uint64_t base;
  void *popped;
  int err;

  if (pf_pool_loan (d->pool, 0, slot) < 0) {
    /* every slot out: their consumers' releases may be in the release
     * rings, unrung while nobody waits (the doorbell on demand,
     * pf_producer_want_releases ()): ask for them while we wait (this
     * takes those there, and domains_release () takes no lock of ours) */
    pf_producer_want_releases (transport, 1);
    err = pf_pool_loan (d->pool, DEVICE_LOAN_MS, slot);
    pf_producer_want_releases (transport, 0);
    if (err < 0)
      return -EAGAIN;
  }
  base = pf_device_segment_get_ptr (pf_pool_get_segment (d->pool));
  if (drv.ctx_push (d->ctx) != 0) {
    pf_pool_return (d->pool, slot->index);
    return -EIO;
  }
  /* complete before publish (docs/cuda.md: a producer publishes a device
   * frame once its writes are done): cuMemcpyHtoD from pageable memory
   * may return before the device has the bytes */
  err = drv.memcpy_htod (base + slot->offset, bytes, size);
  if (err == 0)
    err = drv.ctx_sync ();
  drv.ctx_pop (&popped);
  if (err != 0) {
    pf_pool_return (d->pool, slot->index);
    return -EIO;
  }
  /* the loan's ticket is ours: spent here, the hold stays until release */
  pf_pool_redeem (d->pool, slot->index, slot->id);
  return 0;
}

static unsigned int
domains_prepare (void *data, pf_producer * transport,
    const pf_producer_frame * host, const void *bytes,
    pf_producer_frame * frames, pf_segment ** segs, void **tokens,
    unsigned int max)
{
  struct domains *ds = data;
  pf_producer_domain want[PF_NODE_MAX_DOMAINS];
  unsigned int n_want, i, n = 0, copies = 0;

  n_want = pf_producer_get_device_domains (transport, want,
      PF_NODE_MAX_DOMAINS);
  if (n_want > PF_NODE_MAX_DOMAINS)
    n_want = PF_NODE_MAX_DOMAINS;
  pthread_mutex_lock (&ds->lock);
  ds->st.frames++;
  /* one chunk of a host pool slot (pf-node-producer.c) */
  for (i = 0; i < n_want && n < max && host->n_chunks == 1; i++) {
    struct domain *d = domain_get (ds, want[i].uuid);
    pf_pool_slot slot;
    unsigned int idx;

    if (d == NULL)
      continue;
    if (d->pool == NULL) {
      ds->st.unreachable++;
      continue;
    }
    if (domain_upload (d, transport, bytes, host->chunks[0].size, &slot) < 0) {
      d->info.no_slot++;
      continue;
    }
    idx = (unsigned int) (d - ds->d);
    d->info.uploads++;
    d->info.bytes += host->chunks[0].size;
    copies++;
    frames[n] = *host;
    segs[n] = pf_pool_get_segment (d->pool);
    frames[n].chunks[0].segment_id = pf_segment_get_id (segs[n]);
    frames[n].chunks[0].offset = slot.offset;
    tokens[n] = (void *) (PF_NODE_DOMAIN_TOKEN_MIN + ((uintptr_t) idx << 16) +
        slot.index);
    n++;
  }
  ds->st.uploads += copies;
  if (copies > 0)
    ds->st.frames_uploaded++;
  pthread_mutex_unlock (&ds->lock);
  return n;
}

static void
domains_release (void *data, void *token)
{
  struct domains *ds = data;
  uintptr_t t = (uintptr_t) token - PF_NODE_DOMAIN_TOKEN_MIN;
  unsigned int idx = (unsigned int) (t >> 16);
  pf_pool *pool;

  /* without ds->lock (a publish may hold it, waiting for this very slot):
   * a domain's pool is set once, before its first token left prepare(),
   * and the transport's lock orders that before this release */
  if (idx >= PF_NODE_MAX_DOMAINS || (pool = ds->d[idx].pool) == NULL)
    return;
  pf_pool_return (pool, (uint32_t) (t & 0xffff));
}

static void
domains_destroy (void *data)
{
  struct domains *ds = data;
  unsigned int i;

  for (i = 0; i < ds->n; i++) {
    if (ds->d[i].pool != NULL) {
      pf_pool_unref (ds->d[i].pool);
      drv.primary_release (ds->d[i].dev);
    }
  }
  pthread_mutex_destroy (&ds->lock);
  free (ds);
}

int
pf_node_producer_enable_domains (pf_node_producer * p)
{
  pf_node_domain_hooks h;
  struct domains *ds;
  pf_segment *seg;
  int res;

  if (p == NULL || (seg = pf_node_producer_get_segment (p)) == NULL ||
      pf_segment_get_device (seg) != NULL)
    return -EINVAL;
  pthread_once (&drv_once, drv_load);
  if (drv.init == NULL)
    return -ENOENT;
  if (drv.init (0) != 0)
    return -ENODEV;
  if ((ds = calloc (1, sizeof (*ds))) == NULL)
    return -ENOMEM;
  pthread_mutex_init (&ds->lock, NULL);
  /* at least the host pool's stride (a page multiple): every frame fits */
  ds->stride = pf_segment_get_size (seg) / pf_node_producer_get_n_slots (p)
      & ~UINT64_C (4095);
  ds->n_slots = pf_node_producer_get_n_slots (p) * DEVICE_SLOTS_PER_HOST_SLOT;
  memset (&h, 0, sizeof (h));
  h.prepare = domains_prepare;
  h.release = domains_release;
  h.destroy = domains_destroy;
  h.data = ds;
  res = pf_node_producer_set_domain_hooks (p, &h);
  if (res < 0) {
    pthread_mutex_destroy (&ds->lock);
    free (ds);
  }
  return res;
}

int
pf_node_producer_get_domain_stats (pf_node_producer * p,
    pf_node_domain_stats * stats)
{
  struct domains *ds = pf_node_producer_get_domain_data (p);
  unsigned int i;

  if (stats == NULL)
    return -EINVAL;
  memset (stats, 0, sizeof (*stats));
  if (ds == NULL)
    return -EINVAL;
  pthread_mutex_lock (&ds->lock);
  *stats = ds->st;
  stats->n_domains = ds->n;
  for (i = 0; i < ds->n; i++) {
    pf_pool_stats ps;

    stats->domain[i] = ds->d[i].info;
    if (ds->d[i].pool != NULL) {
      pf_pool_get_stats (ds->d[i].pool, &ps);
      stats->domain[i].free_slots = ps.n_free;
    }
  }
  pthread_mutex_unlock (&ds->lock);
  return 0;
}

int
pf_device_consumer_set_domain (pf_consumer * c, int ordinal)
{
  uint8_t uuid[16];
  int dev;

  if (c == NULL || ordinal < 0)
    return -EINVAL;
  pthread_once (&drv_once, drv_load);
  if (drv.init == NULL)
    return -ENOENT;
  if (drv.init (0) != 0 || drv.device_get (&dev, ordinal) != 0 ||
      drv.device_get_uuid (uuid, dev) != 0)
    return -ENODEV;
  return pf_consumer_set_domain (c, uuid);
}

int
pf_node_consumer_set_domain (pf_node_consumer * c, int ordinal)
{
  if (c == NULL)
    return -EINVAL;
  return pf_device_consumer_set_domain (pf_node_consumer_get_transport (c),
      ordinal);
}
