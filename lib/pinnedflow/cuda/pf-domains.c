/* pinnedflow: one copy per memory domain, the producer's side, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pf-domains.h (docs/cuda.md, "One copy per domain"). Uploads: for each
 * device domain the consumers want (pf_producer_get_device_domains()) a
 * pool of device slots in one device segment on that device
 * (pf_device_segment_new(), twice as many slots as the producer's pool),
 * a slot loaned per frame, the frame copied into it once (cuMemcpyHtoD in
 * the device's primary context, then cuCtxSynchronize: complete before
 * publish). Downloads (a device producer): when a consumer in the host
 * domain is connected, one pinned host pool (a memfd segment registered
 * with cuMemHostRegister, made at the first download), a slot loaned per
 * frame, the frame copied into it once (cuMemcpyDtoH, then
 * cuCtxSynchronize); for consumers that named another device of this
 * process, a pool of device slots on that device, as for uploads, the
 * frame copied into a slot once (cuMemcpyPeer from the stream's device,
 * then cuCtxSynchronize in the destination's context: strict, each side
 * in its own device's context, never a cuMemcpyDtoD across devices).
 * A slot goes back to its pool when its variant's token
 * does (every consumer of that domain released it, or nobody got it).
 *
 * Tokens: PF_DOMAINS_TOKEN_MIN + (domain << 16) + slot; domain
 * PF_NODE_MAX_DOMAINS is the host pool.
 *
 * Threading: upload/download run on the publishing thread; @lock guards
 * the domain table and the counters (a leaf: never held while calling the
 * transport, nor during a copy or a wait for a slot, so the stats stay
 * readable); a domain's pool and the host pool are made by the publishing
 * thread and read by it without the lock; release() takes no lock but the
 * pool's (see there). A domain once made stays until pf_domains_free().
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "pf-domains.h"

#include <pinnedflow/pf-device-segment.h>
#include <pinnedflow/pf-pool.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* The driver calls of the copies (opened once, never linked). */
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
  int (*memcpy_dtoh) (void *dst, uint64_t src, size_t bytes);
  int (*host_register) (void *p, size_t bytes, unsigned int flags);
  int (*host_unregister) (void *p);
  int (*ctx_sync) (void);
  /* optional: without it, a device stream's other devices are unreachable */
  int (*memcpy_peer) (uint64_t dst, void *dst_ctx, uint64_t src,
      void *src_ctx, size_t bytes);
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
  *(void **) &drv.memcpy_dtoh = dlsym (h, "cuMemcpyDtoH_v2");
  *(void **) &drv.host_register = dlsym (h, "cuMemHostRegister_v2");
  *(void **) &drv.host_unregister = dlsym (h, "cuMemHostUnregister");
  *(void **) &drv.ctx_sync = dlsym (h, "cuCtxSynchronize");
  if (!drv.init || !drv.device_get_count || !drv.device_get ||
      !drv.device_get_uuid || !drv.primary_retain || !drv.primary_release ||
      !drv.ctx_push || !drv.ctx_pop || !drv.memcpy_htod || !drv.memcpy_dtoh
      || !drv.host_register || !drv.host_unregister || !drv.ctx_sync)
    memset (&drv, 0, sizeof (drv));
  else
    *(void **) &drv.memcpy_peer = dlsym (h, "cuMemcpyPeer");
  /* the handle stays open for the process's life, as the CUDA layer's */
}

/* How long a copy waits for a free slot (its consumers' last release may
 * be on its way from the transport's I/O thread) before the domain gets
 * no copy of this frame: short, so that consumers sitting on their
 * frames cannot slow a live producer much. PINNEDFLOW_DOMAIN_WAIT_MS
 * (0..60000) changes it, read by pf_domains_new(). */
#define LOAN_MS 20
#define LOAN_MS_MAX 60000
/* Slots per slot of the producer's pool: consumers of a domain with
 * newest-frame delivery may hold other frames than the others do. */
#define SLOTS_PER_PRODUCER_SLOT 2

struct domain
{
  pf_node_domain_info info;
  pf_pool *pool;                /* NULL: no device here (ordinal -1) */
  void *ctx;                    /* the device's primary context, retained */
  int dev;
};

