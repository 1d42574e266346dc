/* pinnedflow node API: one copy per memory domain (node producers)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A host node producer (pf_node_producer_new()) whose consumers want
 * device frames on device D (pf_node_consumer_new_full() with
 * PF_NODE_CONSUMER_DEVICE, which names its device with a DOMAIN:
 * docs/protocol.md 3.12) uploads each frame once into a device pool on D
 * (device segments, pf_device_segment_new()) and publishes it in both
 * domains (pf_producer_publish_domains()): every consumer of D shares the
 * one copy, host consumers get the host frame. Nothing is copied into a
 * domain nobody asked for (pf_producer_get_device_domains() at each
 * publish). A device node producer (pf_node_producer_new_device()) with
 * consumers in the host domain (not asking for device frames, or naming
 * a device it cannot reach) downloads each frame once into a pinned host
 * pool, and for consumers that named another device of its process copies
 * each frame once into that device (cuMemcpyPeer), and publishes it in
 * every such domain: its consumers of its device get the device frame with
 * no copy, the others share the copy of their domain; no consumer of a
 * domain, no copy into it. The copies are pf-domains.c's (the producer-side copier
 * pinnedshmsink shares). docs/cuda.md, "One copy per domain".
 *
 *   pf_node_producer_new (&cfg, &p);
 *   pf_node_producer_enable_domains (p);   // -ENOENT: no CUDA here
 *   ... loan, fill, publish as ever ...
 *   pf_node_domain_stats st;
 *   pf_node_producer_get_domain_stats (p, &st);  // uploads per domain
 *
 * Without pf_node_producer_enable_domains() (or without a CUDA driver in
 * the producer's process), device consumers get host frames and upload
 * themselves, as before. A domain whose device is not in this process, or
 * whose device slots are all held, gets the host frame (counted).
 *
 * Threading: as pf-node.h; the domain state has its own lock, a leaf.
 */
#ifndef __PF_NODE_DOMAINS_H__
#define __PF_NODE_DOMAINS_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-node.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Device domains one producer copies into, at most. */
#define PF_NODE_MAX_DOMAINS 7

/* Since: 0.1 */
  typedef struct
  {
    uint8_t uuid[16];           /* the device (cuDeviceGetUuid) */
    int32_t ordinal;            /* its ordinal here, -1: not in this process */
    uint32_t n_slots;           /* device slots (twice the host pool's) */
    uint32_t free_slots;        /* of those, not held by any consumer */
    uint32_t reserved;
    uint64_t uploads;           /* host-to-device copies into it */
    uint64_t bytes;             /* bytes copied into it */
    uint64_t device_bytes;      /* device memory its pool holds */
    uint64_t no_slot;           /* frames it got as host frames: no free slot */
    uint64_t peer_copies;       /* device-to-device copies into it (a device
                                 * stream's, from the stream's device) */
    uint64_t waits;             /* copies that found every slot held and
                                 * waited for a release */
  } pf_node_domain_info;

/* Since: 0.1 */
  typedef struct
  {
    uint64_t frames;            /* frames published with domains enabled */
    uint64_t uploads;           /* host-to-device copies, all domains */
    uint64_t frames_uploaded;   /* frames that got at least one copy */
    uint64_t unreachable;       /* frames whose wanted domain has no device here */
    uint64_t device_bytes;      /* device memory held, all pools */
    uint32_t n_domains;         /* entries in domain[] */
    uint32_t reserved;
    pf_node_domain_info domain[PF_NODE_MAX_DOMAINS];
    /* a device producer's host domain (pf_node_producer_new_device()) */
    uint64_t downloads;         /* device-to-host copies, one per frame at most */
    uint64_t download_bytes;    /* bytes copied into the host domain */
    uint64_t host_no_slot;      /* frames its host consumers missed: no free host slot */
    uint64_t host_bytes;        /* host memory of its download pool (pinned) */
    uint32_t host_slots;        /* slots of that pool (0: none made yet) */
    uint32_t host_free_slots;   /* of those, not held by any consumer */
    /* a device producer's other devices (cuMemcpyPeer) */
    uint64_t peer_copies;       /* device-to-device copies, all domains */
    uint64_t host_waits;        /* downloads that found every host slot held
                                 * and waited for a release */
  } pf_node_domain_stats;

/**
 * pf_node_producer_enable_domains:
 * @p: a node producer (pf_node_producer_new() or
 *   pf_node_producer_new_device()), before its first publish
 *
 * Makes a host producer upload each frame once into each device domain
 * its consumers ask for, a device producer download each frame once for
 * its consumers in the host domain (see above).
 *
 * Returns: 0; -ENOENT (no CUDA driver in this process: consumers get host
 * frames), -ENODEV (cuInit failed, or a device producer's device is not
 * found again), -EINVAL (NULL), -EBUSY (enabled already), -ENOMEM.
 *
 * Since: 0.1
 */
  PF_API int pf_node_producer_enable_domains (pf_node_producer * p);

/**
 * pf_node_producer_get_domain_stats:
 *
 * Copies per domain and per frame (uploads / frames, downloads / frames),
 * device and host memory held.
 * Any thread.
 *
 * Returns: 0, or -EINVAL (@p has no domains enabled, NULL).
 *
 * Since: 0.1
 */
  PF_API int pf_node_producer_get_domain_stats (pf_node_producer * p,
      pf_node_domain_stats * stats);

/**
 * pf_device_consumer_set_domain:
 * @c: a consumer made with %PF_CONSUMER_OPTION_DEVICE_SEGMENTS
 * @ordinal: the device (cuDeviceGet) it wants its frames on
 *
 * pf_consumer_set_domain() with the UUID of device @ordinal: a producer
 * that copies into domains (pf_node_producer_enable_domains()) sends this
 * consumer its frames already on that device.
 *
 * Returns: 0; -ENOENT (no CUDA driver), -ENODEV (no such device, cuInit
 * failed), or pf_consumer_set_domain()'s error.
 *
 * Since: 0.1
 */
  PF_API int pf_device_consumer_set_domain (pf_consumer * c, int ordinal);

/**
 * pf_node_consumer_set_domain:
 * @c: a consumer made with %PF_NODE_CONSUMER_DEVICE
 *
 * pf_device_consumer_set_domain() on @c's transport.
 *
 * Since: 0.1
 */
  PF_API int pf_node_consumer_set_domain (pf_node_consumer * c, int ordinal);

#ifdef __cplusplus
}
#endif
#endif                          /* __PF_NODE_DOMAINS_H__ */
