/* pinnedflow: sealed memfd segments (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <pinnedflow/pf-segment.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif
#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

/* Used when /proc/meminfo does not say (the x86-64 default). */
#define DEFAULT_HUGE_PAGE_SIZE (UINT64_C (2) * 1024 * 1024)
/* Refuse absurd sizes early: nothing we map is bigger than 1 TiB. */
#define PF_SEGMENT_MAX_SIZE (UINT64_C (1) << 40)

struct attachment
{
  const void *key;
  void *data;
  pf_destroy_notify destroy;
  struct attachment *next;
};

struct pf_segment
{
  atomic_int refcount;
  uint64_t id;
  int fd;
  uint64_t size;
  /* Length of the mapping: size, or more for an imported hugetlbfs file
   * (its mappings must cover whole huge pages to be unmappable). */
  uint64_t map_size;
  void *base;
  unsigned int state;
  pthread_mutex_t lock;
  struct attachment *attachments;       /* newest first */
  pf_segment_device device;     /* with PF_SEGMENT_STATE_DEVICE */
};

static atomic_uint_fast64_t next_id = 1;
static atomic_int live_segments = 0;

size_t
pf_page_size (void)
{
  static atomic_size_t page;
  size_t p = atomic_load_explicit (&page, memory_order_relaxed);

  if (p == 0) {
    long sp = sysconf (_SC_PAGESIZE);
    p = sp > 0 ? (size_t) sp : 4096;
    atomic_store_explicit (&page, p, memory_order_relaxed);
  }
  return p;
}

/* The default huge page size (the one MFD_HUGETLB without a size flag
 * uses), from /proc/meminfo; 2 MiB when it cannot be read. */
static uint64_t
huge_page_size (void)
{
  static atomic_uint_fast64_t cached;
  uint64_t hp = atomic_load_explicit (&cached, memory_order_relaxed);
  char line[128];
  unsigned long long kib;
  FILE *f;

  if (hp != 0)
    return hp;
  hp = DEFAULT_HUGE_PAGE_SIZE;
  if ((f = fopen ("/proc/meminfo", "re")) != NULL) {
    while (fgets (line, sizeof (line), f) != NULL) {
      if (sscanf (line, "Hugepagesize: %llu kB", &kib) == 1) {
        /* A power of two between 64 KiB and 16 GiB, else ignore it. */
        if (kib >= 64 && kib <= (UINT64_C (16) << 20) && (kib & (kib - 1)) == 0)
          hp = (uint64_t) kib *1024;
        break;
      }
    }
    fclose (f);
  }
  atomic_store_explicit (&cached, hp, memory_order_relaxed);
  return hp;
}

int
pf_segment_count_live (void)
{
  return atomic_load (&live_segments);
}

static int
round_up (uint64_t size, uint64_t align, uint64_t * out)
{
  if (size == 0 || size > PF_SEGMENT_MAX_SIZE)
    return -EINVAL;
  *out = (size + align - 1) & ~(align - 1);
  return 0;
}

static pf_segment *
segment_alloc (int fd, uint64_t size, void *base, unsigned int state)
{
  pf_segment *seg = calloc (1, sizeof (*seg));

  if (seg == NULL)
    return NULL;
  atomic_init (&seg->refcount, 1);
  seg->id = atomic_fetch_add (&next_id, 1);
  seg->fd = fd;
  seg->size = size;
  seg->map_size = size;
  seg->base = base;
  seg->state = state;
  pthread_mutex_init (&seg->lock, NULL);
  atomic_fetch_add (&live_segments, 1);
  return seg;
}

static int
memfd_open (const char *name, unsigned int extra)
{
  unsigned int flags = MFD_CLOEXEC | MFD_ALLOW_SEALING | extra;
  int fd;

  fd = memfd_create (name, flags | MFD_NOEXEC_SEAL);
  /* Kernels before 6.3 do not know MFD_NOEXEC_SEAL. */
  if (fd < 0 && errno == EINVAL)
    fd = memfd_create (name, flags);
  return fd < 0 ? -errno : fd;
}

