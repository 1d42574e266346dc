/* pinnedflow: unix socket helpers of the transport (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Internal to libpinnedflow: path sockets (never abstract) with permissions
 * and stale-file recovery, SCM_RIGHTS send/receive with the fd discipline of
 * docs/protocol.md (every fd received is either returned or closed, never
 * leaked), and SO_PEERCRED.
 */
#ifndef __PF_SOCKET_PRIVATE_H__
#define __PF_SOCKET_PRIVATE_H__

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Receive at most this many fds per packet; more is a truncation (all are
 * closed). Well above what a valid message carries, so that a peer sending
 * a few extra fds is seen, reported and cleaned up precisely. */
#define PF_SOCKET_MAX_RECV_FDS 16

/* Identity of the socket file we created, to unlink only our own. */
typedef struct {
  uint64_t dev;
  uint64_t ino;
} pf_socket_file;

/**
 * pf_socket_listen:
 * @path: file system path (no abstract sockets: they ignore permissions)
 * @perms: mode of the socket file
 *
 * Creates a listening SOCK_SEQPACKET socket (non-blocking, close-on-exec) at
 * @path whose file has mode @perms from the moment the path exists (bound
 * under a unique temporary name, chmod'ed, then hard-linked to @path). A socket file
 * at @path that refuses connections (left by a crashed producer) is removed;
 * one that accepts gives -EADDRINUSE; something that is not a socket gives
 * -EEXIST.
 *
 * Returns: the listening fd, or a negative errno.
 */
int pf_socket_listen (const char *path, unsigned int perms, int backlog,
    pf_socket_file * file);

/* Unlinks @path if it is still the file pf_socket_listen() created. */
void pf_socket_unlink (const char *path, const pf_socket_file * file);

/* One connect attempt (blocking socket, close-on-exec). Returns the fd or a
 * negative errno (-ENOENT / -ECONNREFUSED: nobody listens yet). */
int pf_socket_connect (const char *path);

/* sendmsg() of one packet with @n_fds fds, MSG_NOSIGNAL added to @flags.
 * Returns 0 when the whole packet went out, or a negative errno (-EAGAIN
 * with MSG_DONTWAIT when the socket is full). */
int pf_socket_send (int fd, const void *buf, size_t len, const int *fds,
    unsigned int n_fds, int flags);

/**
 * pf_socket_recv:
 * @fds: (out): at least PF_SOCKET_MAX_RECV_FDS entries
 * @why: (out): on -EPROTO, what was wrong
 *
 * Receives one packet with MSG_CMSG_CLOEXEC. On success the received fds are
 * in @fds (the caller owns them). On MSG_TRUNC, MSG_CTRUNC or a control
 * message other than SCM_RIGHTS every received fd is closed and -EPROTO is
 * returned.
 *
 * Returns: the packet length (> 0), 0 on end of stream, -EAGAIN, -EPROTO or
 * another negative errno.
 */
ssize_t pf_socket_recv (int fd, void *buf, size_t cap, int flags, int *fds,
    unsigned int *n_fds, const char **why);

/* SO_PEERCRED of a connected socket. */
int pf_socket_peercred (int fd, int32_t * pid, uint32_t * uid,
    uint32_t * gid);

/* Closes @n fds and sets them to -1. */
void pf_socket_close_fds (int *fds, unsigned int n);

#ifdef __cplusplus
}
#endif
#endif /* __PF_SOCKET_PRIVATE_H__ */
