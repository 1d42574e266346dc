/* Core tests: pf_segment and its GLib glue (gstpinnedsegment.c)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include <gst/check/gstcheck.h>
#include <gst/pinnedflow/pinnedflow.h>

#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <linux/magic.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pf-test-util.h"

static int fds_at_start;

static void
setup (void)
{
  fds_at_start = pf_test_count_fds ();
  fail_unless_equals_int (pf_segment_count_live (), 0);
}

static void
teardown (void)
{
  fail_unless_equals_int (pf_segment_count_live (), 0);
  fail_unless_equals_int (pf_test_count_fds (), fds_at_start);
}

static int
get_seals (int fd)
{
  return fcntl (fd, F_GET_SEALS);
}

/* The GError domain is named as GLib's G_DEFINE_QUARK convention says (the
 * formatter once spaced its dashes out: "gst - pinned - segment - ..."). */
GST_START_TEST (test_error_domain)
{
  fail_unless_equals_string (g_quark_to_string (GST_PINNED_SEGMENT_ERROR),
      "gst-pinned-segment-error-quark");
}

GST_END_TEST;

GST_START_TEST (test_create_basic)
{
  pf_segment *seg = NULL, *seg2 = NULL;
  size_t page = pf_page_size ();
  uint8_t *base;
  int fd, seals;
  uint64_t i;

  fail_unless_equals_int (pf_segment_new ("pf-test", 1, 0, &seg), 0);
  fail_unless (seg != NULL);
  fail_unless_equals_int (pf_segment_count_live (), 1);
  fail_unless_equals_uint64 (pf_segment_get_size (seg), page);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 1);
  fail_unless (pf_segment_get_id (seg) != 0);
  fail_unless_equals_int (pf_segment_get_state (seg), 0);

  fd = pf_segment_get_fd (seg);
  fail_unless (fd >= 0);
  fail_unless (fcntl (fd, F_GETFD) & FD_CLOEXEC);
  seals = get_seals (fd);
  fail_unless ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
      (F_SEAL_SHRINK | F_SEAL_GROW), "seals 0x%x", seals);
  fail_if (seals & F_SEAL_FUTURE_WRITE);
  /* Sealed: the size cannot change. */
  fail_unless (ftruncate (fd, page * 2) < 0 && errno == EPERM);
  fail_unless (ftruncate (fd, 0) < 0 && errno == EPERM);

  base = pf_segment_get_base (seg);
  fail_unless (base != NULL);
  fail_unless (((uintptr_t) base & (page - 1)) == 0);
  for (i = 0; i < page; i++)
    fail_unless (base[i] == 0);
  memset (base, 0xa5, page);
  fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 1);

  /* Page rounding and unique ids. */
  fail_unless_equals_int (pf_segment_new (NULL, page + 1, 0, &seg2), 0);
  fail_unless_equals_uint64 (pf_segment_get_size (seg2), 2 * page);
  fail_unless (pf_segment_get_id (seg2) > pf_segment_get_id (seg));
  fail_unless_equals_int (pf_segment_count_live (), 2);

  /* References. */
  fail_unless (pf_segment_ref (seg) == seg);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 2);
  pf_segment_unref (seg);
  fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 1);
  pf_segment_unref (seg);
  pf_segment_unref (seg2);
  pf_segment_unref (NULL);
  fail_unless_equals_int (pf_segment_count_live (), 0);
}

GST_END_TEST;

GST_START_TEST (test_create_invalid)
{
  pf_segment *seg = (pf_segment *) 0x1;
  GError *err = NULL;

  fail_unless_equals_int (pf_segment_new (NULL, 0, 0, &seg), -EINVAL);
  fail_unless (seg == NULL);
  fail_unless_equals_int (pf_segment_new (NULL, (UINT64_C (1) << 40) + 1, 0,
          &seg), -EINVAL);
  fail_unless_equals_int (pf_segment_new (NULL, UINT64_MAX, 0, &seg), -EINVAL);
  fail_unless_equals_int (pf_segment_new (NULL, 16, 0, NULL), -EINVAL);

  fail_unless (gst_pinned_segment_new (0, 0, &err) == NULL);
  fail_unless (g_error_matches (err, GST_PINNED_SEGMENT_ERROR,
          GST_PINNED_SEGMENT_ERROR_INVALID));
  g_clear_error (&err);
}

GST_END_TEST;

