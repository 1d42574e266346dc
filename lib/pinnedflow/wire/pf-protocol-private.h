/* pinnedflow: the wire codec (internal, not installed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The encoders and the parser of the messages of pf-wire-private.h
 * (pf-protocol.c: the FRAME's encoder and decoder, the error text;
 * pf-protocol-control.c: the other messages, pf_msg_parse()). They are not
 * part of libpinnedflow's ABI (the library is built with hidden visibility
 * and nothing here says PF_API): the producer and consumer use them inside
 * the library, and the test suites that forge or parse raw packets link the
 * static helper library pinnedflow-protocol (lib/pinnedflow/meson.build),
 * which holds its own copy of both files. That copy has no state shared
 * with the library's: the encoders are pure and pf_msg_error() reports the
 * last failure of the same copy in the same thread.
 */
#ifndef __PF_PROTOCOL_PRIVATE_H__
#define __PF_PROTOCOL_PRIVATE_H__

#include <pinnedflow/pf-wire-private.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * pf_msg_parse:
 * @buf: one received packet, @len bytes
 * @n_fds: fds that arrived with it
 * @msg: (out): the decoded message
 *
 * Checks everything that can be checked without state: header size and type,
 * exact size for fixed messages, fd count, magic/version of HELLO, caps length
 * and text (no NUL inside), frame chunk count (1..PF_MAX_CHUNKS), plane count
 * (<= PF_MAX_PLANES), reserved fields zero. Never reads past @len.
 *
 * Returns: 0, or -EPROTO (malformed), -EPROTONOSUPPORT (bad magic/version).
 * pf_msg_error() gives a description of the last failure in this thread.
 */
int pf_msg_parse (const void *buf, size_t len, unsigned int n_fds,
    struct pf_msg *msg);
/**
 * pf_msg_error:
 *
 * Returns: a description of the last pf_msg_parse(), pf_msg_frame_encode()
 * or pf_msg_frame_decode() failure in this thread ("" after a success of
 * one of them).
 */
const char *pf_msg_error (void);

/**
 * pf_msg_write_hello:
 *
 * Writes a HELLO (40 bytes) for @role. The encoders (pf_msg_write_*) write
 * a full message into @buf (at least PF_MAX_MSG_SIZE bytes, no alignment
 * needed), little-endian, with reserved fields 0. Returns: the size.
 */
size_t pf_msg_write_hello (void *buf, uint16_t role, uint32_t max_held,
    uint64_t session_id);
/**
 * pf_msg_write_hello_full:
 *
 * A HELLO with @flags (a consumer's requested delivery,
 * PF_HELLO_DELIVERY_MASK) claiming protocol @version (PF_PROTOCOL_VERSION;
 * tests forge others). pf_msg_write_hello() writes flags 0.
 */
size_t pf_msg_write_hello_full (void *buf, uint16_t version, uint16_t role,
    uint32_t max_held, uint32_t flags, uint64_t session_id);
/**
 * pf_msg_write_stream:
 *
 * Writes a STREAM (104 bytes) of @info (pf-frame.h; segment fields written
 * only with PF_STREAM_HAS_SEGMENT, else 0). Returns: the size.
 */
size_t pf_msg_write_stream (void *buf, const pf_stream_info * info);
/**
 * pf_msg_write_frame_ring:
 *
 * Writes a FRAME_RING (40 bytes, 3 fds announced) for a ring of
 * @n_entries. Returns: the size.
 */
size_t pf_msg_write_frame_ring (void *buf, uint32_t n_entries);
/**
 * pf_msg_write_refuse:
 *
 * Writes a REFUSE (24 bytes). Returns: the size.
 */
size_t pf_msg_write_refuse (void *buf, uint32_t reason, uint32_t limit);
/* What a consumer reports of a parsed STREAM. */
void pf_msg_stream_to_info (const struct pf_msg_stream *msg,
    pf_stream_info * info);
/**
 * pf_msg_write_segment_add:
 *
 * Writes a SEGMENT_ADD (40 bytes; its fd travels separately). Returns: the
 * size.
 */
size_t pf_msg_write_segment_add (void *buf, uint64_t segment_id,
    uint64_t size);
