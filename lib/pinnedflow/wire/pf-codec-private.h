/* pinnedflow: what the wire codec's files share (internal to wire/)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The little-endian accessors and the helpers of the codec's core
 * (pf-protocol.c) that the control messages (pf-protocol-control.c) use.
 * Not staged for the tests: they see pf-protocol-private.h only.
 */
#ifndef __PF_CODEC_PRIVATE_H__
#define __PF_CODEC_PRIVATE_H__

#include "pf-protocol-private.h"

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define OFF(type, field) offsetof (struct type, field)

/* Little-endian accessors at a byte offset: no alignment assumed. */
static inline void
put16 (void *buf, size_t off, uint16_t v)
{
  v = htole16 (v);
  memcpy ((uint8_t *) buf + off, &v, sizeof (v));
}

static inline void
put32 (void *buf, size_t off, uint32_t v)
{
  v = htole32 (v);
  memcpy ((uint8_t *) buf + off, &v, sizeof (v));
}

static inline void
put64 (void *buf, size_t off, uint64_t v)
{
  v = htole64 (v);
  memcpy ((uint8_t *) buf + off, &v, sizeof (v));
}

static inline uint16_t
get16 (const void *buf, size_t off)
{
  uint16_t v;

  memcpy (&v, (const uint8_t *) buf + off, sizeof (v));
  return le16toh (v);
}

static inline uint32_t
get32 (const void *buf, size_t off)
{
  uint32_t v;

  memcpy (&v, (const uint8_t *) buf + off, sizeof (v));
  return le32toh (v);
}

static inline uint64_t
get64 (const void *buf, size_t off)
{
  uint64_t v;

  memcpy (&v, (const uint8_t *) buf + off, sizeof (v));
  return le64toh (v);
}

/* Records the calling thread's error text (pf_msg_error ()); returns @err. */
int pf_msg_fail (int err, const char *fmt, ...)
    __attribute__((format (printf, 2, 3)));
/* Empties it: a call that succeeds leaves "". */
void pf_msg_error_clear (void);
/* A header of @type for a message of @size bytes, the rest of @size
 * zeroed. Returns: @size. */
size_t pf_msg_write_header (void *buf, uint32_t type, size_t size,
    uint32_t n_fds);
/* The header of a packet of @len bytes with @n_fds fds: a known type, the
 * size the packet has, no reserved bits, the fds its type carries. 0 with
 * @h filled, or -EPROTO. */
int pf_msg_check_header (const void *buf, size_t len, unsigned int n_fds,
    struct pf_msg_header *h);
/* -EPROTO: the fixed-size message @name is @len bytes, not @want. */
int pf_msg_wrong_size (const char *name, size_t len, size_t want);
/* A FRAME's fields, its header @h checked: what pf_msg_parse () fills. */
int pf_msg_frame_parse (const void *buf, size_t len,
    const struct pf_msg_header *h, struct pf_msg_frame *f);

#endif /* __PF_CODEC_PRIVATE_H__ */
