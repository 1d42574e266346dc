/* pfemu-v4l2: a V4L2 capture device played to GStreamer's real v4l2src
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * LD_PRELOAD this library and open PFEMU_V4L2_DEVICE (default
 * /dev/video-pfemu0): stat() says it is a character device, open() gives
 * an eventfd that stands for the device (so GstPoll's ppoll works on it
 * unchanged: it is readable while a filled buffer waits, as a V4L2 fd is),
 * and ioctl/mmap/munmap/dup/close on it play a single-planar capture
 * driver with MMAP, USERPTR and DMABUF buffers:
 *   QUERYCAP, ENUM_FMT (YUYV, NV12), G/S/TRY_FMT, ENUM_FRAMESIZES,
 *   ENUM_FRAMEINTERVALS, G/S_PARM, REQBUFS, QUERYBUF, QBUF, DQBUF, EXPBUF,
 *   STREAMON, STREAMOFF; every other ioctl is ENOTTY.
 * It is as strict as vb2 is: a USERPTR must be aligned (PFEMU_V4L2_ALIGN,
 * default the page size), mapped (EFAULT) and at least sizeimage long;
 * a buffer is queued once (EINVAL), REQBUFS and S_FMT are EBUSY while
 * streaming or while buffers exist / are mapped; DQBUF returns buffers in
 * the order they were filled. A thread writes frames at the negotiated
 * interval into the oldest queued buffer only (none queued: a starved
 * tick), and a buffer leaves the driver only by DQBUF.
 * Frames: the pattern of pfemu-v4l2.h (PFEMU_V4L2_PATTERN=sparse: only
 * the header and the first row, a camera whose DMA costs no CPU).
 * PFEMU_V4L2_STRIDE_ALIGN pads bytesperline (default 1: packed rows).
 * PFEMU_V4L2_REPORT: a file the counters are appended to at each last
 * close. A test in the same process reads them with
 * pfemu_v4l2_get_stats() and marks ranges it reads with
 * pfemu_v4l2_hold(): a frame written over one is counted (held_writes).
 *
 * Threads: one global mutex guards the fd table, the mapping list, the
 * held ranges and every device's state (calls on other fds check the
 * table entry atomically and never take it; a fork takes it, so that
 * the child's copy is not left locked); the writer thread of a device
 * fills a buffer outside it (the buffer is neither queued nor done then,
 * so no ioctl touches it) and STREAMOFF joins the thread before it
 * returns the buffers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* The plain and the 64 names are both defined here: neither may be
 * redirected to the other. */
#undef _FILE_OFFSET_BITS
#include "pfemu-v4l2-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static Dev *fds[MAX_FDS];
static struct
{
  void *addr;
  size_t len;
  Dev *dev;
  uint32_t index;
} maps[MAX_MAPS];
static int n_maps;              /* entries of maps[] in use */
static const char *dev_path = PFEMU_V4L2_DEFAULT_DEVICE;

/* Both locks, in the order the ioctls take them. */
static void
fork_prepare (void)
{
  pthread_mutex_lock (&pfemu_lock);
  pfemu_udmabuf_lock ();
}

static void
fork_done (void)
{
  pfemu_udmabuf_unlock ();
  pthread_mutex_unlock (&pfemu_lock);
}

/* Reads the environment at load time. */
static void pfemu_v4l2_init (void) __attribute__((constructor));

static void
pfemu_v4l2_init (void)
{
  const char *s;

  if ((s = getenv ("PFEMU_V4L2_DEVICE")) && *s)
    dev_path = s;
  pfemu_dev_config ();
  /* a fork while another thread holds the lock would leave the child's
   * copy locked: its close() of every fd before exec (g_spawn) would
   * hang */
  pthread_atfork (fork_prepare, fork_done, fork_done);
}

static Dev *
dev_of (int fd)
{
  return fd >= 0 && fd < MAX_FDS ? fds[fd] : NULL;
}

/* Whether @fd may be a device fd, without the lock: entries change only
 * for fds being opened or closed, which no other thread uses then. */
static int
maybe_device (int fd)
{
  return fd >= 0 && fd < MAX_FDS
      && __atomic_load_n (&fds[fd], __ATOMIC_ACQUIRE) != NULL;
}

static int
is_device (const char *path)
{
  return path != NULL && strcmp (path, dev_path) == 0;
}

/* ---- the intercepted calls ---- */

static void
fake_stat (struct stat *st)
{
  memset (st, 0, sizeof (*st));
  st->st_mode = S_IFCHR | 0660;
  st->st_rdev = makedev (81, 250);
  st->st_nlink = 1;
  st->st_blksize = 4096;
}

EXPORT int
stat (const char *path, struct stat *st)
{
  REAL (int, stat, (const char *, struct stat *));

  if (is_device (path)) {
    fake_stat (st);
    return 0;
  }
  return real_stat (path, st);
}