struct pf_domains
{
  pthread_mutex_t lock;
  int wait_ms;                  /* a copy's wait for a free slot */
  uint32_t n_slots;
  uint64_t stride;
  unsigned int n;
  struct domain d[PF_NODE_MAX_DOMAINS];
  /* a device producer's: its device, the host pool (made at the first
   * download, registered with the driver) */
  int has_home;
  uint8_t home_uuid[16];
  void *home_ctx;
  int home_dev;
  pf_pool *host_pool;
  void *host_registered;        /* the base cuMemHostRegister took, or NULL */
  pf_node_domain_stats st;      /* counters (domain[] copied from d[]) */
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

int
pf_domains_new (uint64_t stride, uint32_t n_slots, pf_segment * home,
    pf_domains ** out)
{
  const pf_segment_device *hd = NULL;
  const char *env;
  pf_domains *ds;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (stride == 0 || (stride & 4095) != 0 || n_slots == 0 ||
      n_slots > 0x8000 || (home != NULL &&
          (hd = pf_segment_get_device (home)) == NULL))
    return -EINVAL;
  pthread_once (&drv_once, drv_load);
  if (drv.init == NULL)
    return -ENOENT;
  if (drv.init (0) != 0)
    return -ENODEV;
  if ((ds = calloc (1, sizeof (*ds))) == NULL)
    return -ENOMEM;
  ds->stride = stride;
  ds->n_slots = n_slots * SLOTS_PER_PRODUCER_SLOT;
  ds->wait_ms = LOAN_MS;
  if ((env = getenv ("PINNEDFLOW_DOMAIN_WAIT_MS")) != NULL && *env != '\0') {
    char *end;
    unsigned long v = strtoul (env, &end, 10);

    if (*end == '\0' && v <= LOAN_MS_MAX)
      ds->wait_ms = (int) v;
  }
  if (hd != NULL) {
    memcpy (ds->home_uuid, hd->uuid, 16);
    if (find_device (ds->home_uuid, &ds->home_dev) < 0 ||
        drv.primary_retain (&ds->home_ctx, ds->home_dev) != 0) {
      free (ds);
      return -ENODEV;
    }
    ds->has_home = 1;
  }
  pthread_mutex_init (&ds->lock, NULL);
  *out = ds;
  return 0;
}

void
pf_domains_free (pf_domains * ds)
{
  unsigned int i;
  void *popped;

  if (ds == NULL)
    return;
  for (i = 0; i < ds->n; i++) {
    if (ds->d[i].pool != NULL) {
      pf_pool_unref (ds->d[i].pool);
      drv.primary_release (ds->d[i].dev);
    }
  }
  if (ds->host_pool != NULL) {
    if (ds->host_registered != NULL && drv.ctx_push (ds->home_ctx) == 0) {
      drv.host_unregister (ds->host_registered);
      drv.ctx_pop (&popped);
    }
    pf_pool_unref (ds->host_pool);
  }
  if (ds->has_home)
    drv.primary_release (ds->home_dev);
  pthread_mutex_destroy (&ds->lock);
  free (ds);
}

/* The domain of @uuid, made on first sight (under ds->lock): NULL when
 * the table is full. A device not in this process gets an entry without
 * a pool (counted as unreachable at each frame). */
static struct domain *
domain_get (pf_domains * ds, const uint8_t uuid[16])
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

/* A free slot of @pool: 0, or -EAGAIN after @wait_ms. */
static int
loan_slot (pf_pool * pool, pf_producer * transport, int wait_ms,
    pf_pool_slot * slot)
{
  int err;

  if (pf_pool_loan (pool, 0, slot) == 0)
    return 0;
  if (wait_ms <= 0)
    return -EAGAIN;
  /* every slot out: their consumers' releases may be in the release
   * rings, unrung while nobody waits (the doorbell on demand,
   * pf_producer_want_releases ()): ask for them while we wait (this takes
   * those there, and pf_domains_release () takes no lock of ours) */
  pf_producer_want_releases (transport, 1);
  err = pf_pool_loan (pool, wait_ms, slot);
  pf_producer_want_releases (transport, 0);
  return err < 0 ? -EAGAIN : 0;
}

enum
{
  COPY_HTOD,                    /* @host to a device slot */
  COPY_DTOH,                    /* @dev_ptr to a host slot */
  COPY_PEER,                    /* @dev_ptr (in @src_ctx) to a device slot */
};

/* One copy into a slot of @pool in context @ctx (@kind: see above):
 * 0 with the slot in @slot, -EAGAIN (none free), -EIO (the copy failed:
 * the slot went back). Without ds->lock: the stats stay readable while it
 * waits for a slot. */
static int
copy_into (pf_domains * ds, pf_pool * pool, void *ctx,
    pf_producer * transport, int kind, const void *host, uint64_t dev_ptr,
    void *src_ctx, uint64_t size, pf_pool_slot * slot)
{
  uint64_t dst;
  void *popped;
  int err;

  if (loan_slot (pool, transport, ds->wait_ms, slot) < 0)
    return -EAGAIN;
  if (drv.ctx_push (ctx) != 0) {
    pf_pool_return (pool, slot->index);
    return -EIO;
  }
  /* complete before publish (docs/cuda.md: a producer publishes a frame
   * once its writes are done): a copy may return before it is done */
  dst = kind == COPY_DTOH ? 0 :
      pf_device_segment_get_ptr (pf_pool_get_segment (pool)) + slot->offset;
  if (kind == COPY_HTOD)
    err = drv.memcpy_htod (dst, host, size);
  else if (kind == COPY_PEER)
    err = drv.memcpy_peer (dst, ctx, dev_ptr, src_ctx, size);
  else
    err = drv.memcpy_dtoh (slot->data, dev_ptr, size);
  if (err == 0)
    err = drv.ctx_sync ();
  drv.ctx_pop (&popped);
  if (err != 0) {
    pf_pool_return (pool, slot->index);
    return -EIO;
  }
  /* the loan's ticket is ours: spent here, the hold stays until release */
  pf_pool_redeem (pool, slot->index, slot->id);
  return 0;
}

static void *
make_token (unsigned int domain, uint32_t slot)
{
  return (void *) (PF_DOMAINS_TOKEN_MIN + ((uintptr_t) domain << 16) + slot);
}

/* The domain of @uuid (made on first sight), under ds->lock; NULL when
 * the table is full or (counted unreachable) its device is not here. */
static struct domain *
domain_find (pf_domains * ds, const uint8_t uuid[16])
{
  struct domain *d;

  pthread_mutex_lock (&ds->lock);
  d = domain_get (ds, uuid);
  if (d != NULL && d->pool == NULL) {
    ds->st.unreachable++;
    d = NULL;
  }
  pthread_mutex_unlock (&ds->lock);
  return d;
}

/* Counts a copy into @d (@err: copy_into ()'s), under ds->lock. */
static void
domain_count (pf_domains * ds, struct domain *d, int err, int peer,
    uint64_t size)
{
  pthread_mutex_lock (&ds->lock);
  if (err < 0) {
    d->info.no_slot++;
  } else {
    if (peer) {
      d->info.peer_copies++;
      ds->st.peer_copies++;
    } else {
      d->info.uploads++;
      ds->st.uploads++;
    }
    d->info.bytes += size;
  }
  pthread_mutex_unlock (&ds->lock);
}

/* A variant: @src in slot @slot of @d. */
static void
variant_fill (pf_domains * ds, struct domain *d, const pf_pool_slot * slot,
    const pf_producer_frame * src, pf_producer_frame * frame,
    pf_segment ** seg, void **token)
{
  *frame = *src;
  *seg = pf_pool_get_segment (d->pool);
  frame->chunks[0].segment_id = pf_segment_get_id (*seg);
  frame->chunks[0].offset = slot->offset;
  *token = make_token ((unsigned int) (d - ds->d), slot->index);
}

unsigned int
pf_domains_upload (pf_domains * ds, pf_producer * transport,
    const pf_producer_frame * host, const void *bytes,
    pf_producer_frame * frames, pf_segment ** segs, void **tokens,
    unsigned int max)
{
  pf_producer_domain want[PF_NODE_MAX_DOMAINS];
  unsigned int n_want, i, n = 0;

  if (ds == NULL || host == NULL || bytes == NULL || ds->has_home)
    return 0;
  n_want = pf_producer_get_device_domains (transport, want,
      PF_NODE_MAX_DOMAINS);
  if (n_want > PF_NODE_MAX_DOMAINS)
    n_want = PF_NODE_MAX_DOMAINS;
  pthread_mutex_lock (&ds->lock);
  ds->st.frames++;
  pthread_mutex_unlock (&ds->lock);
  /* one chunk that fits a slot */
  for (i = 0; i < n_want && n < max && host->n_chunks == 1 &&
      host->chunks[0].size <= ds->stride; i++) {
    struct domain *d = domain_find (ds, want[i].uuid);
    pf_pool_slot slot;
    int err;

    if (d == NULL)
      continue;
    err = copy_into (ds, d->pool, d->ctx, transport, COPY_HTOD, bytes, 0,
        NULL, host->chunks[0].size, &slot);
    domain_count (ds, d, err, 0, host->chunks[0].size);
    if (err < 0)
      continue;
    variant_fill (ds, d, &slot, host, &frames[n], &segs[n], &tokens[n]);
    n++;
  }
  if (n > 0) {
    pthread_mutex_lock (&ds->lock);
    ds->st.frames_uploaded++;
    pthread_mutex_unlock (&ds->lock);
  }
  return n;
}

/* The host pool, made at the first download (under ds->lock): 0 or a
 * negative errno. */
static int
host_pool_make (pf_domains * ds)
{
  pf_segment *seg = NULL;
  void *popped;
  int res;

  res = pf_segment_new ("pinnedflow-domains-host", ds->stride * ds->n_slots,
      0, &seg);
  if (res < 0)
    return res;
  res = pf_pool_new (seg, ds->stride, ds->n_slots, &ds->host_pool);
  if (res < 0) {
    ds->host_pool = NULL;
    pf_segment_unref (seg);
    return res;
  }
  /* pinned: the downloads are DMA; pageable memory works too, slower */
  if (drv.ctx_push (ds->home_ctx) == 0) {
    if (drv.host_register (pf_segment_get_base (seg),
            pf_segment_get_size (seg), 0) == 0)
      ds->host_registered = pf_segment_get_base (seg);
    drv.ctx_pop (&popped);
  }
  ds->st.host_slots = ds->n_slots;
  ds->st.host_bytes = pf_segment_get_size (seg);
  pf_segment_unref (seg);       /* the pool holds it */
  return 0;
}

/* The download of @dev into the host pool (ds->lock not held): 1 with
 * the variant, 0 (no slot, or the copy failed: counted). */
static int
download_one (pf_domains * ds, pf_producer * transport,
    const pf_producer_frame * dev, uint64_t dev_ptr,
    pf_producer_frame * frame, pf_segment ** seg, void **token)
{
  pf_pool_slot slot;
  int ok;

  pthread_mutex_lock (&ds->lock);
  ok = dev->n_chunks == 1 && dev->chunks[0].size <= ds->stride &&
      (ds->host_pool != NULL || host_pool_make (ds) == 0);
  pthread_mutex_unlock (&ds->lock);
  /* the pool is the publishing thread's to make: read without the lock */
  ok = ok && copy_into (ds, ds->host_pool, ds->home_ctx, transport,
      COPY_DTOH, NULL, dev_ptr, NULL, dev->chunks[0].size, &slot) == 0;
  pthread_mutex_lock (&ds->lock);
  if (ok) {
    ds->st.downloads++;
    ds->st.download_bytes += dev->chunks[0].size;
  } else {
    ds->st.host_no_slot++;
  }
  pthread_mutex_unlock (&ds->lock);
  if (!ok)
    return 0;
  *frame = *dev;
  *seg = pf_pool_get_segment (ds->host_pool);
  frame->chunks[0].segment_id = pf_segment_get_id (*seg);
  frame->chunks[0].offset = slot.offset;
  *token = make_token (PF_NODE_MAX_DOMAINS, slot.index);
  return 1;
}

int
pf_domains_download (pf_domains * ds, pf_producer * transport,
    const pf_producer_frame * dev, uint64_t dev_ptr,
    pf_producer_frame * frame, pf_segment ** seg, void **token)
{
  if (ds == NULL || dev == NULL || frame == NULL || seg == NULL ||
      token == NULL || !ds->has_home)
    return 0;
  pthread_mutex_lock (&ds->lock);
  ds->st.frames++;
  pthread_mutex_unlock (&ds->lock);
  if (pf_producer_get_host_domain_clients (transport, ds->home_uuid) == 0)
    return 0;
  return download_one (ds, transport, dev, dev_ptr, frame, seg, token);
}

unsigned int
pf_domains_copy_device (pf_domains * ds, pf_producer * transport,
    const pf_producer_frame * dev, uint64_t dev_ptr,
    pf_producer_frame * frames, pf_segment ** segs, void **tokens,
    unsigned int max, unsigned int *n_host)
{
  pf_producer_domain want[PF_NODE_MAX_DOMAINS];
  uint8_t on[PF_NODE_MAX_DOMAINS + 1][16];
  unsigned int n_want, i, n = 1;

  if (n_host != NULL)
    *n_host = 0;
  if (ds == NULL || dev == NULL || frames == NULL || segs == NULL ||
      tokens == NULL || n_host == NULL || max == 0 || !ds->has_home)
    return 0;
  n_want = pf_producer_get_device_domains (transport, want,
      PF_NODE_MAX_DOMAINS);
  if (n_want > PF_NODE_MAX_DOMAINS)
    n_want = PF_NODE_MAX_DOMAINS;
  memcpy (on[0], ds->home_uuid, 16);
  pthread_mutex_lock (&ds->lock);
  ds->st.frames++;
  pthread_mutex_unlock (&ds->lock);
  /* the other devices first (frames[0] is kept for the host variant) */
  for (i = 0; i < n_want && n < max && dev->n_chunks == 1 &&
      dev->chunks[0].size <= ds->stride; i++) {
    struct domain *d;
    pf_pool_slot slot;
    int err;

    if (memcmp (want[i].uuid, ds->home_uuid, 16) == 0 ||
        (d = domain_find (ds, want[i].uuid)) == NULL)
      continue;
    err = drv.memcpy_peer == NULL ? -ENOSYS : copy_into (ds, d->pool, d->ctx,
        transport, COPY_PEER, NULL, dev_ptr, ds->home_ctx,
        dev->chunks[0].size, &slot);
    if (err == -ENOSYS) {
      /* a driver without the peer copy: that device is out of reach */
      pthread_mutex_lock (&ds->lock);
      ds->st.unreachable++;
      pthread_mutex_unlock (&ds->lock);
      continue;
    }
    domain_count (ds, d, err, 1, dev->chunks[0].size);
    if (err < 0)
      continue;
    memcpy (on[n], want[i].uuid, 16);
    variant_fill (ds, d, &slot, dev, &frames[n], &segs[n], &tokens[n]);
    n++;
  }
  /* the host domain: whoever is on none of those devices */
  if (pf_producer_get_host_domain_clients_full (transport,
          (const uint8_t (*)[16]) on, n) > 0 &&
      download_one (ds, transport, dev, dev_ptr, &frames[0], &segs[0],
          &tokens[0]) == 1) {
    *n_host = 1;
    return n;
  }
  /* no host variant: the others move down */
  memmove (frames, frames + 1, (n - 1) * sizeof (*frames));
  memmove (segs, segs + 1, (n - 1) * sizeof (*segs));
  memmove (tokens, tokens + 1, (n - 1) * sizeof (*tokens));
  return n - 1;
}

void
pf_domains_release (pf_domains * ds, void *token)
{
  uintptr_t t = (uintptr_t) token;
  unsigned int idx;
  pf_pool *pool;

  if (ds == NULL || t < PF_DOMAINS_TOKEN_MIN)
    return;
  t -= PF_DOMAINS_TOKEN_MIN;
  idx = (unsigned int) (t >> 16);
  /* without ds->lock (a publish may hold it, waiting for this very slot):
   * a pool is set once, before its first token left upload/download, and
   * the transport's lock orders that before this release */
  if (idx == PF_NODE_MAX_DOMAINS)
    pool = ds->host_pool;
  else if (idx < PF_NODE_MAX_DOMAINS)
    pool = ds->d[idx].pool;
  else
    pool = NULL;
  if (pool != NULL)
    pf_pool_return (pool, (uint32_t) (t & 0xffff));
}

void
pf_domains_get_stats (pf_domains * ds, pf_node_domain_stats * stats)
{
  pf_pool_stats ps;
  unsigned int i;

  if (stats == NULL)
    return;
  memset (stats, 0, sizeof (*stats));
  if (ds == NULL)
    return;
  pthread_mutex_lock (&ds->lock);
  *stats = ds->st;
  stats->n_domains = ds->n;
  for (i = 0; i < ds->n; i++) {
    stats->domain[i] = ds->d[i].info;
    if (ds->d[i].pool != NULL) {
      pf_pool_get_stats (ds->d[i].pool, &ps);
      stats->domain[i].free_slots = ps.n_free;
      stats->domain[i].waits = ps.waits;
    }
  }
  if (ds->host_pool != NULL) {
    pf_pool_get_stats (ds->host_pool, &ps);
    stats->host_free_slots = ps.n_free;
    stats->host_waits = ps.waits;
  }
  pthread_mutex_unlock (&ds->lock);
}

int
pf_domains_uuid_of (int ordinal, uint8_t uuid[16])
{
  int dev;

  if (ordinal < 0 || uuid == NULL)
    return -EINVAL;
  pthread_once (&drv_once, drv_load);
  if (drv.init == NULL)
    return -ENOENT;
  if (drv.init (0) != 0 || drv.device_get (&dev, ordinal) != 0 ||
      drv.device_get_uuid (uuid, dev) != 0)
    return -ENODEV;
  return 0;
}
