/* pinnedflow tests: shared helpers (see pf-test-util.h)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "pf-test-util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int
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
  return n - 1;                 /* the DIR's own fd */
}

int
pf_test_count_maps_of (dev_t dev, ino_t ino)
{
  FILE *f = fopen ("/proc/self/maps", "re");
  char line[1024];
  int n = 0;

  if (f == NULL)
    return -1;
  while (fgets (line, sizeof (line), f) != NULL) {
    unsigned long long start, end, off, inode;
    unsigned int maj, min;
    char perms[8];

    if (sscanf (line, "%llx-%llx %7s %llx %x:%x %llu", &start, &end, perms,
            &off, &maj, &min, &inode) != 7)
      continue;
    if (inode == (unsigned long long) ino && maj == major (dev)
        && min == minor (dev) && strstr (line, "memfd:") != NULL)
      n++;
  }
  fclose (f);
  return n;
}

int
pf_test_count_maps_of_fd (int fd)
{
  struct stat st;

  if (fstat (fd, &st) < 0)
    return -1;
  return pf_test_count_maps_of (st.st_dev, st.st_ino);
}

int
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

uint64_t
pf_test_free_hugepage_bytes (uint64_t * page_size)
{
  FILE *f = fopen ("/proc/meminfo", "re");
  char line[256];
  unsigned long long v, free_pages = 0, rsvd = 0, kib = 0;

  if (page_size)
    *page_size = 0;
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

int
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

int
pf_test_memfd (size_t size, int seal)
{
  int fd = memfd_create ("pf-test", MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

  if (fd < 0)
    return -errno;
  if (ftruncate (fd, (off_t) size) < 0 || (seal
          && fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)) {
    err = errno;
    close (fd);
    return -err;
  }
  return fd;
}

/* ---- checks ---- */

static void (*fail_handler) (void);

void
pf_test_set_fail_handler (void (*handler) (void))
{
  fail_handler = handler;
}

void
pf_test_fail (const char *file, int line, const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "%s:%d: ", file, line);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  fflush (stderr);
  if (fail_handler != NULL)
    fail_handler ();
  exit (1);
}

#define MAX_SEND_FDS 32

int
pf_test_send_fds_flags (int sock, const void *buf, size_t len,
    const int *fds, int n_fds, int flags)
{
  union
  {
    char b[CMSG_SPACE (sizeof (int) * MAX_SEND_FDS)];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {.iov_base = (void *) buf,.iov_len = len };
  struct msghdr mh = {.msg_iov = &iov,.msg_iovlen = 1 };
  struct cmsghdr *cm;
  ssize_t n;

  if (n_fds < 0 || n_fds > MAX_SEND_FDS)
    return -EINVAL;
  if (n_fds > 0) {
    memset (&ctl, 0, sizeof (ctl));
    mh.msg_control = ctl.b;
    mh.msg_controllen = CMSG_SPACE (sizeof (int) * n_fds);
    cm = CMSG_FIRSTHDR (&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN (sizeof (int) * n_fds);
    memcpy (CMSG_DATA (cm), fds, sizeof (int) * n_fds);
  }
  n = sendmsg (sock, &mh, MSG_NOSIGNAL | flags);
  if (n < 0)
    return -errno;
  return n == (ssize_t) len ? 0 : -EMSGSIZE;
}

int
pf_test_send_fds (int sock, const void *buf, size_t len, const int *fds,
    int n_fds)
{
  return pf_test_send_fds_flags (sock, buf, len, fds, n_fds, 0);
}

int
pf_test_connect (const char *path)
{
  struct sockaddr_un addr = {.sun_family = AF_UNIX };
  int fd, err;

  if (strlen (path) >= sizeof (addr.sun_path))
    return -ENAMETOOLONG;
  strcpy (addr.sun_path, path);
  fd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  if (connect (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0) {
    err = errno;
    close (fd);
    return -err;
  }
  return fd;
}

int
pf_test_wait_hangup (int sock, int timeout_ms)
{
  struct pollfd pfd = {.fd = sock,.events = POLLIN };
  char buf[8192];
  ssize_t n;
  int waited = 0;

  while (waited < timeout_ms) {
    if (poll (&pfd, 1, 100) <= 0) {
      waited += 100;
      continue;
    }
    /* No control buffer: fds attached to what is read are discarded by
     * the kernel, never installed here. */
    n = recv (sock, buf, sizeof (buf), MSG_DONTWAIT);
    if (n == 0)
      return 1;
    if (n < 0 && errno != EAGAIN && errno != EINTR)
      return -errno;
  }
  return 0;
}

int
pf_test_make_tmpdir (char *buf, size_t size, const char *prefix)
{
  const char *base = getenv ("TMPDIR");
  int n;

  if (base == NULL || base[0] == '\0')
    base = "/tmp";
  n = snprintf (buf, size, "%s/%s-XXXXXX", base, prefix);
  if (n < 0 || (size_t) n >= size)
    return -ENAMETOOLONG;
  return mkdtemp (buf) != NULL ? 0 : -errno;
}

static int
remove_entry (const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
  (void) st;
  (void) flag;
  (void) ftw;
  remove (p);
  return 0;
}

void
pf_test_remove_tree (const char *dir)
{
  if (dir != NULL && dir[0] != '\0')
    nftw (dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

#define MAX_CHILDREN 64

static pid_t children[MAX_CHILDREN];

pid_t
pf_test_fork (void)
{
  pid_t parent = getpid (), pid;
  int i;

  fflush (NULL);
  pid = fork ();
  if (pid == 0) {
    prctl (PR_SET_PDEATHSIG, SIGKILL);
    if (getppid () != parent)
      _exit (127);
    memset (children, 0, sizeof (children));
    return 0;
  }
  if (pid > 0) {
    for (i = 0; i < MAX_CHILDREN; i++) {
      if (children[i] == 0) {
        children[i] = pid;
        break;
      }
    }
  }
  return pid;
}

static void
forget (pid_t pid)
{
  int i;

  for (i = 0; i < MAX_CHILDREN; i++)
    if (children[i] == pid)
      children[i] = 0;
}

int
pf_test_wait (pid_t pid)
{
  int status = 0;

  while (waitpid (pid, &status, 0) < 0) {
    if (errno != EINTR) {
      forget (pid);
      return -1;
    }
  }
  forget (pid);
  return status;
}

int
pf_test_exit_code (int status)
{
  if (status < 0)
    return -1;
  if (WIFEXITED (status))
    return WEXITSTATUS (status);
  if (WIFSIGNALED (status))
    return 128 + WTERMSIG (status);
  return -1;
}

void
pf_test_kill_children (void)
{
  int i;

  for (i = 0; i < MAX_CHILDREN; i++) {
    if (children[i] > 0) {
      kill (children[i], SIGKILL);
      while (waitpid (children[i], NULL, 0) < 0 && errno == EINTR);
      children[i] = 0;
    }
  }
}

void
pf_test_sleep_ms (int ms)
{
  struct timespec ts = {.tv_sec = ms / 1000,.tv_nsec = (ms % 1000) * 1000000L
  };

  while (nanosleep (&ts, &ts) < 0 && errno == EINTR);
}
