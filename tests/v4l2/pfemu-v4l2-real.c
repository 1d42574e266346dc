/* pfemu-v4l2: the libc calls behind the intercepted ones
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Looked up once (RTLD_NEXT), with no lock: a racing first call stores
 * the same pointer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#undef _FILE_OFFSET_BITS
#include "pfemu-v4l2-private.h"

#include <fcntl.h>

int
pfemu_real_close (int fd)
{
  REAL (int, close, (int));

  return real_close (fd);
}

int
pfemu_real_open (const char *path, int flags, mode_t mode)
{
  REAL (int, open, (const char *, int, ...));

  return real_open (path, flags, mode);
}

void *
pfemu_real_mmap (void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  REAL (void *, mmap, (void *, size_t, int, int, int, off_t));

  return real_mmap (addr, len, prot, flags, fd, off);
}

int
pfemu_real_munmap (void *addr, size_t len)
{
  REAL (int, munmap, (void *, size_t));

  return real_munmap (addr, len);
}
