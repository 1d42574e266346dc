/* pinnedflow tests: helpers shared by the core, transport, fuzz and bridge
 * suites (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * fd and mapping accounting (/proc/self/fd, /proc/self/maps), temporary
 * directories, children that die with their parent, and a raw sendmsg() with
 * SCM_RIGHTS for hostile peers, and the one CHECK style of every plain-C
 * test. Built as the static library pf-test-util (tests/meson.build); each
 * suite keeps only its runner (tests/transport/harness.c forks a child per
 * case, tests/bridge/bridge-check.c cleans up children and a temp dir) and
 * tells pf_test_set_fail_handler() what a failed check does.
 */
#ifndef __PF_TEST_UTIL_H__
#define __PF_TEST_UTIL_H__

#include <fcntl.h>              /* the seal fallbacks below complete these */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/types.h>

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif
#ifndef F_SEAL_EXEC
#define F_SEAL_EXEC 0x0020
#endif
#ifndef MFD_NOEXEC_SEAL
#define MFD_NOEXEC_SEAL 0x0008U
#endif

/* ---- checks ---- */

/* Prints "FILE:LINE: message" to stderr, runs the fail handler (which must
 * not return), or exit (1) when none is set. */
void pf_test_fail (const char *file, int line, const char *fmt, ...)
    __attribute__((noreturn, format (printf, 3, 4)));
/* What a failed check does after printing: the suite's runner sets it. */
void pf_test_set_fail_handler (void (*handler) (void));

#define CHECK(cond) do { \
    if (!(cond)) \
      pf_test_fail (__FILE__, __LINE__, "CHECK failed: %s", #cond); \
  } while (0)

/* Integer comparison that prints both values: CHECK_INT (res, ==, 0). */
#define CHECK_INT(a, op, b) do { \
    long long _a = (long long) (a), _b = (long long) (b); \
    if (!(_a op _b)) \
      pf_test_fail (__FILE__, __LINE__, \
          "CHECK failed: %s %s %s (%lld vs %lld)", #a, #op, #b, _a, _b); \
  } while (0)

/* A check with its own message (printf format and arguments). */
#define CHECK_MSG(cond, ...) do { \
    if (!(cond)) \
      pf_test_fail (__FILE__, __LINE__, __VA_ARGS__); \
  } while (0)

/* Polls @cond every millisecond until it is true; fails after a generous
 * 30 s (a hang guard, not a timing assertion). */
#define WAIT_FOR(cond) do { \
    int _i; \
    for (_i = 0; _i < 30000 && !(cond); _i++) \
      pf_test_sleep_ms (1); \
    if (!(cond)) \
      pf_test_fail (__FILE__, __LINE__, "timed out waiting for %s", #cond); \
  } while (0)

/* ---- fds and mappings ---- */

/* Open file descriptors of this process (the directory's own fd excluded),
 * or -1. */
int pf_test_count_fds (void);

/* Lines of /proc/self/maps naming the memfd with this device and inode. */
int pf_test_count_maps_of (dev_t dev, ino_t ino);
/* The same for the memfd behind @fd. */
int pf_test_count_maps_of_fd (int fd);
/* Whether [addr, addr + len) lies inside one mapping (1), not (0), or -1. */
int pf_test_is_mapped (const void *addr, size_t len);

/* Free huge pages of the default size, in bytes; *page_size gets that size. */
uint64_t pf_test_free_hugepage_bytes (uint64_t * page_size);
/* CAP_IPC_LOCK in the effective set. */
int pf_test_have_cap_ipc_lock (void);

/* A memfd of @size bytes (MFD_CLOEXEC | MFD_ALLOW_SEALING), sealed
 * F_SEAL_SHRINK | F_SEAL_GROW if @seal. Returns the fd or -errno. */
int pf_test_memfd (size_t size, int seal);

/* One sendmsg() of @len bytes with @n_fds fds (0..32) in one SCM_RIGHTS
 * message, with MSG_NOSIGNAL. Returns 0 when the whole packet went out, else
 * -errno. Nothing here checks what is sent: hostile peers use it. */
int pf_test_send_fds (int sock, const void *buf, size_t len, const int *fds,
    int n_fds);
/* The same with more send flags (e.g. MSG_DONTWAIT). */
int pf_test_send_fds_flags (int sock, const void *buf, size_t len,
    const int *fds, int n_fds, int flags);

/* A SOCK_SEQPACKET | SOCK_CLOEXEC socket connected to @path: fd or -errno. */
int pf_test_connect (const char *path);
/* Reads (and discards, fds included) until the peer hangs up: 1 on end of
 * file, -errno on a receive error such as ECONNRESET, 0 if nothing ended it
 * within @timeout_ms (a hang guard: callers treat 0 as a failure). */
int pf_test_wait_hangup (int sock, int timeout_ms);

/* ---- temporary directories ---- */

/* Creates $TMPDIR (or /tmp)/@prefix-XXXXXX into @buf. 0 or -errno. */
int pf_test_make_tmpdir (char *buf, size_t size, const char *prefix);
/* Removes @dir and everything below it (no symlink is followed). */
void pf_test_remove_tree (const char *dir);

/* ---- children ---- */

/* fork(): the child gets PR_SET_PDEATHSIG(SIGKILL) (and exits 127 if its
 * parent is already gone) and starts with no registered children; the parent
 * registers the pid for pf_test_kill_children(). Returns as fork() does. */
pid_t pf_test_fork (void);
/* Waits for @pid (retrying on EINTR), forgets it; returns the wait status,
 * or -1. */
int pf_test_wait (pid_t pid);
/* The wait status as an exit code: the exit status, or 128 + signal. */
int pf_test_exit_code (int status);
/* SIGKILLs and reaps every registered child still running. */
void pf_test_kill_children (void);

void pf_test_sleep_ms (int ms);

#endif
