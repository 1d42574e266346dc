/* pinnedflow: one copy per memory domain, the producer's side
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The per-domain copier of a producer (issue 32, item 3; docs/cuda.md
 * "One copy per domain"), in one place for every producer built on
 * pf_producer: the node producer (pf_node_producer_enable_domains(),
 * pf-node-domains.c) and pinnedshmsink (gst/shm/gstpinnedshmsinkdomains.c).
 *
 * - A host stream: pf_domains_upload() copies a host frame once into each
 *   device domain its consumers named (a pool of device slots per device,
 *   cuMemcpyHtoD) and hands back the device variants.
 * - A device stream: pf_domains_copy_device() copies a device frame once
 *   into each other device of this process its consumers named (a pool of
 *   device slots per device, cuMemcpyPeer) and once into a pinned host
 *   pool (cuMemcpyDtoH) when a consumer in the host domain is connected,
 *   and hands back those variants (pf_domains_download(): the host one
 *   only).
 * - The variants' tokens come back with pf_domains_release().
 * - pf_domains_get_stats(): copies per domain and per frame.
 *
 * The caller publishes the variants: pf_producer_publish_domains() for a
 * host stream (its frame first), pf_producer_publish_domains_full() for a
 * device stream (the host variant first when there is one, then its own
 * frame as device_default, then the other devices').
 * Tokens are >= PF_DOMAINS_TOKEN_MIN (a caller's own tokens stay below it,
 * or are told apart otherwise).
 *
 *   pf_domains *ds;
 *   pf_domains_new (stride, n_slots, NULL, &ds);   // -ENOENT: no CUDA
 *   n = pf_domains_upload (ds, producer, &frame, bytes, f, s, t, 7);
 *   ... publish frame and the n variants; each token, once back ...
 *   pf_domains_release (ds, token);
 *
 * Threading: upload/download on one publishing thread at a time; release
 * and stats on any thread. The CUDA driver is opened with dlopen, never
 * linked; nothing here touches CUDA before pf_domains_new().
 */
#ifndef __PF_DOMAINS_H__
#define __PF_DOMAINS_H__

#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-node-domains.h>
#include <pinnedflow/pf-producer.h>
#include <pinnedflow/pf-segment.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* Tokens of the copier's variants are at least this.
 * Since: 0.1 */
#define PF_DOMAINS_TOKEN_MIN ((uintptr_t) 0x10000)

/* Since: 0.1 */
  typedef struct pf_domains pf_domains;

/**
 * pf_domains_new:
 * @stride: the largest frame it copies, a multiple of 4096 (the slot
 *   stride of the producer's pool)
 * @n_slots: the producer's pool's slots (each copier pool has twice as
 *   many), 1..32768
 * @home: (nullable): the device segment a device producer's frames are in
 *   (its device is the stream's domain: downloads come from it), NULL for
 *   a host producer
 * @out: (out): the copier
 *
 * Opens the CUDA driver (dlopen) and calls cuInit; makes no memory yet.
 *
 * Returns: 0; -ENOENT (no CUDA driver), -ENODEV (cuInit failed, or @home's
 * device is not in this process), -EINVAL, -ENOMEM.
 *
 * Since: 0.1
 */
  PF_API int pf_domains_new (uint64_t stride, uint32_t n_slots,
      pf_segment * home, pf_domains ** out);

/**
 * pf_domains_free:
 *
 * Frees @ds, its pools and their memory: after every token came back (or
 * the transport was closed).
 *
 * Since: 0.1
 */
  PF_API void pf_domains_free (pf_domains * ds);

