/* pinnedflow: unix socket helpers of the transport (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "pf-socket-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static atomic_uint tmp_counter;

static int
fill_addr (const char *path, struct sockaddr_un *addr)
{
  size_t len;

  /* An empty path would be an abstract (or autobound) socket. */
  if (path == NULL || path[0] == '\0')
    return -EINVAL;
  len = strlen (path);
  if (len >= sizeof (addr->sun_path))
    return -ENAMETOOLONG;
  memset (addr, 0, sizeof (*addr));
  addr->sun_family = AF_UNIX;
  memcpy (addr->sun_path, path, len + 1);
  return 0;
}

/* 1: something accepts connections at @path; 0: nobody (stale or gone);
 * negative: not a socket file. */
static int
probe_live (const char *path)
{
  struct sockaddr_un addr;
  struct stat st;
  int s, res, err;

  if (lstat (path, &st) < 0)
    return errno == ENOENT ? 0 : -errno;
  if (!S_ISSOCK (st.st_mode))
    return -EEXIST;
  if ((res = fill_addr (path, &addr)) < 0)
    return res;
  s = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s < 0)
    return -errno;
  res = connect (s, (struct sockaddr *) &addr, sizeof (addr));
  err = errno;
  close (s);
  if (res == 0)
    return 1;
  switch (err) {
    case ECONNREFUSED:         /* socket file, nobody listening: stale */
    case ENOENT:               /* removed meanwhile */
      return 0;
    default:
      /* EAGAIN (backlog full), EPROTOTYPE (another socket type), EACCES:
       * somebody owns it, leave it alone. */
      return 1;
  }
}

/* Makes @path point at the socket bound at @tmp. */
static int
publish_path (const char *tmp, const char *path)
{
  int tries, live;

  for (tries = 0; tries < 8; tries++) {
    if (link (tmp, path) == 0)
      return 0;
    if (errno != EEXIST)
      return -errno;
    live = probe_live (path);
    if (live < 0)
      return live;
    if (live > 0)
      return -EADDRINUSE;
    /* Stale socket of a crashed producer: remove and retry. */
    if (unlink (path) < 0 && errno != ENOENT)
      return -errno;
  }
  return -EADDRINUSE;
}

static int
remember_file (const char *path, pf_socket_file * file)
{
  struct stat st;

  if (lstat (path, &st) < 0)
    return -errno;
  if (file) {
    file->dev = (uint64_t) st.st_dev;
    file->ino = (uint64_t) st.st_ino;
  }
  return 0;
}

int
pf_socket_listen (const char *path, unsigned int perms, int backlog,
    pf_socket_file * file)
{
  struct sockaddr_un addr;
  char tmp[sizeof (addr.sun_path)];
  int fd, res, n, live;

  if ((res = fill_addr (path, &addr)) < 0)
    return res;
  fd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0)
    return -errno;

  /* Unique per process and call: two producers racing for one path in
   * the same process must not share the temporary name. */
  n = snprintf (tmp, sizeof (tmp), "%s.%ld.%u.tmp", path, (long) getpid (),
      atomic_fetch_add (&tmp_counter, 1));
  if (n > 0 && (size_t) n < sizeof (tmp)) {
    /* Bind under a private name, set the mode, listen, then link the final
     * name: the socket is never reachable with the wrong permissions. */
    unlink (tmp);
    if ((res = fill_addr (tmp, &addr)) < 0)
      goto error;
    if (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0) {
      res = -errno;
      goto error;
    }
    if (chmod (tmp, perms & 07777) < 0 || listen (fd, backlog) < 0) {
      res = -errno;
      unlink (tmp);
      goto error;
    }
    res = publish_path (tmp, path);
    unlink (tmp);
    if (res < 0)
      goto error;
  } else {
    /* No room for a temporary name: bind the path itself, then chmod
     * before listening, so nobody can connect before the mode is set. */
    for (;;) {
      if (bind (fd, (struct sockaddr *) &addr, sizeof (addr)) == 0)
        break;
      if (errno != EADDRINUSE) {
        res = -errno;
        goto error;
      }
      live = probe_live (path);
      if (live != 0) {
        res = live < 0 ? live : -EADDRINUSE;
        goto error;
      }
      if (unlink (path) < 0 && errno != ENOENT) {
        res = -errno;
        goto error;
      }
    }
    if (chmod (path, perms & 07777) < 0 || listen (fd, backlog) < 0) {
      res = -errno;
      unlink (path);
      goto error;
    }
  }
  if ((res = remember_file (path, file)) < 0)
    goto error;
  return fd;

error:
  close (fd);
  return res;
}

void
pf_socket_unlink (const char *path, const pf_socket_file * file)
{
  struct stat st;

  if (path == NULL || lstat (path, &st) < 0)
    return;
  /* Another producer may have replaced a file we left; keep theirs. */
  if (file && ((uint64_t) st.st_dev != file->dev ||
          (uint64_t) st.st_ino != file->ino))
    return;
  unlink (path);
}

