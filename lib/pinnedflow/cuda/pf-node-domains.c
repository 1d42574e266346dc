/* pinnedflow: one copy per memory domain for node producers, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pf_node_producer_enable_domains() and pf_node_producer_get_domain_stats()
 * (pf-node-domains.h; docs/cuda.md, "One copy per domain"). The node layer
 * below knows nothing of CUDA: at each publish it asks the hooks installed
 * here (pf_node_producer_set_domain_hooks(), pf-node-private.h) for the
 * other variants of its frame; the copies themselves are pf-domains.c's
 * (the producer-side object every producer of this library shares): a
 * host producer's frame uploaded once into each device domain its
 * consumers named, a device producer's frame copied once into each other
 * device of this process its consumers named (cuMemcpyPeer) and
 * downloaded once into a pinned host pool when a consumer in the host
 * domain is connected.
 *
 * Threading: prepare()/download() run on the publishing thread, release()
 * on the transport's I/O thread or the publisher's, stats on any
 * (pf-domains.h). The pf_domains object lives until the producer is freed
 * (destroy(), after the transport closed and every token came back).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "pf-domains.h"

#include <pinnedflow/pf-node-domains.h>
#include <pinnedflow/pf-node-private.h>

#include <errno.h>
#include <string.h>

static unsigned int
domains_prepare (void *data, pf_producer * transport,
    const pf_producer_frame * host, const void *bytes,
    pf_producer_frame * frames, pf_segment ** segs, void **tokens,
    unsigned int max)
{
  return pf_domains_upload (data, transport, host, bytes, frames, segs,
      tokens, max);
}

static unsigned int
domains_download (void *data, pf_producer * transport,
    const pf_producer_frame * dev, uint64_t dev_ptr,
    pf_producer_frame * frames, pf_segment ** segs, void **tokens,
    unsigned int max, unsigned int *n_host)
{
  return pf_domains_copy_device (data, transport, dev, dev_ptr, frames, segs,
      tokens, max, n_host);
}

static void
domains_release (void *data, void *token)
{
  pf_domains_release (data, token);
}

static void
domains_destroy (void *data)
{
  pf_domains_free (data);
}

int
pf_node_producer_enable_domains (pf_node_producer * p)
{
  pf_node_domain_hooks h;
  pf_domains *ds = NULL;
  pf_segment *seg;
  uint32_t n_slots;
  int res;

  if (p == NULL || (seg = pf_node_producer_get_segment (p)) == NULL ||
      (n_slots = pf_node_producer_get_n_slots (p)) == 0)
    return -EINVAL;
  if (pf_node_producer_get_domain_data (p) != NULL)
    return -EBUSY;
  /* the pool's stride (a page multiple): every frame fits a slot */
  res = pf_domains_new (pf_node_producer_get_slot_stride (p), n_slots,
      pf_segment_get_device (seg) != NULL ? seg : NULL, &ds);
  if (res < 0)
    return res;
  memset (&h, 0, sizeof (h));
  h.prepare = domains_prepare;
  h.download = domains_download;
  h.release = domains_release;
  h.destroy = domains_destroy;
  h.data = ds;
  res = pf_node_producer_set_domain_hooks (p, &h);
  if (res < 0)
    pf_domains_free (ds);
  return res;
}

int
pf_node_producer_get_domain_stats (pf_node_producer * p,
    pf_node_domain_stats * stats)
{
  pf_domains *ds = pf_node_producer_get_domain_data (p);

  if (stats == NULL)
    return -EINVAL;
  memset (stats, 0, sizeof (*stats));
  if (ds == NULL)
    return -EINVAL;
  pf_domains_get_stats (ds, stats);
  return 0;
}

int
pf_device_consumer_set_domain (pf_consumer * c, int ordinal)
{
  uint8_t uuid[16];
  int res;

  if (c == NULL || ordinal < 0)
    return -EINVAL;
  res = pf_domains_uuid_of (ordinal, uuid);
  if (res < 0)
    return res;
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