/* Creates, sizes, seals and maps one memfd. On failure nothing is left. */
static int
create_mapped (const char *name, uint64_t size, int huge, int *fd_out,
    void **base_out)
{
  int fd, res;
  void *base;

  fd = memfd_open (name, huge ? MFD_HUGETLB : 0);
  if (fd < 0)
    return fd;

  if (ftruncate (fd, (off_t) size) < 0) {
    res = -errno;
    goto error;
  }
  if (fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0) {
    res = -errno;
    goto error;
  }
  base = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE,
      fd, 0);
  if (base == MAP_FAILED) {
    res = -errno;
    goto error;
  }
  *fd_out = fd;
  *base_out = base;
  return 0;

error:
  close (fd);
  return res;
}

int
pf_segment_new (const char *name, uint64_t size, unsigned int flags,
    pf_segment ** out)
{
  uint64_t rounded;
  unsigned int state = 0;
  int fd = -1, res;
  void *base = NULL;
  pf_segment *seg;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (name == NULL)
    name = "pinnedflow";

  if (flags & PF_SEGMENT_FLAG_HUGEPAGES) {
    if ((res = round_up (size, huge_page_size (), &rounded)) < 0)
      return res;
    /* Without configured huge pages mmap() (or ftruncate()) fails with
     * ENOMEM: fall back to normal pages and remember that we did. */
    if (create_mapped (name, rounded, 1, &fd, &base) == 0)
      state |= PF_SEGMENT_STATE_HUGEPAGES;
    else
      state |= PF_SEGMENT_STATE_HUGEPAGES_REFUSED;
  }
  if (!(state & PF_SEGMENT_STATE_HUGEPAGES)) {
    if ((res = round_up (size, pf_page_size (), &rounded)) < 0)
      return res;
    if ((res = create_mapped (name, rounded, 0, &fd, &base)) < 0)
      return res;
  }

  if (flags & PF_SEGMENT_FLAG_LOCK) {
    if (mlock (base, rounded) == 0)
      state |= PF_SEGMENT_STATE_LOCKED;
    else
      state |= PF_SEGMENT_STATE_LOCK_REFUSED;
  }

  if (flags & PF_SEGMENT_FLAG_SEAL_WRITERS) {
    if (fcntl (fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) == 0)
      state |= PF_SEGMENT_STATE_WRITE_SEALED;
  }

  seg = segment_alloc (fd, rounded, base, state);
  if (seg == NULL) {
    res = -ENOMEM;
    goto error;
  }
  *out = seg;
  return 0;

error:
  if (state & PF_SEGMENT_STATE_LOCKED)
    munlock (base, rounded);
  munmap (base, rounded);
  close (fd);
  return res;
}

const char *
pf_segment_import_strerror (int err)
{
  switch (err) {
    case 0:
      return "no error";
    case -EBADF:
      return "not an open file descriptor";
    case -ENOTTY:
      return "file descriptor does not support sealing (not a memfd)";
    case -EPERM:
      return "memfd is not sealed against shrinking and growing";
    case -EINVAL:
      return "claimed size is zero or too large";
    case -ERANGE:
      return "memfd is smaller than the claimed size";
    case -EACCES:
      return "writable import of a write-sealed memfd";
    case -EOVERFLOW:
      return "offset and size overflow";
    default:
      return strerror (-err);
  }
}