GST_START_TEST (test_seal_writers)
{
  pf_segment *seg = NULL;
  size_t page = pf_page_size ();
  uint8_t *base, *ro;
  void *rw;
  int fd, seals;

  fail_unless_equals_int (pf_segment_new ("pf-test-sealed", page * 2,
          PF_SEGMENT_FLAG_SEAL_WRITERS, &seg), 0);
  fd = pf_segment_get_fd (seg);
  seals = get_seals (fd);
  fail_unless ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) ==
      (F_SEAL_SHRINK | F_SEAL_GROW), "seals 0x%x", seals);
  if (seals & F_SEAL_FUTURE_WRITE) {
    fail_unless (pf_segment_get_state (seg) & PF_SEGMENT_STATE_WRITE_SEALED);
    fail_unless (seals & F_SEAL_SEAL);
    /* Our mapping stays writable; new writable mappings are refused. */
    base = pf_segment_get_base (seg);
    memset (base, 0x5a, page * 2);
    rw = mmap (NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    fail_unless (rw == MAP_FAILED && errno == EPERM);
    fail_unless (write (fd, "x", 1) < 0 && errno == EPERM);
    ro = mmap (NULL, page, PROT_READ, MAP_SHARED, fd, 0);
    fail_unless (ro != MAP_FAILED);
    fail_unless (ro[0] == 0x5a && ro[page - 1] == 0x5a);
    munmap (ro, page);
  } else {
    /* A kernel before 5.1: no F_SEAL_FUTURE_WRITE, and no state for it. */
    fail_if (pf_segment_get_state (seg) & PF_SEGMENT_STATE_WRITE_SEALED);
  }
  pf_segment_unref (seg);
}

GST_END_TEST;

/* MFD_NOEXEC_SEAL where the kernel knows it: the memfd carries F_SEAL_EXEC. */
GST_START_TEST (test_noexec_seal)
{
  pf_segment *seg = NULL;
  int probe, seals;

  probe = memfd_create ("pf-probe", MFD_CLOEXEC | MFD_ALLOW_SEALING |
      MFD_NOEXEC_SEAL);
  fail_unless_equals_int (pf_segment_new (NULL, 100, 0, &seg), 0);
  seals = get_seals (pf_segment_get_fd (seg));
  if (probe >= 0) {
    close (probe);
    fail_unless (seals & F_SEAL_EXEC, "kernel knows MFD_NOEXEC_SEAL but the "
        "segment is not exec-sealed (seals 0x%x)", seals);
  } else {
    fail_unless_equals_int (errno, EINVAL);
    fail_if (seals & F_SEAL_EXEC);
  }
  pf_segment_unref (seg);
}

GST_END_TEST;

/* A real branch: with free huge pages the segment must get them, without
 * (the usual case) it must fall back and say so, and work. */
GST_START_TEST (test_hugepages_fallback)
{
  GstPinnedSegment *seg;
  GError *err = NULL;
  uint64_t hp_size = 0, hp_free, size = 3 * 1024 * 1024, i;
  guint state;
  uint8_t *base;

  hp_free = pf_test_free_hugepage_bytes (&hp_size);
  seg = gst_pinned_segment_new (size, GST_PINNED_SEGMENT_FLAG_HUGEPAGES, &err);
  fail_unless (seg != NULL, "%s", err ? err->message : "");
  state = pf_segment_get_state (seg);

  if (hp_size != 0 && hp_free >= ((size + hp_size - 1) / hp_size) * hp_size) {
    GST_INFO ("%" G_GUINT64_FORMAT " bytes of huge pages free: expecting "
        "them", hp_free);
    fail_unless (state & PF_SEGMENT_STATE_HUGEPAGES, "state 0x%x", state);
    fail_if (state & PF_SEGMENT_STATE_HUGEPAGES_REFUSED);
    fail_unless_equals_uint64 (pf_segment_get_size (seg) % hp_size, 0);
  } else {
    GST_INFO ("no huge pages free: expecting the fallback");
    fail_unless (state & PF_SEGMENT_STATE_HUGEPAGES_REFUSED, "state 0x%x",
        state);
    fail_if (state & PF_SEGMENT_STATE_HUGEPAGES);
    fail_unless_equals_uint64 (pf_segment_get_size (seg),
        (size + pf_page_size () - 1) / pf_page_size () * pf_page_size ());
  }
  fail_unless ((get_seals (pf_segment_get_fd (seg)) & (F_SEAL_SHRINK |
              F_SEAL_GROW)) == (F_SEAL_SHRINK | F_SEAL_GROW));
  /* Usable either way. */
  base = pf_segment_get_base (seg);
  for (i = 0; i < pf_segment_get_size (seg); i += 4096)
    base[i] = (uint8_t) i;
  for (i = 0; i < pf_segment_get_size (seg); i += 4096)
    fail_unless (base[i] == (uint8_t) i);
  fail_unless_equals_int (pf_test_count_maps_of_fd (pf_segment_get_fd (seg)),
      1);
  pf_segment_unref (seg);
}

GST_END_TEST;

GST_START_TEST (test_lock)
{
  pf_segment *seg = NULL;
  unsigned int state;
  struct rlimit rl;
  size_t size = 256 * 1024;

  fail_unless_equals_int (pf_segment_new (NULL, size, PF_SEGMENT_FLAG_LOCK,
          &seg), 0);
  state = pf_segment_get_state (seg);
  /* Exactly one outcome. */
  fail_unless (!!(state & PF_SEGMENT_STATE_LOCKED) !=
      !!(state & PF_SEGMENT_STATE_LOCK_REFUSED), "state 0x%x", state);
  getrlimit (RLIMIT_MEMLOCK, &rl);
  if (pf_test_have_cap_ipc_lock () || rl.rlim_cur == RLIM_INFINITY)
    fail_unless (state & PF_SEGMENT_STATE_LOCKED, "state 0x%x", state);
  pf_segment_unref (seg);

  /* Not asked, not reported. */
  fail_unless_equals_int (pf_segment_new (NULL, size, 0, &seg), 0);
  fail_if (pf_segment_get_state (seg) & (PF_SEGMENT_STATE_LOCKED |
          PF_SEGMENT_STATE_LOCK_REFUSED));
  pf_segment_unref (seg);
}

