/* pfemu-udmabuf: a /dev/udmabuf stand-in, in the V4L2 stand-in's library
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Where the kernel has no udmabuf (as on the machines this is tested on),
 * PFEMU_UDMABUF=1 (read at each open) makes open("/dev/udmabuf") give a
 * device fd whose UDMABUF_CREATE checks what the kernel checks (a memfd
 * sealed against shrinking and not against writes, now or future, as
 * since Linux 6.13; offset and size page
 * aligned and inside the file) and returns a "dmabuf" fd: a new open file
 * of the memfd, remembered with the range it stands for. mmap of it maps
 * that range: writable through the pages of the process's own writable
 * shared mapping of the memfd (mremap of it with old size 0, a second
 * mapping of the same pages), since a memfd sealed against future writes
 * refuses a new writable mapping while a kernel dmabuf would not;
 * read-only, a plain mapping of the file. dup and close of these fds are followed.
 *
 * Threads: one mutex (taken after pfemu_lock when both are held) guards
 * the table; a fork takes both, in that order.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#undef _FILE_OFFSET_BITS
#include "pfemu-v4l2-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <linux/udmabuf.h>

enum
{ UB_NONE, UB_DEVICE, UB_BUFFER };

typedef struct
{
  int kind;
  dev_t dev;
  ino_t ino;
  uint64_t offset, size;
} UdmaFd;

static pthread_mutex_t ub_lock = PTHREAD_MUTEX_INITIALIZER;
static UdmaFd ub[MAX_FDS];

/* Around a fork, after pfemu_lock (pfemu-v4l2.c's handlers: one order). */
void
pfemu_udmabuf_lock (void)
{
  pthread_mutex_lock (&ub_lock);
}

void
pfemu_udmabuf_unlock (void)
{
  pthread_mutex_unlock (&ub_lock);
}

int
pfemu_udmabuf_maybe (int fd)
{
  return fd >= 0 && fd < MAX_FDS
      && __atomic_load_n (&ub[fd].kind, __ATOMIC_ACQUIRE) != UB_NONE;
}

int
pfemu_udmabuf_is_device (const char *path)
{
  const char *on = getenv ("PFEMU_UDMABUF");

  return path && strcmp (path, "/dev/udmabuf") == 0 && on
      && strcmp (on, "1") == 0;
}

int
pfemu_udmabuf_open (void)
{
  int fd = eventfd (0, EFD_CLOEXEC);

  if (fd < 0)
    return -1;
  if (fd >= MAX_FDS) {
    pfemu_real_close (fd);
    errno = EMFILE;
    return -1;
  }
  pthread_mutex_lock (&ub_lock);
  __atomic_store_n (&ub[fd].kind, UB_DEVICE, __ATOMIC_RELEASE);
  pthread_mutex_unlock (&ub_lock);
  return fd;
}

static int
create (const struct udmabuf_create *c)
{
  long page = sysconf (_SC_PAGESIZE);
  struct stat st;
  char path[64];
  int seals, fd;

  /* as Linux 6.13 (and the stable kernels it went to): no write seal,
   * future or not */
  seals = fcntl ((int) c->memfd, F_GET_SEALS);
  if (seals < 0 || !(seals & F_SEAL_SHRINK)
      || (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)))
    return -EINVAL;
  if (c->offset % page || c->size % page || c->size == 0
      || (c->flags & ~UDMABUF_FLAGS_CLOEXEC))
    return -EINVAL;
  if (fstat ((int) c->memfd, &st) < 0 || (uint64_t) st.st_size < c->offset
      || (uint64_t) st.st_size - c->offset < c->size)
    return -EINVAL;
  snprintf (path, sizeof (path), "/proc/self/fd/%u", c->memfd);
  fd = pfemu_real_open (path, O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  if (fd >= MAX_FDS) {
    pfemu_real_close (fd);
    return -EMFILE;
  }
  ub[fd].dev = st.st_dev;
  ub[fd].ino = st.st_ino;
  ub[fd].offset = c->offset;
  ub[fd].size = c->size;
  __atomic_store_n (&ub[fd].kind, UB_BUFFER, __ATOMIC_RELEASE);
  pfemu_stats.udmabuf_created++;
  return fd;
}

/* The ioctls of a udmabuf device fd: the new fd, or a negative errno. */
int
pfemu_udmabuf_ioctl (int fd, unsigned long req, void *arg)
{
  int res;

  pthread_mutex_lock (&ub_lock);
  if (ub[fd].kind != UB_DEVICE)
    res = -ENOTTY;
  else if (req == UDMABUF_CREATE && arg)
    res = create (arg);
  else
    res = -ENOTTY;
  pthread_mutex_unlock (&ub_lock);
  return res;
}

void
pfemu_udmabuf_dup (int fd, int nfd)
{
  pthread_mutex_lock (&ub_lock);
  if (nfd >= 0 && nfd < MAX_FDS && ub[fd].kind != UB_NONE) {
    ub[nfd] = ub[fd];
  }
  pthread_mutex_unlock (&ub_lock);
}

