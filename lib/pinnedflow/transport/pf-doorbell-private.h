/* pinnedflow: the frame ring's doorbells (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Internal to libpinnedflow. A doorbell is one AF_UNIX SOCK_STREAM
 * socketpair: its maker keeps one end and hands the other to the peer
 * (docs/protocol.md, 3.10). Each end is its own open file description, so
 * the flags a peer sets on its end (O_NONBLOCK cleared with fcntl ()) do not
 * reach ours; and every call here passes MSG_DONTWAIT (and MSG_NOSIGNAL), so
 * none can block whatever the flags are, nor raise SIGPIPE (issue 26).
 * A ring is one byte; a full socket means the bell is rung already.
 * Stateless: any thread, no locks.
 */
#ifndef __PF_DOORBELL_PRIVATE_H__
#define __PF_DOORBELL_PRIVATE_H__

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which way the bytes go, seen from the maker. */
enum pf_doorbell_dir {
  PF_DOORBELL_WE_RING,          /* we ring, the peer reads */
  PF_DOORBELL_PEER_RINGS,       /* the peer rings, we read */
};

/* A new doorbell: @fds[0] ours, @fds[1] for the peer (both close-on-exec;
 * the direction not used is shut down). 0 or a negative errno. */
int pf_doorbell_new (enum pf_doorbell_dir dir, int fds[2]);

/* Rings @fd once: 0, -EAGAIN (full: rung already), or a negative errno
 * (-EPIPE: the peer closed its end). Never blocks. */
int pf_doorbell_ring (int fd);

/* Reads at most @max rings (bytes; capped at 256 per call): how many, 0
 * when the other end is closed (end of file, or reset), -EAGAIN when none
 * is there, another negative errno for an fd that is no doorbell. Never
 * blocks. */
int pf_doorbell_read (int fd, size_t max);

/* 0 if @fd, received from a peer, can be a doorbell (an AF_UNIX
 * SOCK_STREAM socket), -EPROTO if not. */
int pf_doorbell_check (int fd);

#ifdef __cplusplus
}
#endif
#endif /* __PF_DOORBELL_PRIVATE_H__ */