GST_END_TEST;

/* What the forked child reports. */
struct lock_report
{
  int stage;                    /* 0: all done, else where it stopped */
  int err;
  unsigned int state;
  int usable;
  int live_after;
};

static void
lock_refused_child (int wfd)
{
  struct lock_report r = { 1, 0, 0, 0, -1 };
  struct rlimit rl = { 64 * 1024, 64 * 1024 };
  GstPinnedSegment *seg;
  GError *err = NULL;
  size_t size = 1024 * 1024, i;
  uint8_t *base;

  if (setrlimit (RLIMIT_MEMLOCK, &rl) < 0) {
    r.err = errno;
    goto out;
  }
  r.stage = 2;
  /* Leaving uid 0 clears the capabilities, CAP_IPC_LOCK included. */
  if (geteuid () == 0 && (setgid (65534) < 0 || setuid (65534) < 0)) {
    r.err = errno;
    goto out;
  }
  r.stage = 3;
  seg = gst_pinned_segment_new (size, GST_PINNED_SEGMENT_FLAG_LOCK, &err);
  if (seg == NULL) {
    r.err = err->code;
    g_error_free (err);
    goto out;
  }
  r.state = pf_segment_get_state (seg);
  base = pf_segment_get_base (seg);
  for (i = 0; i < size; i++)
    base[i] = (uint8_t) i;
  r.usable = 1;
  for (i = 0; i < size; i++)
    if (base[i] != (uint8_t) i)
      r.usable = 0;
  pf_segment_unref (seg);
  r.live_after = pf_segment_count_live ();
  r.stage = 0;
out:
  if (write (wfd, &r, sizeof (r)) != sizeof (r))
    _exit (3);
  _exit (r.stage);
}

/* mlock refused even though the suite runs as root: a child drops to an
 * unprivileged uid with a small RLIMIT_MEMLOCK. Works with CK_FORK=no. */
GST_START_TEST (test_lock_refused)
{
  struct lock_report r;
  int p[2], status;
  ssize_t n;
  pid_t pid;

  fail_unless (pipe2 (p, O_CLOEXEC) == 0);
  pid = fork ();
  fail_unless (pid >= 0);
  if (pid == 0) {
    close (p[0]);
    lock_refused_child (p[1]);
  }
  close (p[1]);
  do {
    n = read (p[0], &r, sizeof (r));
  } while (n < 0 && errno == EINTR);
  close (p[0]);
  fail_unless (waitpid (pid, &status, 0) == pid);

  fail_unless_equals_int ((int) n, (int) sizeof (r));
  fail_unless (WIFEXITED (status));
  fail_unless (r.stage == 0, "child stopped at stage %d: error %d", r.stage,
      r.err);
  fail_unless (r.state & PF_SEGMENT_STATE_LOCK_REFUSED, "state 0x%x", r.state);
  fail_if (r.state & PF_SEGMENT_STATE_LOCKED);
  fail_unless (r.usable);
  fail_unless_equals_int (r.live_after, 0);
}

GST_END_TEST;

static void
make_memfd_fd (size_t size, int seals, int *fd_out)
{
  int fd = memfd_create ("pf-test-import", MFD_CLOEXEC | MFD_ALLOW_SEALING);

  fail_unless (fd >= 0);
  fail_unless (ftruncate (fd, size) == 0);
  if (seals)
    fail_unless (fcntl (fd, F_ADD_SEALS, seals) == 0);
  *fd_out = fd;
}

/* Import must refuse, with @code, leave @fd open and leak nothing. */
static void
check_import_refused (int fd, gsize size, gboolean writable, int expect_errno,
    GstPinnedSegmentError code)
{
  GstPinnedSegment *seg;
  GError *err = NULL;
  int fds, live = pf_segment_count_live ();
  pf_segment *raw = (pf_segment *) 0x1;

  fds = pf_test_count_fds ();
  fail_unless_equals_int (pf_segment_import (fd, size, writable ?
          PF_SEGMENT_IMPORT_WRITABLE : 0, &raw), -expect_errno);
  fail_unless (raw == NULL);
  seg = gst_pinned_segment_import (fd, size, writable, &err);
  fail_unless (seg == NULL);
  fail_unless (err != NULL);
  fail_unless (err->domain == GST_PINNED_SEGMENT_ERROR, "domain %s",
      g_quark_to_string (err->domain));
  fail_unless_equals_int (err->code, code);
  fail_unless (strstr (err->message,
          pf_segment_import_strerror (-expect_errno)) != NULL, "message: %s",
      err->message);
  g_error_free (err);
  fail_unless_equals_int (pf_test_count_fds (), fds);
  fail_unless_equals_int (pf_segment_count_live (), live);
  if (expect_errno != EBADF)
    fail_unless (fcntl (fd, F_GETFD) >= 0, "import closed the fd");
}