/**
 * pf_domains_upload:
 * @host: a host producer's frame (one chunk of at most the stride)
 * @bytes: its bytes in this process
 * @frames: (out): up to @max device variants
 * @segs: (out): their segments
 * @tokens: (out): their tokens
 *
 * One copy of @host into each device domain the connected consumers of
 * @transport named (pf_producer_get_device_domains()), each complete
 * (synchronised) before this returns.
 *
 * Returns: the number of variants; 0 when none is wanted or possible
 * (counted in the stats: unreachable, no_slot), never an error.
 *
 * Since: 0.1
 */
  PF_API unsigned int pf_domains_upload (pf_domains * ds,
      pf_producer * transport, const pf_producer_frame * host,
      const void *bytes, pf_producer_frame * frames, pf_segment ** segs,
      void **tokens, unsigned int max);

/**
 * pf_domains_download:
 * @dev: a device producer's frame (one chunk of at most the stride, on the
 *   home device)
 * @dev_ptr: its device address
 * @frame: (out): the host variant
 * @seg: (out): its segment
 * @token: (out): its token
 *
 * One copy of @dev into the pinned host pool (made at the first download),
 * complete before this returns, when a consumer of @transport is in the
 * host domain (pf_producer_get_host_domain_clients()).
 *
 * Returns: 1 with the variant; 0 when nobody is in the host domain or no
 * host slot came free (counted: host_no_slot), never an error.
 *
 * Since: 0.1
 */
  PF_API int pf_domains_download (pf_domains * ds, pf_producer * transport,
      const pf_producer_frame * dev, uint64_t dev_ptr,
      pf_producer_frame * frame, pf_segment ** seg, void **token);

/**
 * pf_domains_copy_device:
 * @dev: a device producer's frame (one chunk of at most the stride, on the
 *   home device)
 * @dev_ptr: its device address
 * @frames: (out): up to @max variants
 * @segs: (out): their segments
 * @tokens: (out): their tokens
 * @max: room in @frames, @segs, @tokens
 * @n_host: (out): 1 when @frames[0] is the host variant, else 0
 *
 * A device stream's frame in every other domain its connected consumers
 * are in, one copy per domain, each complete (synchronised) before this
 * returns: for each device of this process other than the home one that
 * a consumer named (pf_producer_get_device_domains()), one cuMemcpyPeer
 * into a slot of that device's pool; then, when a consumer would still
 * get the host variant (pf_producer_get_host_domain_clients_full() with
 * the home device and those copied to), one download into the pinned host
 * pool. Publish with pf_producer_publish_domains_full(): the host variant
 * (when @n_host), the home frame as device_default, then the others.
 *
 * Returns: the number of variants, the host one first; 0 when none is
 * wanted or possible (counted in the stats: unreachable, no_slot,
 * host_no_slot), never an error.
 *
 * Since: 0.1
 */
  PF_API unsigned int pf_domains_copy_device (pf_domains * ds,
      pf_producer * transport, const pf_producer_frame * dev,
      uint64_t dev_ptr, pf_producer_frame * frames, pf_segment ** segs,
      void **tokens, unsigned int max, unsigned int *n_host);

/**
 * pf_domains_release:
 *
 * A variant's token came back (its consumers released it, or nobody got
 * it): its slot is free again. Tokens not made by @ds are ignored. Any
 * thread.
 *
 * Since: 0.1
 */
  PF_API void pf_domains_release (pf_domains * ds, void *token);

/**
 * pf_domains_get_stats:
 *
 * Copies per domain and per frame, memory held (the fields of
 * pf_node_domain_stats). Any thread.
 *
 * Since: 0.1
 */
  PF_API void pf_domains_get_stats (pf_domains * ds,
      pf_node_domain_stats * stats);

/**
 * pf_domains_uuid_of:
 *
 * The UUID (cuDeviceGetUuid) of device @ordinal in this process.
 *
 * Returns: 0; -ENOENT (no CUDA driver), -ENODEV (no such device, cuInit
 * failed), -EINVAL.
 *
 * Since: 0.1
 */
  PF_API int pf_domains_uuid_of (int ordinal, uint8_t uuid[16]);

#ifdef __cplusplus
}
#endif
#endif                          /* __PF_DOMAINS_H__ */
