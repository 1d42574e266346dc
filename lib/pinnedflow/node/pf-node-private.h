/* pinnedflow: the node API's hooks for the CUDA layer (private, not
 * installed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The node layer sits below the CUDA layer (tools/check-layout.py): it
 * knows device segments only as pf_segment_get_device() says (plain
 * data). The device side of nodes (pf_node_producer_new_device(),
 * pf_node_consumer_new_full() with PF_NODE_CONSUMER_DEVICE,
 * pf_node_frame_get_device(): cuda/pf-node-device.c) makes and imports
 * the memory and builds on these.
 */
#ifndef __PF_NODE_PRIVATE_H__
#define __PF_NODE_PRIVATE_H__

#include <pinnedflow/pf-node.h>

/* The access of this process's mapping of a device segment
 * (pf_device_segment_get_access()). */
typedef unsigned int (*pf_node_device_access_func) (pf_segment * seg);

/* Waits for the work queued on @n @streams (readers of a device frame in
 * @seg) before the frame goes back: 0 or -EIO. */
typedef int (*pf_node_device_sync_func) (pf_segment * seg,
    const uintptr_t * streams, uint32_t n);

/* At most this many reader streams per device frame. */
#define PF_NODE_MAX_READERS 8

/* pf_node_consumer_new_with() that connects with the transport's
 * @options (pf_consumer_options.flags) and, when @access is not NULL,
 * reads device frames' read-only flag with it. The caller enables the
 * transport's device import itself (before the first next()). */
int pf_node_consumer_connect (const char *socket_path, int timeout_ms,
    uint32_t delivery, uint32_t options, pf_node_device_access_func access,
    pf_node_consumer ** out);

/* What pf_node_frame_release() calls for a device frame with readers
 * (pf_node_frame_add_reader()) before releasing it. */
void pf_node_consumer_set_device_sync (pf_node_consumer * c,
    pf_node_device_sync_func sync);

/* Names @stream (not 0) a reader of the device frame @frame: -EINVAL (a
 * host frame, stream 0), -ENOSPC (PF_NODE_MAX_READERS already); a stream
 * named twice counts once. Any thread, one at a time per frame. */
int pf_node_frame_add_reader (pf_node_frame * frame, uintptr_t stream);

/* The device address of each chunk of a device frame (0 for the others);
 * -EINVAL for a host frame. */
int pf_node_frame_get_chunk_ptrs (const pf_node_frame * frame,
    uint64_t ptr[PF_MAX_CHUNKS]);

/* pf_node_producer_new() with the pool in @seg (a reference is taken),
 * which the caller made big enough (pf_pool_slot_stride () * n_slots);
 * @device_base: its device address for a device segment (loans then say
 * domain DEVICE with data at device_base + the slot's offset), else 0. */
int pf_node_producer_new_in (const pf_node_producer_config * config,
    pf_segment * seg, uint64_t device_base, pf_node_producer ** out);

/* One copy per domain (cuda/pf-node-domains.c, docs/cuda.md "One copy
 * per domain"): what a node producer asks of the CUDA layer at each
 * publish (prepare: a host producer, download: a device producer). Tokens of device variants are above PF_NODE_DOMAIN_TOKEN_MIN
 * (host slots' tokens are slot + 1 <= 4096). */
#define PF_NODE_DOMAIN_TOKEN_MIN ((uintptr_t) 0x10000)
typedef struct
{
  /* Fills up to @max device variants of the host frame @host (its bytes
   * at @bytes in this process): their frames, segments (one chunk each)
   * and tokens (> PF_NODE_DOMAIN_TOKEN_MIN). Returns how many (0: none
   * wanted or none possible); never fails the publish. */
  unsigned int (*prepare) (void *data, pf_producer * transport,
      const pf_producer_frame * host, const void *bytes,
      pf_producer_frame * frames, pf_segment ** segs, void **tokens,
      unsigned int max);
  /* A device producer's frame @dev (its bytes at device address @dev_ptr):
   * up to @max variants in the other domains its consumers are in (their
   * frames, segments, tokens > PF_NODE_DOMAIN_TOKEN_MIN), the host one
   * first when @n_host is 1, then other devices'. Returns how many (0:
   * the frame is published on its device alone); never fails the
   * publish. */
  unsigned int (*download) (void *data, pf_producer * transport,
      const pf_producer_frame * dev, uint64_t dev_ptr,
      pf_producer_frame * frames, pf_segment ** segs, void **tokens,
      unsigned int max, unsigned int *n_host);
  /* A variant's token came back (frame_released), or was never
   * sent (publish gave it to nobody). */
  void (*release) (void *data, void *token);
  /* With pf_node_producer_free(), after the transport closed. */
  void (*destroy) (void *data);
  void *data;
} pf_node_domain_hooks;

/* Installs @hooks (copied) on @p (a host pool needs prepare, a device
 * pool download): -EINVAL without them, -EBUSY when some are installed
 * already. Before the first publish. */
int pf_node_producer_set_domain_hooks (pf_node_producer * p,
    const pf_node_domain_hooks * hooks);

/* The slot stride of @p's pool (a page multiple), 0 for NULL. */
uint64_t pf_node_producer_get_slot_stride (pf_node_producer * p);

/* The data of @p's domain hooks, or NULL when none are installed. */
void *pf_node_producer_get_domain_data (pf_node_producer * p);

#endif /* __PF_NODE_PRIVATE_H__ */