EXPORT int
stat64 (const char *path, struct stat64 *st)
{
  REAL (int, stat64, (const char *, struct stat64 *));

  if (is_device (path)) {
    fake_stat ((struct stat *) st);
    return 0;
  }
  return real_stat64 (path, st);
}

static int
open_device (int flags)
{
  Dev *d = pfemu_dev_new ();
  int fd;

  if (d == NULL) {
    errno = ENOMEM;
    return -1;
  }
  fd = eventfd (0, EFD_SEMAPHORE | EFD_CLOEXEC |
      ((flags & O_NONBLOCK) ? EFD_NONBLOCK : 0));
  if (fd < 0) {
    pthread_mutex_lock (&pfemu_lock);
    pfemu_dev_free (d);
    pthread_mutex_unlock (&pfemu_lock);
    return -1;
  }
  /* ours, to signal and count done buffers (it shares the description) */
  d->wake_fd = fcntl (fd, F_DUPFD_CLOEXEC, 0);
  pthread_mutex_lock (&pfemu_lock);
  if (d->wake_fd < 0 || fd >= MAX_FDS) {
    pfemu_real_close (fd);
    pfemu_dev_free (d);
    pthread_mutex_unlock (&pfemu_lock);
    errno = EMFILE;
    return -1;
  }
  __atomic_store_n (&fds[fd], d, __ATOMIC_RELEASE);
  pfemu_stats.opens++;
  pthread_mutex_unlock (&pfemu_lock);
  return fd;
}

/* A path of a stand-in (the V4L2 device, /dev/udmabuf): opens it, sets
 * *@fd (a descriptor, or -1 with errno) and returns 1; any other path: 0,
 * for the real libc call. */
static int
open_standin (const char *path, int flags, int *fd)
{
  if (is_device (path)) {
    *fd = open_device (flags);
    return 1;
  }
  if (pfemu_udmabuf_is_device (path)) {
    *fd = pfemu_udmabuf_open ();
    return 1;
  }
  return 0;
}

/* The mode argument of open() and its kin, present only with O_CREAT or
 * O_TMPFILE; in the variadic function itself (va_start). */
#define VA_MODE(flags, mode) \
  do { \
    if ((flags) & (O_CREAT | O_TMPFILE)) { \
      va_list ap; \
      va_start (ap, flags); \
      mode = va_arg (ap, mode_t); \
      va_end (ap); \
    } \
  } while (0)

EXPORT int
open (const char *path, int flags, ...)
{
  REAL (int, open, (const char *, int, ...));
  mode_t mode = 0;
  int fd;

  VA_MODE (flags, mode);
  if (open_standin (path, flags, &fd))
    return fd;
  return real_open (path, flags, mode);
}

EXPORT int
open64 (const char *path, int flags, ...)
{
  REAL (int, open64, (const char *, int, ...));
  mode_t mode = 0;
  int fd;

  VA_MODE (flags, mode);
  if (open_standin (path, flags, &fd))
    return fd;
  return real_open64 (path, flags, mode);
}

EXPORT int
openat (int dirfd, const char *path, int flags, ...)
{
  REAL (int, openat, (int, const char *, int, ...));
  mode_t mode = 0;
  int fd;

  VA_MODE (flags, mode);
  if (open_standin (path, flags, &fd))
    return fd;
  return real_openat (dirfd, path, flags, mode);
}

EXPORT int
openat64 (int dirfd, const char *path, int flags, ...)
{
  REAL (int, openat64, (int, const char *, int, ...));
  mode_t mode = 0;
  int fd;

  VA_MODE (flags, mode);
  if (open_standin (path, flags, &fd))
    return fd;
  return real_openat64 (dirfd, path, flags, mode);
}

/* _FORTIFY_SOURCE's open with flags not known at compile time */
int __open_2 (const char *path, int flags);
int __open64_2 (const char *path, int flags);

EXPORT int
__open_2 (const char *path, int flags)
{
  REAL (int, __open_2, (const char *, int));
  int fd;

  if (open_standin (path, flags, &fd))
    return fd;
  return real___open_2 (path, flags);
}

EXPORT int
__open64_2 (const char *path, int flags)
{
  REAL (int, __open64_2, (const char *, int));
  int fd;

  if (open_standin (path, flags, &fd))
    return fd;
  return real___open64_2 (path, flags);
}

EXPORT int
close (int fd)
{
  REAL (int, close, (int));
  Dev *d;

  if (pfemu_udmabuf_maybe (fd))
    pfemu_udmabuf_forget (fd);
  if (!maybe_device (fd))
    return real_close (fd);
  pthread_mutex_lock (&pfemu_lock);
  d = dev_of (fd);
  if (d) {
    __atomic_store_n (&fds[fd], NULL, __ATOMIC_RELEASE);
    if (--d->refs == 0)
      pfemu_dev_free (d);
  }
  pthread_mutex_unlock (&pfemu_lock);
  return real_close (fd);
}

