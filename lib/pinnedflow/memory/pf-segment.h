/* pinnedflow: sealed memfd segments (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * A segment is one memfd, its size and its single mapping. Everything that
 * crosses a process boundary in pinnedflow lives in a segment: producers
 * create them (sealed against shrinking and growing before the fd is ever
 * shared), consumers import a received fd only after validating it, so that
 * no access within the announced size can raise SIGBUS.
 *
 * All functions return 0 or a positive value on success and a negative errno
 * on failure. Segments are reference counted and thread-safe.
 *
 * Lifecycle: refcounted (pf_segment_new() or pf_segment_import(), then
 * pf_segment_ref/_unref); the last unref runs the attachments' destroy
 * notifies, unmaps and closes the fd.
 */
#ifndef __PF_SEGMENT_H__
#define __PF_SEGMENT_H__

#include <stddef.h>
#include <stdint.h>

#include <pinnedflow/pf-api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Since: 0.1 */
typedef struct pf_segment pf_segment;

/* Creation flags (pf_segment_new()).
 * Since: 0.1
 */
enum pf_segment_flags {
  /* Try MFD_HUGETLB; fall back to normal pages when the system has none. */
  PF_SEGMENT_FLAG_HUGEPAGES = 1u << 0,
  /* Try mlock(); fall back to an unlocked mapping when refused. */
  PF_SEGMENT_FLAG_LOCK = 1u << 1,
  /* After mapping, seal F_SEAL_FUTURE_WRITE | F_SEAL_SEAL: every mapping made
   * later (in any process) is read-only; ours stays writable. */
  PF_SEGMENT_FLAG_SEAL_WRITERS = 1u << 2,
};

/* Import flags (pf_segment_import()). An import maps lazily: a page
 * costs this process memory only once something touches it, so a large
 * sparse file announced by a peer commits nothing.
 * Since: 0.1
 */
enum pf_segment_import_flags {
  PF_SEGMENT_IMPORT_READONLY = 0,
  PF_SEGMENT_IMPORT_WRITABLE = 1u << 0,
  /* Prefault the whole mapping (MAP_POPULATE): every page of the file is
   * allocated (holes included) and mapped now, not at first touch. */
  PF_SEGMENT_IMPORT_PREFAULT = 1u << 1,
  /* Try mlock() of the whole mapping (implies PREFAULT); falls back to an
   * unlocked mapping when refused (state LOCK_REFUSED). */
  PF_SEGMENT_IMPORT_LOCK = 1u << 2,
};

/* What a segment actually got (pf_segment_get_state()).
 * Since: 0.1
 */
enum pf_segment_state {
  PF_SEGMENT_STATE_HUGEPAGES = 1u << 0,  /* backed by huge pages */
  PF_SEGMENT_STATE_LOCKED = 1u << 1,     /* mlock() succeeded */
  PF_SEGMENT_STATE_READONLY = 1u << 2,   /* our mapping is PROT_READ only */
  PF_SEGMENT_STATE_IMPORTED = 1u << 3,   /* made by pf_segment_import() */
  PF_SEGMENT_STATE_WRITE_SEALED = 1u << 4,       /* F_SEAL_FUTURE_WRITE set */
  PF_SEGMENT_STATE_HUGEPAGES_REFUSED = 1u << 5,  /* asked, fell back */
  PF_SEGMENT_STATE_LOCK_REFUSED = 1u << 6,       /* asked, fell back */
  /* a device segment (pf_segment_new_device()): no host mapping */
  PF_SEGMENT_STATE_DEVICE = 1u << 7,
};

/* pf_segment_device.handle_type: what the fd is. The value is the CUDA
 * driver's CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR.
 * Since: 0.1
 */
#define PF_DEVICE_HANDLE_POSIX_FD 1u

/**
 * pf_segment_device:
 * @uuid: the device's UUID (cuDeviceGetUuid), 16 bytes
 * @granularity: the allocation granularity the memory was made with (a
 *   power of two; the size is a multiple of it)
 * @handle_type: %PF_DEVICE_HANDLE_POSIX_FD
 * @ordinal: the device's ordinal in this process, or -1 when it has none
 *   (a consumer that could not import the segment)
 *
 * What a device segment is, in plain data: the transport sends it
 * (docs/protocol.md, DEVICE_SEGMENT_ADD), the CUDA layer
 * (pf-device-segment.h) makes and maps the memory.
 *
 * Since: 0.1
 */