GST_START_TEST (test_import_valid)
{
  GstPinnedSegment *seg, *imp, *imp2;
  GError *err = NULL;
  size_t page = pf_page_size ();
  uint8_t *base, *ibase;
  int fd, fds;

  /* Write-sealed producer segment: read-only import only. */
  seg = gst_pinned_segment_new (page * 4, GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS,
      &err);
  fail_unless (seg != NULL);
  base = pf_segment_get_base (seg);
  memset (base, 0x11, page * 4);

  fds = pf_test_count_fds ();
  fd = dup (pf_segment_get_fd (seg));
  imp = gst_pinned_segment_import (fd, page * 4, FALSE, &err);
  fail_unless (imp != NULL, "%s", err ? err->message : "");
  fail_unless_equals_int (pf_segment_get_fd (imp), fd);
  fail_unless (pf_segment_get_state (imp) & PF_SEGMENT_STATE_IMPORTED);
  fail_unless (pf_segment_get_state (imp) & PF_SEGMENT_STATE_READONLY);
  if (pf_segment_get_state (seg) & PF_SEGMENT_STATE_WRITE_SEALED) {
    fail_unless (pf_segment_get_state (imp) & PF_SEGMENT_STATE_WRITE_SEALED);
    check_import_refused (fd, page * 4, TRUE, EACCES,
        GST_PINNED_SEGMENT_ERROR_ACCESS);
  }
  fail_unless (pf_segment_get_id (imp) != pf_segment_get_id (seg));
  ibase = pf_segment_get_base (imp);
  fail_unless (ibase != base);
  fail_unless (ibase[0] == 0x11 && ibase[page * 4 - 1] == 0x11);
  base[5] = 0x22;
  fail_unless (ibase[5] == 0x22);
  /* Two mappings of the memfd now: ours and the import. */
  fail_unless_equals_int (pf_test_count_maps_of_fd (fd), 2);
  /* A smaller claimed size is fine. */
  fd = dup (pf_segment_get_fd (seg));
  imp2 = gst_pinned_segment_import (fd, 100, FALSE, &err);
  fail_unless (imp2 != NULL);
  fail_unless_equals_uint64 (pf_segment_get_size (imp2), 100);
  pf_segment_unref (imp2);
  pf_segment_unref (imp);
  fail_unless_equals_int (pf_test_count_fds (), fds);
  pf_segment_unref (seg);

  /* Not write-sealed: a writable import shares the bytes both ways. */
  seg = gst_pinned_segment_new (page, 0, &err);
  fd = dup (pf_segment_get_fd (seg));
  imp = gst_pinned_segment_import (fd, page, TRUE, &err);
  fail_unless (imp != NULL, "%s", err ? err->message : "");
  fail_if (pf_segment_get_state (imp) & PF_SEGMENT_STATE_READONLY);
  ((uint8_t *) pf_segment_get_base (imp))[7] = 0x77;
  fail_unless (((uint8_t *) pf_segment_get_base (seg))[7] == 0x77);
  pf_segment_unref (imp);
  pf_segment_unref (seg);
}

GST_END_TEST;

