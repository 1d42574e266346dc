/* Helpers shared by the core tests: fd and mapping accounting.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __PF_TEST_UTIL_H__
#define __PF_TEST_UTIL_H__

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

/* Open file descriptors of this process (the directory's own fd counts in
 * every call alike). */
static inline int
pf_test_count_fds (void)
{
  DIR *d = opendir ("/proc/self/fd");
  struct dirent *e;
  int n = 0;

  if (d == NULL)
    return -1;
  while ((e = readdir (d)) != NULL)
    if (e->d_name[0] != '.')
      n++;
  closedir (d);
  return n;
}

/* Lines of /proc/self/maps naming the file with this device and inode. */
static inline int
pf_test_count_maps_of (dev_t dev, ino_t ino)
{
  FILE *f = fopen ("/proc/self/maps", "re");
  char line[1024];
  int n = 0;

  if (f == NULL)
    return -1;
  while (fgets (line, sizeof (line), f) != NULL) {
    unsigned long long start, end, off, inode;
    unsigned int major, minor;
    char perms[8];

    if (sscanf (line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms,
            &off, &major, &minor, &inode) != 7)
      continue;
    if (inode == (unsigned long long) ino
        && major == (unsigned int) major (dev)
        && minor == (unsigned int) minor (dev) && strstr (line, "memfd:"))
      n++;
  }
  fclose (f);
  return n;
}

/* Lines of /proc/self/maps naming the memfd behind @fd. */
static inline int
pf_test_count_maps_of_fd (int fd)
{
  struct stat st;

  if (fstat (fd, &st) < 0)
    return -1;
  return pf_test_count_maps_of (st.st_dev, st.st_ino);
}

/* Whether the address range [addr, addr + len) is mapped (per maps). */
static inline int
pf_test_is_mapped (const void *addr, size_t len)
{
  FILE *f = fopen ("/proc/self/maps", "re");
  char line[1024];
  uintptr_t a = (uintptr_t) addr;
  int found = 0;

  if (f == NULL)
    return -1;
  while (fgets (line, sizeof (line), f) != NULL) {
    unsigned long long start, end;

    if (sscanf (line, "%llx-%llx", &start, &end) == 2 && a >= start
        && a + len <= end) {
      found = 1;
      break;
    }
  }
  fclose (f);
  return found;
}

/* Free huge pages (of the default size) x their size, in bytes. */
static inline uint64_t
pf_test_free_hugepage_bytes (uint64_t * page_size)
{
  FILE *f = fopen ("/proc/meminfo", "re");
  char line[256];
  unsigned long long v, free_pages = 0, rsvd = 0, kib = 0;

  if (f == NULL)
    return 0;
  while (fgets (line, sizeof (line), f) != NULL) {
    if (sscanf (line, "HugePages_Free: %llu", &v) == 1)
      free_pages = v;
    else if (sscanf (line, "HugePages_Rsvd: %llu", &v) == 1)
      rsvd = v;
    else if (sscanf (line, "Hugepagesize: %llu kB", &v) == 1)
      kib = v;
  }
  fclose (f);
  if (page_size)
    *page_size = kib * 1024;
  if (free_pages <= rsvd)
    return 0;
  return (free_pages - rsvd) * kib * 1024;
}

/* CAP_IPC_LOCK in the effective set (from /proc/self/status). */
static inline int
pf_test_have_cap_ipc_lock (void)
{
  FILE *f = fopen ("/proc/self/status", "re");
  char line[256];
  unsigned long long caps = 0;

  if (f == NULL)
    return 0;
  while (fgets (line, sizeof (line), f) != NULL)
    if (sscanf (line, "CapEff: %llx", &caps) == 1)
      break;
  fclose (f);
  return (caps >> 14) & 1;      /* CAP_IPC_LOCK */
}

#endif
