/* pinnedflow: the frame ring's doorbells (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Why socketpairs, not eventfds (issue 26): an eventfd sent with
 * SCM_RIGHTS is the same open file description on both sides, so the peer
 * could clear O_NONBLOCK on it and then make our read () or write () block
 * for ever (fill the counter to 2^64-2, or read the count back between our
 * poll and our read), with the producer's lock held. A pipe would have
 * separate descriptions but raises SIGPIPE when the reader is gone, and
 * write () has no per-call non-blocking flag. A stream socketpair has both:
 * separate ends, and send ()/recv () with MSG_DONTWAIT | MSG_NOSIGNAL.
 * No state here; see pf-doorbell-private.h.
 */
#include "pf-doorbell-private.h"

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int
pf_doorbell_new (enum pf_doorbell_dir dir, int fds[2])
{
  if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
          fds) < 0) {
    fds[0] = fds[1] = -1;
    return -errno;
  }
  /* the way not used: a peer cannot queue bytes we never read (it gets
   * EPIPE), and we cannot write where it does not read */
  if (shutdown (fds[0], dir == PF_DOORBELL_WE_RING ? SHUT_RD : SHUT_WR) < 0) {
    int err = -errno;

    close (fds[0]);
    close (fds[1]);
    fds[0] = fds[1] = -1;
    return err;
  }
  return 0;
}

int
pf_doorbell_ring (int fd)
{
  const uint8_t one = 1;
  ssize_t n;

  do {
    n = send (fd, &one, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
  } while (n < 0 && errno == EINTR);
  if (n == 1)
    return 0;
  return n < 0 ? -errno : -EIO;
}

int
pf_doorbell_read (int fd, size_t max)
{
  uint8_t buf[256];
  ssize_t n;

  if (max > sizeof (buf))
    max = sizeof (buf);
  if (max == 0)
    return -EINVAL;
  do {
    /* without a control buffer, fds a peer passes along are closed by
     * the kernel, never installed here */
    n = recv (fd, buf, max, MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && errno == ECONNRESET)
    return 0;
  if (n < 0)
    return errno == EWOULDBLOCK ? -EAGAIN : -errno;
  return (int) n;
}

int
pf_doorbell_check (int fd)
{
  struct stat st;
  int v;
  socklen_t len = sizeof (v);

  if (fstat (fd, &st) < 0 || !S_ISSOCK (st.st_mode))
    return -EPROTO;
  if (getsockopt (fd, SOL_SOCKET, SO_DOMAIN, &v, &len) < 0 || v != AF_UNIX)
    return -EPROTO;
  len = sizeof (v);
  if (getsockopt (fd, SOL_SOCKET, SO_TYPE, &v, &len) < 0 || v != SOCK_STREAM)
    return -EPROTO;
  return 0;
}
