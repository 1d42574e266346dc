/* pinnedflow: one copy per memory domain, the producer's side (private)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The per-domain copy machinery of a producer, in one place (issue 32,
 * item 3; docs/cuda.md "One copy per domain"), used by the node producer
 * (pf-node-domains.c) and meant for any other producer of this library:
 *
 * - a host stream: pf_domains_upload() copies a host frame once into each
 *   device domain its consumers named (a pool of device slots per device,
 *   cuMemcpyHtoD) and hands back the device variants;
 * - a device stream: pf_domains_download() copies a device frame once into
 *   a pinned host pool (cuMemcpyDtoH) when a consumer in the host domain is
 *   connected and hands back the host variant;
 * - the variants' tokens come back with pf_domains_release();
 * - pf_domains_get_stats(): copies per domain and per frame.
 *
 * The caller publishes the variants (pf_producer_publish_domains(), for a
 * device stream pf_producer_publish_domains_full() with its own frame as
 * device_default): host variant first. Tokens are >= PF_DOMAINS_TOKEN_MIN (a caller's own tokens
 * stay below it).
 *
 * Exported (PF_API) for this project's GStreamer plugin
 * (gst/shm/gstpinnedshmsinkdomains.c), not installed: no ABI promise.
 *
 * Threading: upload/download on one publishing thread at a time; release
 * and stats on any thread. The CUDA driver is opened with dlopen, never
 * linked.
 */
#ifndef __PF_DOMAINS_H__
#define __PF_DOMAINS_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-node-domains.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-segment.h>

#define PF_DOMAINS_TOKEN_MIN ((uintptr_t) 0x10000)

typedef struct pf_domains pf_domains;

/* A copier for frames of up to @stride bytes (the slot stride of the
 * producer's pool, a page multiple), @n_slots slots per pool. @home: the
 * device segment a device producer's frames are in (its device is the
 * producer's domain: no copy for its consumers, downloads from it), NULL
 * for a host producer. Returns 0; -ENOENT (no CUDA driver), -ENODEV
 * (cuInit failed, or @home's device is not in this process), -EINVAL,
 * -ENOMEM. */
PF_API int pf_domains_new (uint64_t stride, uint32_t n_slots, pf_segment * home,
    pf_domains ** out);

/* After every token came back (or the transport is closed). */
PF_API void pf_domains_free (pf_domains * ds);

/* A host producer's frame @host (one chunk; its bytes at @bytes here):
 * the device variants its consumers want, up to @max (frames, segments,
 * tokens). 0: none wanted or none possible; never fails the publish. */
PF_API unsigned int pf_domains_upload (pf_domains * ds, pf_producer * transport,
    const pf_producer_frame * host, const void *bytes,
    pf_producer_frame * frames, pf_segment ** segs, void **tokens,
    unsigned int max);

/* A device producer's frame @dev (one chunk, at device address @dev_ptr
 * on the home device): its host variant when a consumer in the host
 * domain is connected (pf_producer_get_host_domain_clients(): one that
 * did not ask for device segments, or named another device; a consumer of
 * device segments that named none takes the device frame, as before).
 * Publish it with pf_producer_publish_domains_full(), the device frame as
 * device_default. 1 with @frame, @seg and @token filled; 0
 * (nobody in the host domain, or no host slot free: counted). */
PF_API int pf_domains_download (pf_domains * ds, pf_producer * transport,
    const pf_producer_frame * dev, uint64_t dev_ptr,
    pf_producer_frame * frame, pf_segment ** seg, void **token);

/* A variant's token came back (its consumers released it, or nobody got
 * it). Tokens below PF_DOMAINS_TOKEN_MIN are ignored. Any thread. */
PF_API void pf_domains_release (pf_domains * ds, void *token);

/* Copies per domain and per frame, memory held. Any thread. */
PF_API void pf_domains_get_stats (pf_domains * ds,
    pf_node_domain_stats * stats);

/* The UUID of device @ordinal in this process: 0; -ENOENT (no CUDA
 * driver), -ENODEV (no such device, cuInit failed), -EINVAL. */
PF_API int pf_domains_uuid_of (int ordinal, uint8_t uuid[16]);

#endif /* __PF_DOMAINS_H__ */