int
pf_segment_import (int fd, uint64_t size, unsigned int flags, pf_segment ** out)
{
  struct stat st;
  int seals, prot, populate, writable =
      (flags & PF_SEGMENT_IMPORT_WRITABLE) != 0;
  unsigned int state;
  uint64_t map_size;
  void *base;
  pf_segment *seg;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;

  if (fd < 0 || fstat (fd, &st) < 0)
    return -EBADF;
  if (size == 0 || size > PF_SEGMENT_MAX_SIZE || size > (uint64_t) SIZE_MAX)
    return -EINVAL;

  seals = fcntl (fd, F_GET_SEALS);
  if (seals < 0)
    return errno == EBADF ? -EBADF : -ENOTTY;
  if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
    return -EPERM;
  if (st.st_size < 0 || (uint64_t) st.st_size < size)
    return -ERANGE;
  if (writable && (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
    return -EACCES;

  /* hugetlbfs reports its page size as st_blksize; a mapping of it must
   * cover whole huge pages or munmap() refuses it. st_size is a multiple. */
  map_size = size;
  if (st.st_blksize > 0 && (uint64_t) st.st_blksize > pf_page_size ()) {
    uint64_t bs = (uint64_t) st.st_blksize;
    uint64_t r = (size + bs - 1) / bs * bs;
    if (r <= (uint64_t) st.st_size)
      map_size = r;
  }

  /* Lazy by default: a peer's sparse file must not commit our memory
   * until a frame actually uses its pages. */
  prot = PROT_READ | (writable ? PROT_WRITE : 0);
  populate = (flags & (PF_SEGMENT_IMPORT_PREFAULT | PF_SEGMENT_IMPORT_LOCK))
      ? MAP_POPULATE : 0;
  base = mmap (NULL, map_size, prot, MAP_SHARED | populate, fd, 0);
  /* Kernels before 6.7 refuse even a read-only MAP_SHARED mapping of an
   * F_SEAL_WRITE file; its content can no longer change, so a private
   * read-only mapping shows the same bytes. */
  if (base == MAP_FAILED && errno == EPERM && !writable
      && (seals & F_SEAL_WRITE))
    base = mmap (NULL, map_size, PROT_READ, MAP_PRIVATE | populate, fd, 0);
  if (base == MAP_FAILED)
    /* -EPERM would read as "not sealed": it means a seal refused access. */
    return errno == EPERM ? -EACCES : -errno;

  state = PF_SEGMENT_STATE_IMPORTED |
      (writable ? 0 : PF_SEGMENT_STATE_READONLY) |
      ((seals & F_SEAL_FUTURE_WRITE) ? PF_SEGMENT_STATE_WRITE_SEALED : 0);
  if (flags & PF_SEGMENT_IMPORT_LOCK)
    state |= mlock (base, map_size) == 0 ? PF_SEGMENT_STATE_LOCKED :
        PF_SEGMENT_STATE_LOCK_REFUSED;

  seg = segment_alloc (fd, size, base, state);
  if (seg == NULL) {
    if (state & PF_SEGMENT_STATE_LOCKED)
      munlock (base, map_size);
    munmap (base, map_size);
    return -ENOMEM;
  }
  seg->map_size = map_size;
  *out = seg;
  return 0;
}

int
pf_segment_new_device (int fd, uint64_t size, const pf_segment_device * dev,
    pf_segment ** out)
{
  pf_segment *seg;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (fd < 0 || dev == NULL || size == 0 || size > PF_SEGMENT_MAX_SIZE ||
      dev->handle_type != PF_DEVICE_HANDLE_POSIX_FD ||
      dev->granularity == 0 ||
      (dev->granularity & (dev->granularity - 1)) != 0 ||
      size % dev->granularity != 0)
    return -EINVAL;
  if ((seg = segment_alloc (fd, size, NULL, PF_SEGMENT_STATE_DEVICE)) == NULL)
    return -ENOMEM;
  seg->device = *dev;
  *out = seg;
  return 0;
}

const pf_segment_device *
pf_segment_get_device (const pf_segment * seg)
{
  return (seg->state & PF_SEGMENT_STATE_DEVICE) ? &seg->device : NULL;
}

pf_segment *
pf_segment_ref (pf_segment * seg)
{
  if (seg == NULL)
    return NULL;
  atomic_fetch_add (&seg->refcount, 1);
  return seg;
}

void
pf_segment_unref (pf_segment * seg)
{
  struct attachment *a, *next;

  if (seg == NULL || atomic_fetch_sub (&seg->refcount, 1) != 1)
    return;

  /* Attached data first: it may hold a CUDA registration of the mapping. */
  for (a = seg->attachments; a != NULL; a = next) {
    next = a->next;
    if (a->destroy)
      a->destroy (a->data);
    free (a);
  }
  if (seg->state & PF_SEGMENT_STATE_LOCKED)
    munlock (seg->base, seg->map_size);
  if (seg->base != NULL)
    munmap (seg->base, seg->map_size);
  close (seg->fd);
  pthread_mutex_destroy (&seg->lock);
  free (seg);
  atomic_fetch_sub (&live_segments, 1);
}

uint64_t
pf_segment_get_id (const pf_segment * seg)
{
  return seg->id;
}

int
pf_segment_get_fd (const pf_segment * seg)
{
  return seg->fd;
}

uint64_t
pf_segment_get_size (const pf_segment * seg)
{
  return seg->size;
}

void *
pf_segment_get_base (const pf_segment * seg)
{
  return seg->base;
}

unsigned int
pf_segment_get_state (const pf_segment * seg)
{
  return seg->state;
}

int
pf_segment_get_refcount (const pf_segment * seg)
{
  return atomic_load (&((pf_segment *) seg)->refcount);
}

int
pf_segment_contains (const pf_segment * seg, uint64_t offset, uint64_t size)
{
  return offset <= seg->size && size <= seg->size - offset;
}

static struct attachment *
find_locked (pf_segment * seg, const void *key, struct attachment ***link)
{
  struct attachment **l;

  for (l = &seg->attachments; *l != NULL; l = &(*l)->next) {
    if ((*l)->key == key) {
      if (link)
        *link = l;
      return *l;
    }
  }
  return NULL;
}

static int
attach_locked (pf_segment * seg, const void *key, void *data,
    pf_destroy_notify destroy)
{
  struct attachment *a;

  if (find_locked (seg, key, NULL))
    return -EEXIST;
  if ((a = calloc (1, sizeof (*a))) == NULL)
    return -ENOMEM;
  a->key = key;
  a->data = data;
  a->destroy = destroy;
  a->next = seg->attachments;
  seg->attachments = a;
  return 0;
}

int
pf_segment_attach (pf_segment * seg, const void *key, void *data,
    pf_destroy_notify destroy)
{
  int res;

  pthread_mutex_lock (&seg->lock);
  res = attach_locked (seg, key, data, destroy);
  pthread_mutex_unlock (&seg->lock);
  return res;
}

void *
pf_segment_get_attached (pf_segment * seg, const void *key)
{
  struct attachment *a;
  void *data;

  pthread_mutex_lock (&seg->lock);
  a = find_locked (seg, key, NULL);
  data = a ? a->data : NULL;
  pthread_mutex_unlock (&seg->lock);
  return data;
}

int
pf_segment_detach (pf_segment * seg, const void *key)
{
  struct attachment *a, **link = NULL;

  pthread_mutex_lock (&seg->lock);
  a = find_locked (seg, key, &link);
  if (a)
    *link = a->next;
  pthread_mutex_unlock (&seg->lock);

  if (a == NULL)
    return -ENOENT;
  if (a->destroy)
    a->destroy (a->data);
  free (a);
  return 0;
}

void *
pf_segment_attach_once (pf_segment * seg, const void *key,
    void *(*create) (pf_segment * seg, void *user_data, int *err),
    void *user_data, pf_destroy_notify destroy, int *err)
{
  struct attachment *a;
  void *data = NULL;
  int res = 0;

  pthread_mutex_lock (&seg->lock);
  if ((a = find_locked (seg, key, NULL)) != NULL) {
    data = a->data;
  } else if ((data = create (seg, user_data, &res)) != NULL) {
    if ((res = attach_locked (seg, key, data, destroy)) < 0) {
      if (destroy)
        destroy (data);
      data = NULL;
    }
  } else if (res == 0) {
    res = -EIO;
  }
  pthread_mutex_unlock (&seg->lock);

  if (err)
    *err = res;
  return data;
}