/**
 * pf_msg_write_device_segment_add:
 * @m: the fields in host order (its header is ignored and written here)
 *
 * Writes a DEVICE_SEGMENT_ADD (64 bytes, 1 fd announced; the fd travels
 * separately) after checking @m by the receiver's rules (the same code
 * as pf_msg_parse ()), so a producer never announces what its consumers
 * would refuse.
 *
 * Returns: the size, or 0 with pf_msg_error() saying which rule @m breaks.
 */
size_t pf_msg_write_device_segment_add (void *buf,
    const struct pf_msg_device_segment_add *m);
/**
 * pf_msg_write_device_segment_add_unchecked:
 *
 * The same bytes for any fields, unchecked: for tests and corpora that
 * forge what a hostile producer sends.
 */
size_t pf_msg_write_device_segment_add_unchecked (void *buf,
    const struct pf_msg_device_segment_add *m);
/**
 * pf_msg_write_segment_remove:
 *
 * Writes a SEGMENT_REMOVE (24 bytes). Returns: the size.
 */
size_t pf_msg_write_segment_remove (void *buf, uint64_t segment_id);
/**
 * pf_msg_write_caps:
 *
 * Writes a CAPS message of @caps (a NUL-terminated string, sent without its
 * NUL). Returns: the size, or 0 if @caps is longer than PF_MAX_CAPS_LEN.
 */
size_t pf_msg_write_caps (void *buf, uint32_t caps_seq, const char *caps);
/**
 * pf_msg_write_frame:
 * @frame: a filled struct in host order; its header is ignored and written
 *   here
 *
 * Writes a FRAME (256 bytes) of any fields, unchecked: for tests that forge
 * what a peer may send. The library encodes with pf_msg_frame_encode().
 * Returns: the size.
 */
size_t pf_msg_write_frame (void *buf, const struct pf_msg_frame *frame);
/**
 * pf_msg_write_eos:
 *
 * Writes an EOS (16 bytes). Returns: the size.
 */
size_t pf_msg_write_eos (void *buf);

/**
 * pf_msg_frame_encode:
 * @out: the FRAME, written whole (on a little-endian host the struct is the
 *   bytes sent; send @out as sizeof (*@out) bytes)
 * @frame: what the publisher set; entries past n_chunks and n_planes are
 *   not read
 *
 * The FRAME of @frame with the producer's @seq, @caps_seq and @send_time,
 * checked as a receiver checks it (pf_msg_frame_decode()) before anything
 * is sent. What needs the producer's state (the chunks within the
 * segments they name) is the producer's to check.
 *
 * Returns: 0, or -EINVAL: the frame breaks a FRAME's rules
 * (pf_msg_error() says which, in the receiver's words).
 */
int pf_msg_frame_encode (struct pf_msg_frame *out,
    const pf_producer_frame * frame, uint64_t seq, uint32_t caps_seq,
    uint64_t send_time);
/**
 * pf_msg_frame_decode:
 * @buf: one received packet of @len bytes, @n_fds fds attached: the
 *   caller's own copy (it is checked, then copied out)
 * @frame: (out): the frame, on success
 *
 * Decodes a FRAME: its header and fields checked as pf_msg_parse() checks
 * them (the same code), the fields copied into @frame (on a little-endian
 * host: checked in place, one copy).
 *
 * Returns: 0; -ENOMSG when the packet is not a FRAME (parse it with
 * pf_msg_parse()); -EPROTO (pf_msg_error() says why).
 */
int pf_msg_frame_decode (const void *buf, size_t len, unsigned int n_fds,
    pf_consumer_frame * frame);
/**
 * pf_msg_write_release:
 *
 * Writes a RELEASE of @seq (24 bytes). Returns: the size.
 */
size_t pf_msg_write_release (void *buf, uint64_t seq);
/**
 * pf_msg_write_domain:
 *
 * Writes a DOMAIN naming the device @device_uuid (40 bytes). Returns: the
 * size.
 */
size_t pf_msg_write_domain (void *buf, const uint8_t device_uuid[16]);

#ifdef __cplusplus
}
#endif
#endif /* __PF_PROTOCOL_PRIVATE_H__ */