GST_START_TEST (test_import_rejects_unsealed)
{
  int fd;

  /* Sealable but not sealed. */
  make_memfd_fd (8192, 0, &fd);
  check_import_refused (fd, 8192, FALSE, EPERM,
      GST_PINNED_SEGMENT_ERROR_NOT_SEALED);
  /* Only one of the two seals. */
  fail_unless (fcntl (fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
  check_import_refused (fd, 8192, FALSE, EPERM,
      GST_PINNED_SEGMENT_ERROR_NOT_SEALED);
  close (fd);

  /* A memfd that can never be sealed (no MFD_ALLOW_SEALING). */
  fd = memfd_create ("pf-test-nosealing", MFD_CLOEXEC);
  fail_unless (fd >= 0);
  fail_unless (ftruncate (fd, 8192) == 0);
  check_import_refused (fd, 8192, FALSE, EPERM,
      GST_PINNED_SEGMENT_ERROR_NOT_SEALED);
  close (fd);
}

GST_END_TEST;

GST_START_TEST (test_import_rejects_truncated)
{
  int fd;

  /* Sealed at 4 KiB: claiming 64 KiB would fault past the end. */
  make_memfd_fd (4096, F_SEAL_SHRINK | F_SEAL_GROW, &fd);
  check_import_refused (fd, 65536, FALSE, ERANGE,
      GST_PINNED_SEGMENT_ERROR_TOO_SMALL);
  check_import_refused (fd, 4097, TRUE, ERANGE,
      GST_PINNED_SEGMENT_ERROR_TOO_SMALL);
  close (fd);

  /* Sealed empty. */
  make_memfd_fd (0, F_SEAL_SHRINK | F_SEAL_GROW, &fd);
  check_import_refused (fd, 1, FALSE, ERANGE,
      GST_PINNED_SEGMENT_ERROR_TOO_SMALL);
  close (fd);
}

GST_END_TEST;

GST_START_TEST (test_import_rejects_size_lie)
{
  int fd;

  make_memfd_fd (65536, F_SEAL_SHRINK | F_SEAL_GROW, &fd);
  check_import_refused (fd, 0, FALSE, EINVAL, GST_PINNED_SEGMENT_ERROR_INVALID);
  /* Sizes whose page rounding or mapping would overflow. */
  check_import_refused (fd, G_MAXSIZE, FALSE, EINVAL,
      GST_PINNED_SEGMENT_ERROR_INVALID);
  check_import_refused (fd, G_MAXSIZE - 4095, FALSE, EINVAL,
      GST_PINNED_SEGMENT_ERROR_INVALID);
  check_import_refused (fd, (gsize) 1 << 41, FALSE, EINVAL,
      GST_PINNED_SEGMENT_ERROR_INVALID);
  /* One byte more than the file. */
  check_import_refused (fd, 65537, FALSE, ERANGE,
      GST_PINNED_SEGMENT_ERROR_TOO_SMALL);
  close (fd);
}

GST_END_TEST;

GST_START_TEST (test_import_rejects_non_memfd)
{
  const gchar *dir = g_getenv ("PINNEDFLOW_BUILD_ROOT");
  gchar *path;
  struct statfs sfs;
  int p[2], fd, closed_fd;

  /* A pipe. */
  fail_unless (pipe2 (p, O_CLOEXEC) == 0);
  check_import_refused (p[0], 4096, FALSE, ENOTTY,
      GST_PINNED_SEGMENT_ERROR_NOT_SEALABLE);
  check_import_refused (p[1], 4096, TRUE, ENOTTY,
      GST_PINNED_SEGMENT_ERROR_NOT_SEALABLE);
  close (p[0]);
  close (p[1]);

  /* A regular file. On a disk file system it does not support sealing at
   * all; on tmpfs it does, but is sealed F_SEAL_SEAL from birth and can
   * never get SHRINK/GROW. Either way: refused. */
  path = g_build_filename (dir ? dir : ".", "pf-test-regular-XXXXXX", NULL);
  fd = g_mkstemp_full (path, O_RDWR | O_CLOEXEC, 0600);
  fail_unless (fd >= 0, "mkstemp %s: %s", path, g_strerror (errno));
  unlink (path);
  fail_unless (ftruncate (fd, 65536) == 0);
  fail_unless (fstatfs (fd, &sfs) == 0);
  if (sfs.f_type == TMPFS_MAGIC)
    check_import_refused (fd, 65536, FALSE, EPERM,
        GST_PINNED_SEGMENT_ERROR_NOT_SEALED);
  else
    check_import_refused (fd, 65536, FALSE, ENOTTY,
        GST_PINNED_SEGMENT_ERROR_NOT_SEALABLE);
  close (fd);
  g_free (path);

  /* A character device. */
  fd = open ("/dev/null", O_RDWR | O_CLOEXEC);
  fail_unless (fd >= 0);
  check_import_refused (fd, 4096, FALSE, ENOTTY,
      GST_PINNED_SEGMENT_ERROR_NOT_SEALABLE);
  close (fd);

  /* No fd at all. */
  check_import_refused (-1, 4096, FALSE, EBADF,
      GST_PINNED_SEGMENT_ERROR_INVALID);
  closed_fd = dup (0);
  close (closed_fd);
  check_import_refused (closed_fd, 4096, FALSE, EBADF,
      GST_PINNED_SEGMENT_ERROR_INVALID);
}

GST_END_TEST;

GST_START_TEST (test_contains)
{
  pf_segment *seg = NULL;

  fail_unless_equals_int (pf_segment_new (NULL, 8192, 0, &seg), 0);
  fail_unless (pf_segment_contains (seg, 0, 8192));
  fail_unless (pf_segment_contains (seg, 8192, 0));
  fail_unless (pf_segment_contains (seg, 4096, 4096));
  fail_if (pf_segment_contains (seg, 4096, 4097));
  fail_if (pf_segment_contains (seg, 8193, 0));
  fail_if (pf_segment_contains (seg, UINT64_MAX, 2));
  fail_if (pf_segment_contains (seg, 2, UINT64_MAX));
  fail_if (pf_segment_contains (seg, UINT64_MAX - 1, UINT64_MAX));
  pf_segment_unref (seg);
}

GST_END_TEST;

/* Destroy notifies: run before munmap, newest first, once. */
typedef struct
{
  pf_segment *seg;              /* weak: only to read the fd/base */
  const uint8_t *base;
  size_t size;
  dev_t dev;
  ino_t ino;
  int order[4];
  int n;
  int mapped_ok;
  int byte_ok;
} NotifyCtx;

typedef struct
{
  NotifyCtx *ctx;
  int id;
} NotifyData;

static void
notify_check_mapped (void *data)
{
  NotifyData *d = data;
  NotifyCtx *c = d->ctx;

  c->order[c->n++] = d->id;
  /* The mapping is still there and readable. */
  if (pf_test_is_mapped (c->base, c->size) == 1
      && pf_test_count_maps_of (c->dev, c->ino) == 1)
    c->mapped_ok++;
  if (c->base[0] == 0xc3 && c->base[c->size - 1] == 0x3c)
    c->byte_ok++;
  g_free (d);
}

static int key_a, key_b, key_c;

GST_START_TEST (test_attach_destroy_before_unmap)
{
  NotifyCtx ctx = { 0, };
  NotifyData *d;
  pf_segment *seg = NULL;
  struct stat st;
  uint8_t *base;
  int i;

  fail_unless_equals_int (pf_segment_new (NULL, 3 * 4096,
          PF_SEGMENT_FLAG_LOCK, &seg), 0);
  base = pf_segment_get_base (seg);
  ctx.base = base;
  ctx.size = pf_segment_get_size (seg);
  base[0] = 0xc3;
  base[ctx.size - 1] = 0x3c;
  fail_unless (fstat (pf_segment_get_fd (seg), &st) == 0);
  ctx.dev = st.st_dev;
  ctx.ino = st.st_ino;

  for (i = 0; i < 3; i++) {
    const void *key = i == 0 ? &key_a : i == 1 ? &key_b : &key_c;
    d = g_new0 (NotifyData, 1);
    d->ctx = &ctx;
    d->id = i;
    fail_unless_equals_int (pf_segment_attach (seg, key, d,
            notify_check_mapped), 0);
  }
  /* Same key twice. */
  fail_unless_equals_int (pf_segment_attach (seg, &key_a, NULL, NULL), -EEXIST);
  d = pf_segment_get_attached (seg, &key_b);
  fail_unless (d != NULL && d->id == 1);
  fail_unless (pf_segment_get_attached (seg, &ctx) == NULL);

  /* Detach runs the notify now. */
  fail_unless_equals_int (pf_segment_detach (seg, &key_b), 0);
  fail_unless_equals_int (ctx.n, 1);
  fail_unless_equals_int (ctx.order[0], 1);
  fail_unless_equals_int (pf_segment_detach (seg, &key_b), -ENOENT);
  fail_unless (pf_segment_get_attached (seg, &key_b) == NULL);

  /* Another reference: nothing runs yet. */
  pf_segment_ref (seg);
  pf_segment_unref (seg);
  fail_unless_equals_int (ctx.n, 1);

  pf_segment_unref (seg);
  /* Newest first (c then a), each saw the mapping alive. */
  fail_unless_equals_int (ctx.n, 3);
  fail_unless_equals_int (ctx.order[1], 2);
  fail_unless_equals_int (ctx.order[2], 0);
  fail_unless_equals_int (ctx.mapped_ok, 3);
  fail_unless_equals_int (ctx.byte_ok, 3);
  /* And now it is gone. */
  fail_unless_equals_int (pf_test_count_maps_of (ctx.dev, ctx.ino), 0);
}

GST_END_TEST;

/* pf_segment_attach_once under concurrency: created once. */
#define N_THREADS 8

typedef struct
{
  pf_segment *seg;
  gint creates;
  gint destroys;
  GMutex lock;
  GCond cond;
  gint waiting;
  gboolean go;
} OnceCtx;

static int once_key;

static void *
once_create (pf_segment * seg, void *user_data, int *err)
{
  OnceCtx *c = user_data;
  int *data;

  g_atomic_int_inc (&c->creates);
  /* Widen the window. */
  g_usleep (20 * 1000);
  data = g_new (int, 1);
  *data = 42;
  return data;
}

static OnceCtx *once_ctx;

static void
once_destroy (void *data)
{
  g_atomic_int_inc (&once_ctx->destroys);
  g_free (data);
}

static gpointer
once_thread (gpointer user_data)
{
  OnceCtx *c = user_data;
  int err = -1;
  void *res;

  g_mutex_lock (&c->lock);
  c->waiting++;
  g_cond_broadcast (&c->cond);
  while (!c->go)
    g_cond_wait (&c->cond, &c->lock);
  g_mutex_unlock (&c->lock);

  res = pf_segment_attach_once (c->seg, &once_key, once_create, c,
      once_destroy, &err);
  fail_unless_equals_int (err, 0);
  return res;
}

GST_START_TEST (test_attach_once_concurrent)
{
  OnceCtx c = { 0, };
  GThread *threads[N_THREADS];
  void *results[N_THREADS];
  int i;

  once_ctx = &c;
  g_mutex_init (&c.lock);
  g_cond_init (&c.cond);
  fail_unless_equals_int (pf_segment_new (NULL, 4096, 0, &c.seg), 0);

  for (i = 0; i < N_THREADS; i++)
    threads[i] = g_thread_new ("once", once_thread, &c);
  g_mutex_lock (&c.lock);
  while (c.waiting < N_THREADS)
    g_cond_wait (&c.cond, &c.lock);
  c.go = TRUE;
  g_cond_broadcast (&c.cond);
  g_mutex_unlock (&c.lock);
  for (i = 0; i < N_THREADS; i++)
    results[i] = g_thread_join (threads[i]);

  fail_unless_equals_int (c.creates, 1);
  for (i = 0; i < N_THREADS; i++) {
    fail_unless (results[i] != NULL);
    fail_unless (results[i] == results[0]);
  }
  fail_unless_equals_int (*(int *) results[0], 42);
  fail_unless (pf_segment_get_attached (c.seg, &once_key) == results[0]);
  fail_unless_equals_int (c.destroys, 0);
  pf_segment_unref (c.seg);
  fail_unless_equals_int (c.destroys, 1);
  g_mutex_clear (&c.lock);
  g_cond_clear (&c.cond);
  once_ctx = NULL;
}

GST_END_TEST;

static void *
failing_create (pf_segment * seg, void *user_data, int *err)
{
  (*(int *) user_data)++;
  *err = -ENODEV;
  return NULL;
}

static void *
silent_failing_create (pf_segment * seg, void *user_data, int *err)
{
  return NULL;
}

static void *
ok_create (pf_segment * seg, void *user_data, int *err)
{
  return user_data;
}

GST_START_TEST (test_attach_once_failure)
{
  pf_segment *seg = NULL;
  int calls = 0, err = 0, value = 7;

  fail_unless_equals_int (pf_segment_new (NULL, 4096, 0, &seg), 0);
  fail_unless (pf_segment_attach_once (seg, &once_key, failing_create, &calls,
          NULL, &err) == NULL);
  fail_unless_equals_int (err, -ENODEV);
  fail_unless_equals_int (calls, 1);
  fail_unless (pf_segment_get_attached (seg, &once_key) == NULL);
  /* A create that fails without saying why still reports an error. */
  fail_unless (pf_segment_attach_once (seg, &once_key, silent_failing_create,
          NULL, NULL, &err) == NULL);
  fail_unless (err < 0);
  /* A later try may succeed; then it is never created again. */
  fail_unless (pf_segment_attach_once (seg, &once_key, ok_create, &value,
          NULL, &err) == &value);
  fail_unless_equals_int (err, 0);
  fail_unless (pf_segment_attach_once (seg, &once_key, failing_create, &calls,
          NULL, &err) == &value);
  fail_unless_equals_int (calls, 1);
  pf_segment_unref (seg);
}

GST_END_TEST;

GST_START_TEST (test_boxed)
{
  GstPinnedSegment *seg, *copy;
  GValue v = G_VALUE_INIT;
  GError *err = NULL;

  fail_unless (G_TYPE_IS_BOXED (GST_TYPE_PINNED_SEGMENT));
  seg = gst_pinned_segment_new (100, GST_PINNED_SEGMENT_FLAG_NONE, &err);
  fail_unless (seg != NULL);
  copy = g_boxed_copy (GST_TYPE_PINNED_SEGMENT, seg);
  fail_unless (copy == seg);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 2);
  g_boxed_free (GST_TYPE_PINNED_SEGMENT, copy);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 1);

  g_value_init (&v, GST_TYPE_PINNED_SEGMENT);
  g_value_set_boxed (&v, seg);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 2);
  g_value_unset (&v);
  fail_unless_equals_int (pf_segment_get_refcount (seg), 1);
  pf_segment_unref (seg);

  /* The flags type names its values. */
  {
    GFlagsClass *k = g_type_class_ref (GST_TYPE_PINNED_SEGMENT_FLAGS);
    fail_unless (g_flags_get_value_by_nick (k, "lock")->value ==
        GST_PINNED_SEGMENT_FLAG_LOCK);
    fail_unless (g_flags_get_value_by_nick (k, "hugepages")->value ==
        GST_PINNED_SEGMENT_FLAG_HUGEPAGES);
    fail_unless (g_flags_get_value_by_nick (k, "seal-writers")->value ==
        GST_PINNED_SEGMENT_FLAG_SEAL_WRITERS);
    g_type_class_unref (k);
  }
}