EXPORT int
dup (int fd)
{
  REAL (int, dup, (int));
  int nfd = real_dup (fd);
  Dev *d;

  if (pfemu_udmabuf_maybe (fd))
    pfemu_udmabuf_dup (fd, nfd);
  pthread_mutex_lock (&pfemu_lock);
  d = dev_of (fd);
  if (d && nfd >= 0) {
    if (nfd >= MAX_FDS) {
      pthread_mutex_unlock (&pfemu_lock);
      close (nfd);
      errno = EMFILE;
      return -1;
    }
    d->refs++;
    __atomic_store_n (&fds[nfd], d, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock (&pfemu_lock);
  return nfd;
}

EXPORT int
ioctl (int fd, unsigned long req, ...)
{
  REAL (int, ioctl, (int, unsigned long, ...));
  va_list ap;
  void *arg;
  Dev *d;
  int res;

  va_start (ap, req);
  arg = va_arg (ap, void *);
  va_end (ap);

  if (pfemu_udmabuf_maybe (fd)) {
    res = pfemu_udmabuf_ioctl (fd, req, arg);
    if (res < 0) {
      errno = -res;
      return -1;
    }
    return res;
  }
  if (!maybe_device (fd))
    return real_ioctl (fd, req, arg);
  pthread_mutex_lock (&pfemu_lock);
  d = dev_of (fd);
  if (d == NULL) {
    pthread_mutex_unlock (&pfemu_lock);
    return real_ioctl (fd, req, arg);
  }
  res = arg == NULL ? -EFAULT : pfemu_dev_ioctl (d, fd, req, arg);
  if (res == -EINVAL || res == -EBUSY || res == -EFAULT)
    pfemu_stats.refused++;
  pthread_mutex_unlock (&pfemu_lock);
  if (res < 0) {
    errno = -res;
    return -1;
  }
  return res;
}

EXPORT void *
mmap (void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  REAL (void *, mmap, (void *, size_t, int, int, int, off_t));
  uint32_t index;
  Dev *d;
  void *p;
  int i;

  if (pfemu_udmabuf_maybe (fd))
    return pfemu_udmabuf_mmap (fd, len, prot, off);
  if (!maybe_device (fd))
    return real_mmap (addr, len, prot, flags, fd, off);
  pthread_mutex_lock (&pfemu_lock);
  d = dev_of (fd);
  if (d == NULL) {
    pthread_mutex_unlock (&pfemu_lock);
    return real_mmap (addr, len, prot, flags, fd, off);
  }
  index = (uint32_t) (off / 4096);
  if (d->memory != V4L2_MEMORY_MMAP || off % 4096 != 0 || index >= d->n_bufs
      || len == 0 || len > d->bufs[index].length || !(flags & MAP_SHARED)) {
    pfemu_stats.refused++;
    pthread_mutex_unlock (&pfemu_lock);
    errno = EINVAL;
    return MAP_FAILED;
  }
  p = real_mmap (addr, len, prot, flags, d->bufs[index].memfd, 0);
  if (p != MAP_FAILED) {
    for (i = 0; i < MAX_MAPS && maps[i].addr; i++);
    if (i < MAX_MAPS) {
      maps[i].addr = p;
      maps[i].len = len;
      maps[i].dev = d;
      maps[i].index = index;
      d->bufs[index].n_maps++;
      __atomic_add_fetch (&n_maps, 1, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock (&pfemu_lock);
  return p;
}

EXPORT void *
mmap64 (void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  return mmap (addr, len, prot, flags, fd, off);
}

EXPORT int
munmap (void *addr, size_t len)
{
  REAL (int, munmap, (void *, size_t));
  int i;

  if (__atomic_load_n (&n_maps, __ATOMIC_ACQUIRE) == 0)
    return real_munmap (addr, len);
  pthread_mutex_lock (&pfemu_lock);
  for (i = 0; i < MAX_MAPS; i++) {
    if (maps[i].addr == addr && maps[i].addr != NULL) {
      Dev *d = maps[i].dev;
      int j, alive = 0;

      /* the device may have gone (closed with the mapping kept) */
      for (j = 0; j < MAX_FDS && !alive; j++)
        alive = fds[j] == d;
      if (alive && maps[i].index < d->n_bufs)
        d->bufs[maps[i].index].n_maps--;
      maps[i].addr = NULL;
      __atomic_sub_fetch (&n_maps, 1, __ATOMIC_RELEASE);
      break;
    }
  }
  pthread_mutex_unlock (&pfemu_lock);
  return real_munmap (addr, len);
}