typedef struct {
  uint8_t uuid[16];
  uint64_t granularity;
  uint32_t handle_type;
  int32_t ordinal;
} pf_segment_device;

/**
 * pf_segment_new:
 * @name: debug name of the memfd (shown in /proc/PID/maps), may be NULL
 * @size: requested size; rounded up to the page (or huge page) size
 * @flags: #pf_segment_flags
 * @out: (out): the new segment, with one reference
 *
 * Creates a memfd (MFD_CLOEXEC | MFD_ALLOW_SEALING, plus MFD_NOEXEC_SEAL
 * where the kernel knows it), sizes it, seals F_SEAL_SHRINK | F_SEAL_GROW,
 * maps it once MAP_SHARED read-write, prefaulted.
 *
 * Returns: 0, or -EINVAL (size 0 or too large), -ENOMEM, or the errno of
 * the failing system call.
 *
 * Since: 0.1
 */
PF_API int pf_segment_new (const char *name, uint64_t size, unsigned int flags,
    pf_segment ** out);

/**
 * pf_segment_import:
 * @fd: a received file descriptor
 * @size: the size the peer claims (the mapping covers [0, size))
 * @flags: #pf_segment_import_flags
 * @out: (out): the new segment
 *
 * Validates @fd before mapping it: it must support sealing and carry
 * F_SEAL_SHRINK and F_SEAL_GROW, and fstat() must show at least @size bytes.
 * The mapping is lazy unless @flags ask for PREFAULT or LOCK.
 * On success the segment owns @fd; on failure @fd is left untouched (the
 * caller closes it).
 *
 * Returns: 0, or
 *  -EBADF: @fd is not an open file descriptor;
 *  -ENOTTY: @fd does not support sealing (not a memfd);
 *  -EPERM: F_SEAL_SHRINK or F_SEAL_GROW is missing;
 *  -EINVAL: @size is 0 or not representable;
 *  -ERANGE: the file is smaller than @size;
 *  -EACCES: a writable import of a write-sealed file;
 *  or the errno of mmap().
 *
 * Since: 0.1
 */
PF_API int pf_segment_import (int fd, uint64_t size, unsigned int flags,
    pf_segment ** out);

/**
 * pf_segment_import_strerror:
 *
 * A one-line explanation of a pf_segment_import() error code.
 *
 * Since: 0.1
 */
PF_API const char *pf_segment_import_strerror (int err);

/**
 * pf_segment_new_device:
 * @fd: a device memory handle exported as an fd (cuMemExportToShareableHandle
 *   with the POSIX-fd handle type), owned by the segment on success
 * @size: the allocation's size in bytes
 * @dev: what the device memory is
 * @out: (out): the new segment, with one reference
 *
 * A segment whose bytes live in device memory: it has an id, an fd, a size
 * and @dev (pf_segment_get_device()), but no host mapping
 * (pf_segment_get_base() returns NULL; state %PF_SEGMENT_STATE_DEVICE).
 * The CUDA layer keeps its mapping of the memory attached to it
 * (pf_segment_attach()), undone by the destroy notify before the fd is
 * closed. Nothing here checks that @fd is device memory: the CUDA layer
 * makes such segments (pf_device_segment_new(), pf_device_segment_import()).
 *
 * Returns: 0, or -EINVAL (@fd negative, @size 0 or over 1 TiB, @dev NULL,
 * a granularity not a power of two or not dividing @size, an unknown
 * handle type), -ENOMEM. On failure @fd is left to the caller.
 *
 * Since: 0.1
 */
PF_API int pf_segment_new_device (int fd, uint64_t size,
    const pf_segment_device * dev, pf_segment ** out);

/**
 * pf_segment_get_device:
 *
 * Returns: (nullable): what the device segment @seg is, or NULL for a
 * host segment (a memfd mapped in this process).
 *
 * Since: 0.1
 */
PF_API const pf_segment_device *pf_segment_get_device (const pf_segment * seg);

/**
 * pf_segment_ref:
 *
 * Returns: @seg, with one more reference.
 *
 * Since: 0.1
 */