GST_END_TEST;

GST_START_TEST (test_error_mapping)
{
  fail_unless_equals_int (gst_pinned_segment_error_from_errno (-ENOTTY),
      GST_PINNED_SEGMENT_ERROR_NOT_SEALABLE);
  fail_unless_equals_int (gst_pinned_segment_error_from_errno (-EPERM),
      GST_PINNED_SEGMENT_ERROR_NOT_SEALED);
  fail_unless_equals_int (gst_pinned_segment_error_from_errno (-ERANGE),
      GST_PINNED_SEGMENT_ERROR_TOO_SMALL);
  fail_unless_equals_int (gst_pinned_segment_error_from_errno (-EBADF),
      GST_PINNED_SEGMENT_ERROR_INVALID);
  fail_unless_equals_int (gst_pinned_segment_error_from_errno (-EINVAL),
      GST_PINNED_SEGMENT_ERROR_INVALID);
  fail_unless_equals_int (gst_pinned_segment_error_from_errno (-EOVERFLOW),
      GST_PINNED_SEGMENT_ERROR_INVALID);
  fail_unless_equals_int (gst_pinned_segment_error_from_errno (-EACCES),
      GST_PINNED_SEGMENT_ERROR_ACCESS);
  fail_unless_equals_int (gst_pinned_segment_error_from_errno (-ENOMEM),
      GST_PINNED_SEGMENT_ERROR_FAILED);
  fail_unless (strcmp (pf_segment_import_strerror (-ENOTTY),
          pf_segment_import_strerror (-EPERM)) != 0);
  fail_unless (pf_segment_import_strerror (-ENOMEM) != NULL);
}