int
pf_socket_connect (const char *path)
{
  struct sockaddr_un addr;
  int fd, res;

  if ((res = fill_addr (path, &addr)) < 0)
    return res;
  fd = socket (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return -errno;
  if (connect (fd, (struct sockaddr *) &addr, sizeof (addr)) < 0) {
    res = -errno;
    close (fd);
    return res;
  }
  return fd;
}

int
pf_socket_send (int fd, const void *buf, size_t len, const int *fds,
    unsigned int n_fds, int flags)
{
  struct iovec iov = {.iov_base = (void *) buf,.iov_len = len };
  struct msghdr mh = {.msg_iov = &iov,.msg_iovlen = 1 };
  union
  {
    char buf[CMSG_SPACE (sizeof (int) * PF_SOCKET_MAX_RECV_FDS)];
    struct cmsghdr align;
  } ctl;
  struct cmsghdr *cmsg;
  ssize_t n;

  if (n_fds > PF_SOCKET_MAX_RECV_FDS)
    return -EINVAL;
  if (n_fds == 0) {
    /* every FRAME and RELEASE: send(), no msghdr for the kernel to copy
     * in and walk (issue 13; what shmsink and the benchmark's floor do) */
    do {
      n = send (fd, buf, len, flags | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
  } else {
    memset (&ctl, 0, sizeof (ctl));
    mh.msg_control = ctl.buf;
    mh.msg_controllen = CMSG_SPACE (sizeof (int) * n_fds);
    cmsg = CMSG_FIRSTHDR (&mh);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN (sizeof (int) * n_fds);
    memcpy (CMSG_DATA (cmsg), fds, sizeof (int) * n_fds);
    do {
      n = sendmsg (fd, &mh, flags | MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
  }
  if (n < 0)
    return -errno;
  /* A SOCK_SEQPACKET packet goes out whole or not at all. */
  if ((size_t) n != len)
    return -EIO;
  return 0;
}

void
pf_socket_close_fds (int *fds, unsigned int n)
{
  unsigned int i;

  for (i = 0; i < n; i++) {
    if (fds[i] >= 0)
      close (fds[i]);
    fds[i] = -1;
  }
}

ssize_t
pf_socket_recv (int fd, void *buf, size_t cap, int flags, int *fds,
    unsigned int *n_fds, const char **why)
{
  struct iovec iov = {.iov_base = buf,.iov_len = cap };
  union
  {
    char buf[CMSG_SPACE (sizeof (int) * PF_SOCKET_MAX_RECV_FDS)];
    struct cmsghdr align;
  } ctl;
  struct msghdr mh = {.msg_iov = &iov,.msg_iovlen = 1,
    .msg_control = ctl.buf,.msg_controllen = sizeof (ctl.buf)
  };
  struct cmsghdr *cmsg;
  const char *bad = NULL;
  unsigned int n = 0;
  ssize_t len;

  *n_fds = 0;
  if (why)
    *why = NULL;
  do {
    len = recvmsg (fd, &mh, flags | MSG_CMSG_CLOEXEC);
  } while (len < 0 && errno == EINTR);
  if (len < 0)
    return -errno;

  /* Collect every fd the kernel installed, whatever else is wrong. */
  for (cmsg = CMSG_FIRSTHDR (&mh); cmsg != NULL; cmsg = CMSG_NXTHDR (&mh, cmsg)) {
    size_t bytes, i, k;

    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) {
      bad = "unexpected control message";
      continue;
    }
    bytes = cmsg->cmsg_len - CMSG_LEN (0);
    k = bytes / sizeof (int);
    for (i = 0; i < k; i++) {
      int f;

      memcpy (&f, CMSG_DATA (cmsg) + i * sizeof (int), sizeof (int));
      if (n < PF_SOCKET_MAX_RECV_FDS)
        fds[n++] = f;
      else
        close (f);              /* cannot happen: the buffer bounds it */
    }
  }
  if (mh.msg_flags & MSG_CTRUNC)
    bad = "control data truncated (too many fds)";
  if (mh.msg_flags & MSG_TRUNC)
    bad = "packet larger than the largest message";
  if (len == 0 && n > 0)
    bad = "empty packet carrying fds";
  if (bad) {
    pf_socket_close_fds (fds, n);
    if (why)
      *why = bad;
    return -EPROTO;
  }
  *n_fds = n;
  return len;
}

int
pf_socket_peercred (int fd, int32_t * pid, uint32_t * uid, uint32_t * gid)
{
  struct ucred cred;
  socklen_t len = sizeof (cred);

  if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
    return -errno;
  *pid = cred.pid;
  *uid = cred.uid;
  *gid = cred.gid;
  return 0;
}