PF_API pf_segment *pf_segment_ref (pf_segment * seg);
/**
 * pf_segment_unref:
 *
 * When the last reference goes: attached data is destroyed (in reverse
 * order of attachment), then munlock/munmap, then close(fd).
 *
 * Since: 0.1
 */
PF_API void pf_segment_unref (pf_segment * seg);

/**
 * pf_segment_get_id:
 *
 * Process-unique, never reused, never 0. For imported segments this is a
 * local id; the peer's id for it is the wire id, kept by the transport.
 *
 * Since: 0.1
 */
PF_API uint64_t pf_segment_get_id (const pf_segment * seg);
/**
 * pf_segment_get_fd:
 *
 * Returns: the memfd, owned by the segment (dup() it to keep it).
 *
 * Since: 0.1
 */
PF_API int pf_segment_get_fd (const pf_segment * seg);
/**
 * pf_segment_get_size:
 *
 * Returns: the mapped size in bytes (page or huge-page multiple for created
 * segments; the claimed size for imported ones).
 *
 * Since: 0.1
 */
PF_API uint64_t pf_segment_get_size (const pf_segment * seg);
/**
 * pf_segment_get_base:
 *
 * Returns: the start of the segment's one mapping.
 *
 * Since: 0.1
 */
PF_API void *pf_segment_get_base (const pf_segment * seg);
/**
 * pf_segment_get_state:
 *
 * Returns: #pf_segment_state bits: what the segment got (huge pages, lock,
 * read-only, write-sealed) and what was asked but refused.
 *
 * Since: 0.1
 */
PF_API unsigned int pf_segment_get_state (const pf_segment * seg);
/**
 * pf_segment_get_refcount:
 *
 * Returns: the current reference count (for tests and debugging).
 *
 * Since: 0.1
 */
PF_API int pf_segment_get_refcount (const pf_segment * seg);

/**
 * pf_segment_contains:
 *
 * TRUE when [offset, offset + size) lies inside the segment
 * (overflow-safe).
 *
 * Since: 0.1
 */
PF_API int pf_segment_contains (const pf_segment * seg, uint64_t offset,
    uint64_t size);

/* Since: 0.1 */
typedef void (*pf_destroy_notify) (void *data);

/**
 * pf_segment_attach:
 * @key: any unique address (e.g. of a static variable of the component)
 *
 * Attaches @data under @key. @destroy runs when the segment dies, BEFORE it
 * is unmapped (CUDA keeps its host registration here and unregisters in
 * @destroy), or when pf_segment_detach() is called.
 *
 * Returns: 0, or -EEXIST if @key is already attached.
 *
 * Since: 0.1
 */
PF_API int pf_segment_attach (pf_segment * seg, const void *key, void *data,
    pf_destroy_notify destroy);
/**
 * pf_segment_get_attached:
 *
 * Returns: the data attached under @key, or NULL.
 *
 * Since: 0.1
 */
PF_API void *pf_segment_get_attached (pf_segment * seg, const void *key);

/**
 * pf_segment_detach:
 *
 * Removes @key, running its destroy notify. Returns 0 or -ENOENT.
 *
 * Since: 0.1
 */
PF_API int pf_segment_detach (pf_segment * seg, const void *key);

/**
 * pf_segment_attach_once:
 * @create: called with the segment lock held when @key is absent; returns
 *   the data to attach or NULL (nothing attached, its error in *@err)
 *
 * Returns the data under @key, creating it at most once however many
 * threads ask (the "register once per segment per process" primitive).
 * Returns NULL with *@err set when @create failed.
 *
 * Since: 0.1
 */
PF_API void *pf_segment_attach_once (pf_segment * seg, const void *key,
    void *(*create) (pf_segment * seg, void *user_data, int *err),
    void *user_data, pf_destroy_notify destroy, int *err);

/**
 * pf_page_size:
 *
 * Returns: the system page size (created segments are a multiple of it, or
 * of the huge page size when backed by huge pages).
 *
 * Since: 0.1
 */
PF_API size_t pf_page_size (void);

/**
 * pf_segment_count_live:
 *
 * Number of live segments in this process (tests use it to find leaks).
 *
 * Since: 0.1
 */
PF_API int pf_segment_count_live (void);

#ifdef __cplusplus
}
#endif
#endif /* __PF_SEGMENT_H__ */