GST_END_TEST;

/* The `pinnedsegment` debug category logs what each segment got. The
 * default log function's output (stderr) is captured into a memfd: adding
 * or removing log functions would make GStreamer drop list nodes that
 * valgrind reports as lost. */
static int saved_stderr = -1, capture_fd = -1;

static void
capture_start (void)
{
  fflush (stderr);
  capture_fd = memfd_create ("pf-test-log", MFD_CLOEXEC);
  fail_unless (capture_fd >= 0);
  saved_stderr = dup (2);
  fail_unless (saved_stderr >= 0);
  fail_unless (dup2 (capture_fd, 2) == 2);
}

static gchar *
capture_stop (void)
{
  gchar *text;
  off_t len;

  fflush (stderr);
  fail_unless (dup2 (saved_stderr, 2) == 2);
  close (saved_stderr);
  len = lseek (capture_fd, 0, SEEK_END);
  text = g_malloc0 (len + 1);
  fail_unless (pread (capture_fd, text, len, 0) == len);
  close (capture_fd);
  capture_fd = saved_stderr = -1;
  return text;
}

GST_START_TEST (test_debug_log)
{
  GstPinnedSegment *seg;
  GError *err = NULL;
  gchar *log;
  guint state;
  gint fd;

  gst_debug_set_threshold_for_name ("pinnedsegment", GST_LEVEL_INFO);

  capture_start ();
  seg = gst_pinned_segment_new (4096, GST_PINNED_SEGMENT_FLAG_HUGEPAGES |
      GST_PINNED_SEGMENT_FLAG_LOCK, &err);
  log = capture_stop ();
  fail_unless (seg != NULL);
  state = pf_segment_get_state (seg);
  fail_unless (strstr (log, "pinnedsegment") != NULL, "log: %s", log);
  fail_unless (strstr (log, "created segment") != NULL, "log: %s", log);
  if (state & PF_SEGMENT_STATE_HUGEPAGES_REFUSED)
    fail_unless (strstr (log, "hugepages refused") != NULL, "log: %s", log);
  else
    fail_unless (strstr (log, "hugepages") != NULL, "log: %s", log);
  if (state & PF_SEGMENT_STATE_LOCKED)
    fail_unless (strstr (log, "locked") != NULL, "log: %s", log);
  else
    fail_unless (strstr (log, "lock refused") != NULL, "log: %s", log);
  g_free (log);

  fd = dup (pf_segment_get_fd (seg));
  capture_start ();
  pf_segment_unref (gst_pinned_segment_import (fd, 4096, FALSE, &err));
  log = capture_stop ();
  fail_unless (strstr (log, "imported segment") != NULL, "log: %s", log);
  fail_unless (strstr (log, "read-only") != NULL, "log: %s", log);
  g_free (log);
  pf_segment_unref (seg);

  /* Refusals are warnings. */
  gst_debug_set_threshold_for_name ("pinnedsegment", GST_LEVEL_WARNING);
  capture_start ();
  fail_unless (gst_pinned_segment_import (-1, 4096, FALSE, &err) == NULL);
  log = capture_stop ();
  g_clear_error (&err);
  fail_unless (strstr (log, "refused to import") != NULL, "log: %s", log);
  g_free (log);

  gst_debug_unset_threshold_for_name ("pinnedsegment");
}

