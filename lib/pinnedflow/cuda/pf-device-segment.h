/* pinnedflow: device segments, CUDA virtual memory shared as fds (plain C)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A device segment is device memory made with the CUDA driver's virtual
 * memory calls (cuMemCreate with the POSIX-fd handle type), exported as an
 * fd (cuMemExportToShareableHandle) and sent once to each consumer that
 * asked for device segments (docs/protocol.md 3.11, DEVICE_SEGMENT_ADD),
 * which imports and maps it once (cuMemImportFromShareableHandle,
 * cuMemAddressReserve, cuMemMap, cuMemSetAccess). Frames name it by id as
 * they name host segments; a chunk's bytes are device bytes.
 *
 * Both ends hold the memory in a pf_segment (pf_segment_new_device(): an
 * fd and a size, no host mapping) with this layer's mapping attached to it
 * (pf_segment_attach()): the last unref unmaps (cuMemUnmap), frees the
 * address range (cuMemAddressFree) and releases the handle (cuMemRelease),
 * in that order, then closes the fd.
 *
 * The driver (libcuda.so.1) is opened with dlopen() at the first call,
 * never linked; nothing here includes CUDA. The caller makes its own
 * context current to copy into or out of the memory (cuMemcpy*,
 * cudaMemcpy*): the mapping itself needs none.
 *
 * Errors: negative errno, the reason in pf_device_segment_error() (the
 * calling thread's last failure):
 *   -ENOENT   no CUDA driver could be opened, or a call is missing
 *   -ENODEV   no such device, or no device with the segment's UUID here,
 *             or cuInit failed
 *   -ENOTSUP  the device cannot export virtual memory as a POSIX fd
 *   -EINVAL   bad arguments; for an import: the fd is no exported device
 *             allocation of that device and size
 *   -EIO      another CUDA call failed (its name and error in the text)
 *
 * Thread-safety: any thread; the driver table is loaded once.
 */
#ifndef __PF_DEVICE_SEGMENT_H__
#define __PF_DEVICE_SEGMENT_H__

#include <stddef.h>
#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-consumer.h>
#include <pinnedflow/pf-segment.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* pf_device_segment_get_access(): what this process's mapping allows its
 * device (the driver's CU_MEM_ACCESS_FLAGS_PROT_* values).
 * Since: 0.1
 */
  enum pf_device_access
  {
    PF_DEVICE_ACCESS_NONE = 0,
    PF_DEVICE_ACCESS_READ = 1,
    PF_DEVICE_ACCESS_READWRITE = 3,
  };

/**
 * pf_device_segment_new:
 * @device: the device ordinal (cuDeviceGet)
 * @size: bytes wanted; rounded up to the device's recommended allocation
 *   granularity
 * @out: (out): the segment, with one reference
 *
 * Makes device memory the producer can announce: cuMemCreate (pinned, on
 * @device, exportable as a POSIX fd), exported as an fd, mapped in this
 * process (read-write for @device). pf_device_segment_get_ptr() gives its
 * device address; publish frames whose chunks lie in it with
 * pf_producer_publish() as with host segments.
 *
 * Returns: 0, or a negative errno (see above).
 *
 * Since: 0.1
 */
  PF_API int pf_device_segment_new (int device, uint64_t size,
      pf_segment ** out);

/**
 * pf_device_segment_import:
 *
 * A #pf_consumer_device_import_func: imports the device segment @seg that
 * a producer announced and maps it read-only for the device with its
 * UUID, or read-write where the driver refuses a read-only mapping
 * (pf_device_segment_get_access() says which); @user_data is unused.
 * Returns -ENODEV (no driver, no device with that UUID, or that device
 * cannot import virtual memory as a POSIX fd) or -EINVAL (the fd is no
 * such memory), with the reason in @why.
 *
 * Since: 0.1
 */
  PF_API int pf_device_segment_import (pf_segment * seg, void *user_data,
      uint64_t * device_base, char *why, size_t why_len);

/**
 * pf_device_consumer_enable:
 *
 * Makes @c import device segments with pf_device_segment_import() (@c made
 * with %PF_CONSUMER_OPTION_DEVICE_SEGMENTS; before its first receive).
 * Returns 0 or -EINVAL.
 *
 * Since: 0.1
 */
  PF_API int pf_device_consumer_enable (pf_consumer * c);

/**
 * pf_device_segment_get_ptr:
 *
 * Returns: the device address (a CUdeviceptr) where @seg is mapped in this
 * process, or 0 if it is not (a host segment, a refused one).
 *
 * Since: 0.1
 */
  PF_API uint64_t pf_device_segment_get_ptr (pf_segment * seg);

/**
 * pf_device_segment_get_access:
 *
 * Returns: the #pf_device_access of this process's mapping of @seg (NONE
 * when not mapped).
 *
 * Since: 0.1
 */
  PF_API unsigned int pf_device_segment_get_access (pf_segment * seg);

/**
 * pf_device_segment_get_ordinal:
 *
 * Returns: the ordinal of the device @seg is mapped for in this process,
 * or -1 when it is not mapped.
 *
 * Since: 0.1
 */
  PF_API int pf_device_segment_get_ordinal (pf_segment * seg);

/**
 * pf_device_segment_teardown_errors:
 *
 * Returns: how many driver calls undoing a mapping (cuMemUnmap,
 * cuMemAddressFree, cuMemRelease, when a device segment died) failed in
 * this process so far: a destroy notify has nobody to tell.
 *
 * Since: 0.1
 */
PF_API uint64_t pf_device_segment_teardown_errors (void);

/**
 * pf_device_segment_error:
 *
 * Returns: why the calling thread's last pf_device_segment_new() or
 * pf_device_segment_import() failed.
 *
 * Since: 0.1
 */
  PF_API const char *pf_device_segment_error (void);

#ifdef __cplusplus
}
#endif
#endif                          /* __PF_DEVICE_SEGMENT_H__ */