void
pfemu_udmabuf_forget (int fd)
{
  pthread_mutex_lock (&ub_lock);
  __atomic_store_n (&ub[fd].kind, UB_NONE, __ATOMIC_RELEASE);
  pthread_mutex_unlock (&ub_lock);
}

/* The address of file offset @off of a writable shared mapping of
 * (@dev, @ino) in this process, with @len bytes there, or NULL. */
static void *
find_writable (dev_t dev, ino_t ino, uint64_t off, size_t len)
{
  static char buf[1 << 20];
  ssize_t n, got = 0;
  char *line, *save = NULL;
  int fd = pfemu_real_open ("/proc/self/maps", O_RDONLY | O_CLOEXEC, 0);

  if (fd < 0)
    return NULL;
  while (got < (ssize_t) sizeof (buf) - 1
      && (n = read (fd, buf + got, sizeof (buf) - 1 - got)) > 0)
    got += n;
  pfemu_real_close (fd);
  buf[got] = '\0';
  for (line = strtok_r (buf, "\n", &save); line;
      line = strtok_r (NULL, "\n", &save)) {
    unsigned long start, end, foff, inode;
    unsigned maj, mnr;
    char perms[8];

    if (sscanf (line, "%lx-%lx %7s %lx %x:%x %lu", &start, &end, perms,
            &foff, &maj, &mnr, &inode) != 7)
      continue;
    if (perms[1] != 'w' || perms[3] != 's' || inode != ino
        || makedev (maj, mnr) != dev)
      continue;
    if (off >= foff && off + len <= foff + (end - start))
      return (void *) (start + (off - foff));
  }
  return NULL;
}

/* mmap of a udmabuf fd (kind UB_BUFFER, else errno EINVAL). */
void *
pfemu_udmabuf_mmap (int fd, size_t len, int prot, off_t off)
{
  UdmaFd u;
  void *src, *p;

  pthread_mutex_lock (&ub_lock);
  u = ub[fd];
  pthread_mutex_unlock (&ub_lock);
  if (u.kind != UB_BUFFER || off < 0 || (uint64_t) off > u.size
      || len > u.size - (uint64_t) off) {
    errno = EINVAL;
    return MAP_FAILED;
  }
  /* read-only: a plain mapping of the file (the seal allows it; and
   * valgrind does not follow the mremap below) */
  if (!(prot & PROT_WRITE))
    return pfemu_real_mmap (NULL, len, prot, MAP_SHARED, fd,
        (off_t) (u.offset + off));
  src = find_writable (u.dev, u.ino, u.offset + off, len);
  if (src == NULL) {
    errno = EACCES;
    return MAP_FAILED;
  }
  p = mremap (src, 0, len, MREMAP_MAYMOVE);
  return p;
}

/* The size a dmabuf fd stands for: a udmabuf's range, else its file. */
int64_t
pfemu_dmabuf_size (int fd)
{
  int64_t size = -1;

  pthread_mutex_lock (&ub_lock);
  if (fd >= 0 && fd < MAX_FDS && ub[fd].kind == UB_BUFFER)
    size = (int64_t) ub[fd].size;
  pthread_mutex_unlock (&ub_lock);
  return size >= 0 ? size : (int64_t) lseek (fd, 0, SEEK_END);
}

/* A writable mapping of the first @len bytes of dmabuf @fd (what the
 * device's DMA writes through). *@borrowed: it is the process's own
 * mapping of a udmabuf's memfd (where a second mapping of its pages
 * cannot be made: valgrind has no mremap with old size 0), never to be
 * unmapped by the caller. */
void *
pfemu_dmabuf_map (int fd, size_t len, int *borrowed)
{
  *borrowed = 0;
  if (pfemu_udmabuf_maybe (fd)) {
    void *p = pfemu_udmabuf_mmap (fd, len, PROT_READ | PROT_WRITE, 0);
    UdmaFd u;

    if (p != MAP_FAILED)
      return p;
    pthread_mutex_lock (&ub_lock);
    u = ub[fd];
    pthread_mutex_unlock (&ub_lock);
    if (u.kind == UB_BUFFER && len <= u.size
        && (p = find_writable (u.dev, u.ino, u.offset, len)) != NULL) {
      *borrowed = 1;
      return p;
    }
    return MAP_FAILED;
  }
  return pfemu_real_mmap (NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
}

/* What dmabuf @fd stands for, whatever its fd number (v4l2src queues a
 * new dup of it each time): its file and, for a udmabuf, its offset. */
int
pfemu_dmabuf_identity (int fd, uint64_t id[3])
{
  struct stat st;

  if (fstat (fd, &st) < 0)
    return -errno;
  id[0] = st.st_dev;
  id[1] = st.st_ino;
  id[2] = 0;
  pthread_mutex_lock (&ub_lock);
  if (fd >= 0 && fd < MAX_FDS && ub[fd].kind == UB_BUFFER)
    id[2] = ub[fd].offset;
  pthread_mutex_unlock (&ub_lock);
  return 0;
}