GST_END_TEST;

GST_START_TEST (test_describe_state)
{
  gchar *s;

  s = gst_pinned_segment_describe_state (0);
  fail_unless_equals_string (s, "plain");
  g_free (s);
  s = gst_pinned_segment_describe_state (PF_SEGMENT_STATE_LOCKED |
      PF_SEGMENT_STATE_HUGEPAGES_REFUSED | PF_SEGMENT_STATE_WRITE_SEALED);
  fail_unless_equals_string (s, "locked, hugepages refused (normal pages), "
      "write-sealed");
  g_free (s);
}

GST_END_TEST;

static Suite *
pinnedsegment_suite (void)
{
  Suite *s = suite_create ("pinnedsegment");
  TCase *tc = tcase_create ("general");

  suite_add_tcase (s, tc);
  tcase_add_checked_fixture (tc, setup, teardown);
  tcase_add_test (tc, test_error_domain);
  tcase_add_test (tc, test_create_basic);
  tcase_add_test (tc, test_create_invalid);
  tcase_add_test (tc, test_seal_writers);
  tcase_add_test (tc, test_noexec_seal);
  tcase_add_test (tc, test_hugepages_fallback);
  tcase_add_test (tc, test_lock);
  tcase_add_test (tc, test_lock_refused);
  tcase_add_test (tc, test_import_valid);
  tcase_add_test (tc, test_import_rejects_unsealed);
  tcase_add_test (tc, test_import_rejects_truncated);
  tcase_add_test (tc, test_import_rejects_size_lie);
  tcase_add_test (tc, test_import_rejects_non_memfd);
  tcase_add_test (tc, test_contains);
  tcase_add_test (tc, test_attach_destroy_before_unmap);
  tcase_add_test (tc, test_attach_once_concurrent);
  tcase_add_test (tc, test_attach_once_failure);
  tcase_add_test (tc, test_boxed);
  tcase_add_test (tc, test_error_mapping);
  tcase_add_test (tc, test_debug_log);
  tcase_add_test (tc, test_describe_state);
  return s;
}

GST_CHECK_MAIN (pinnedsegment);
