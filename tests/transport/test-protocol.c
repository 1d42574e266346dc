/* pinnedflow transport: pf_msg_parse() and the encoders
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#include "harness.h"

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t buf[PF_MAX_MSG_SIZE + 64];
static struct pf_msg msg;

static void
put32 (size_t off, uint32_t v)
{
  v = htole32 (v);
  memcpy (buf + off, &v, 4);
}

static void
put64 (size_t off, uint64_t v)
{
  v = htole64 (v);
  memcpy (buf + off, &v, 8);
}

static void
fill_frame (struct pf_msg_frame *f)
{
  memset (f, 0, sizeof (*f));
  f->seq = 7;
  f->caps_seq = 2;
  f->n_chunks = 2;
  f->chunks[0].segment_id = 11;
  f->chunks[0].offset = 4096;
  f->chunks[0].size = 1000;
  f->chunks[1].segment_id = 12;
  f->chunks[1].offset = 0;
  f->chunks[1].size = 500;
  f->pts = 1;
  f->dts = PF_TIME_NONE;
  f->duration = 3;
  f->offset = 4;
  f->offset_end = 5;
  f->clock_pts = 6;
  f->send_time = 8;
  f->buffer_flags = 0x4000;
  f->meta_flags = PF_FRAME_HAS_VIDEO_META;
  f->width = 16;
  f->height = 8;
  f->n_planes = 2;
  f->plane_offset[1] = 1000;
  f->plane_stride[0] = 64;
  f->plane_stride[1] = -32;
}

static int
parse_frame_variant (void (*mutate) (struct pf_msg_frame * f))
{
  struct pf_msg_frame f;
  size_t len;

  fill_frame (&f);
  mutate (&f);
  len = pf_msg_write_frame (buf, &f);
  return pf_msg_parse (buf, len, 0, &msg);
}

static void
test_roundtrip (void)
{
  struct pf_msg_frame f;
  size_t len;
  static const uint8_t hello_le[40] = {
    1, 0, 0, 0, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    'P', 'F', 'L', 'W', 2, 0, 1, 0, 8, 0, 0, 0, 0, 0, 0, 0,
    0xef, 0xcd, 0xab, 0x89, 0x67, 0x45, 0x23, 0x01
  };

  /* HELLO: byte-exact little-endian layout (the example of protocol.md). */
  len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 8, 0x0123456789abcdefull);
  CHECK_INT (len, ==, 40);
  CHECK (memcmp (buf, hello_le, 40) == 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.type, ==, PF_MSG_HELLO);
  CHECK_INT (msg.u.hello.role, ==, PF_ROLE_PRODUCER);
  CHECK_INT (msg.u.hello.max_held, ==, 8);
  CHECK (msg.u.hello.session_id == 0x0123456789abcdefull);

  len = pf_msg_write_segment_add (buf, 5, 1 << 20);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, 0);
  CHECK_INT (msg.u.segment_add.segment_id, ==, 5);
  CHECK_INT (msg.u.segment_add.size, ==, 1 << 20);

  len = pf_msg_write_segment_remove (buf, 5);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.u.segment_remove.segment_id, ==, 5);

  len = pf_msg_write_caps (buf, 3, "video/x-raw,format=NV12");
  CHECK_INT (len, ==, 24 + 23);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.u.caps.caps_seq, ==, 3);
  CHECK (strcmp (msg.u.caps.text, "video/x-raw,format=NV12") == 0);

  fill_frame (&f);
  len = pf_msg_write_frame (buf, &f);
  CHECK_INT (len, ==, 256);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  f.hdr = msg.u.frame.hdr;
  CHECK (memcmp (&f, &msg.u.frame, sizeof (f)) == 0);

  len = pf_msg_write_eos (buf);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.type, ==, PF_MSG_EOS);

  len = pf_msg_write_release (buf, 99);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.u.release.seq, ==, 99);
}

static void
test_header (void)
{
  size_t len;

  /* Truncated and empty packets. */
  CHECK_INT (pf_msg_parse (buf, 0, 0, &msg), ==, -EPROTO);
  len = pf_msg_write_release (buf, 1);
  CHECK_INT (pf_msg_parse (buf, 15, 0, &msg), ==, -EPROTO);
  CHECK_INT (pf_msg_parse (buf, len - 1, 0, &msg), ==, -EPROTO);
  CHECK (strlen (pf_msg_error ()) > 0);
  /* Size field lies. */
  put32 (4, 1000);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  /* Bad types. */
  len = pf_msg_write_eos (buf);
  put32 (0, 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  put32 (0, 8);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  put32 (0, 0xffffffff);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  /* Reserved header field. */
  len = pf_msg_write_eos (buf);
  put32 (12, 1);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  /* Larger than any message. */
  memset (buf, 0, sizeof (buf));
  put32 (0, PF_MSG_CAPS);
  put32 (4, PF_MAX_MSG_SIZE + 1);
  CHECK_INT (pf_msg_parse (buf, PF_MAX_MSG_SIZE + 1, 0, &msg), ==, -EPROTO);
  /* EOS with a body. */
  len = pf_msg_write_release (buf, 1);
  put32 (0, PF_MSG_EOS);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
}

static void
test_fds (void)
{
  size_t len;

  /* SEGMENT_ADD needs exactly one fd, both announced and attached. */
  len = pf_msg_write_segment_add (buf, 5, 4096);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  CHECK_INT (pf_msg_parse (buf, len, 2, &msg), ==, -EPROTO);
  put32 (8, 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  put32 (8, 2);
  CHECK_INT (pf_msg_parse (buf, len, 2, &msg), ==, -EPROTO);
  /* Nothing else carries fds. */
  len = pf_msg_write_release (buf, 1);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);
  put32 (8, 1);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);
  len = pf_msg_write_eos (buf);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);
}

static void
test_hello (void)
{
  size_t len;

  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  put32 (16, 0x12345678);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTONOSUPPORT);
  CHECK (strstr (pf_msg_error (), "magic") != NULL);
  /* version 1 (the protocol before delivery policies) and 3 */
  len = pf_msg_write_hello_full (buf, 1, PF_ROLE_CONSUMER, 0, 0, 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTONOSUPPORT);
  CHECK (strstr (pf_msg_error (), "version 1 not supported") != NULL);
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  buf[20] = 3;
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTONOSUPPORT);
  CHECK (strstr (pf_msg_error (), "version") != NULL);
  /* A future, longer HELLO of another version is still recognised as a
   * version mismatch, not garbage. */
  put32 (4, 64);
  CHECK_INT (pf_msg_parse (buf, 64, 0, &msg), ==, -EPROTONOSUPPORT);
  /* Our version with a wrong size. */
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  put32 (4, 48);
  CHECK_INT (pf_msg_parse (buf, 48, 0, &msg), ==, -EPROTO);
  CHECK_INT (pf_msg_parse (buf, 22, 0, &msg), ==, -EPROTO);
  /* Role, flags, producer without a limit. */
  len = pf_msg_write_hello (buf, 3, 0, 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  /* A consumer's flags: its requested delivery 0..2, nothing else. */
  for (uint32_t d = 0; d <= 2; d++) {
    len = pf_msg_write_hello_full (buf, PF_PROTOCOL_VERSION,
        PF_ROLE_CONSUMER, 0, d, 0);
    CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
    CHECK_INT (msg.u.hello.flags, ==, d);
  }
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  put32 (28, 3);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  put32 (28, 1u << 5);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  /* bit 4: it takes device segments (issue 32, protocol.md 3.11) */
  put32 (28, PF_HELLO_DEVICE_SEGMENTS | 1);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  /* ... and the frame ring flags: socketpair doorbells (issue 26), and the
   * retired eventfd ring of issue 13, still accepted (answered without a
   * ring) */
  put32 (28, PF_HELLO_FRAME_RING | 2);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.u.hello.flags, ==, PF_HELLO_FRAME_RING | 2);
  put32 (28, PF_HELLO_FRAME_RING_EVENTFD | 1);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.u.hello.flags, ==, PF_HELLO_FRAME_RING_EVENTFD | 1);
  CHECK_INT (PF_HELLO_FRAME_RING, ==, 1u << 3);
  /* A producer's flags are 0 (its delivery and liveness: STREAM). */
  len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 4, 1);
  put32 (28, 1);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 0, 1);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  /* A producer's session id is non-zero; a consumer's fields are 0. */
  len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 4, 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 4, 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  len = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 7);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
}

static void
test_segment (void)
{
  size_t len;

  len = pf_msg_write_segment_add (buf, 0, 4096);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);
  len = pf_msg_write_segment_add (buf, 1, 0);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);
  len = pf_msg_write_segment_add (buf, 1, 4096);
  put32 (32, 1);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);
  len = pf_msg_write_segment_add (buf, 1, 4096);
  put32 (36, 1);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);
  len = pf_msg_write_segment_remove (buf, 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
}

/* DEVICE_SEGMENT_ADD (issue 32, protocol.md 3.11): exactly one fd; the
 * checked encoder and the parser apply the same rules (granularity a power
 * of two in 4 KiB..1 GiB, size a non-zero multiple of it up to 1 TiB,
 * handle type 1, flags 0, a UUID), each refusal says why. */
static void
test_device_segment (void)
{
  struct pf_msg_device_segment_add d, bad;
  size_t len;
  unsigned int i;

  memset (&d, 0, sizeof (d));
  d.segment_id = 3;
  d.size = 4 << 20;
  d.granularity = 2 << 20;
  d.handle_type = PF_DEVICE_HANDLE_POSIX_FD;
  memcpy (d.device_uuid, "0123456789abcdef", 16);
  len = pf_msg_write_device_segment_add (buf, &d);
  CHECK_INT (len, ==, 64);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  CHECK_INT (pf_msg_parse (buf, len, 2, &msg), ==, -EPROTO);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, 0);
  CHECK_INT (msg.type, ==, PF_MSG_DEVICE_SEGMENT_ADD);
  CHECK (memcmp (&msg.u.device_segment_add.segment_id, &d.segment_id,
          sizeof (d) - sizeof (d.hdr)) == 0);
  CHECK_INT (pf_msg_parse (buf, len - 8, 1, &msg), ==, -EPROTO);
  for (i = 0; i < 8; i++) {
    const char *why[] = { "segment id 0", "power of two", "power of two",
      "granularity", "multiple of the granularity", "handle type", "flags",
      "UUID"
    };

    bad = d;
    switch (i) {
      case 0:
        bad.segment_id = 0;
        break;
      case 1:
        bad.granularity = 3 << 20;
        break;
      case 2:
        bad.granularity = 0;
        break;
      case 3:
        bad.granularity = (uint64_t) 1 << 31;
        bad.size = (uint64_t) 1 << 32;
        break;
      case 4:
        bad.size = 3 << 20;
        break;
      case 5:
        bad.handle_type = 2;
        break;
      case 6:
        bad.flags = 1;
        break;
      case 7:
        memset (bad.device_uuid, 0, 16);
        break;
    }
    CHECK_INT (pf_msg_write_device_segment_add (buf, &bad), ==, 0);
    CHECK_MSG (strstr (pf_msg_error (), why[i]) != NULL, "%u: %s", i,
        pf_msg_error ());
    len = pf_msg_write_device_segment_add_unchecked (buf, &bad);
    CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);
    CHECK_MSG (strstr (pf_msg_error (), why[i]) != NULL, "%u: %s", i,
        pf_msg_error ());
  }
  bad = d;
  bad.size = 0;
  CHECK_INT (pf_msg_write_device_segment_add (buf, &bad), ==, 0);
  bad.size = (uint64_t) 1 << 41;
  CHECK_INT (pf_msg_write_device_segment_add (buf, &bad), ==, 0);
}

static void
test_caps (void)
{
  char big[PF_MAX_CAPS_LEN + 2];
  size_t len;

  memset (big, 'a', sizeof (big));
  big[PF_MAX_CAPS_LEN] = '\0';
  len = pf_msg_write_caps (buf, 1, big);
  CHECK_INT (len, ==, PF_MAX_MSG_SIZE);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (strlen (msg.u.caps.text), ==, PF_MAX_CAPS_LEN);
  /* Oversized caps: the encoder refuses, the parser too. */
  big[PF_MAX_CAPS_LEN] = 'a';
  big[PF_MAX_CAPS_LEN + 1] = '\0';
  CHECK_INT (pf_msg_write_caps (buf, 1, big), ==, 0);
  len = pf_msg_write_caps (buf, 1, "abc");
  put32 (20, PF_MAX_CAPS_LEN + 1);
  put32 (4, 24 + PF_MAX_CAPS_LEN + 1);
  CHECK_INT (pf_msg_parse (buf, 24 + PF_MAX_CAPS_LEN + 1, 0, &msg), ==,
      -EPROTO);
  /* Length field lies, both ways. */
  len = pf_msg_write_caps (buf, 1, "abcdef");
  put32 (20, 5);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  put32 (20, 7);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  put32 (20, 0xffffffff);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  /* NUL inside, empty. */
  len = pf_msg_write_caps (buf, 1, "abcdef");
  buf[24 + 3] = '\0';
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  CHECK (strstr (pf_msg_error (), "NUL") != NULL);
  len = pf_msg_write_caps (buf, 1, "");
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
  /* Truncated below the fixed part. */
  len = pf_msg_write_caps (buf, 1, "abc");
  put32 (4, 20);
  CHECK_INT (pf_msg_parse (buf, 20, 0, &msg), ==, -EPROTO);
}

static void
m_chunks0 (struct pf_msg_frame *f)
{
  f->n_chunks = 0;
}

static void
m_chunks5 (struct pf_msg_frame *f)
{
  f->n_chunks = 5;
}

static void
m_seg0 (struct pf_msg_frame *f)
{
  f->chunks[1].segment_id = 0;
}

static void
m_size0 (struct pf_msg_frame *f)
{
  f->chunks[0].size = 0;
}

static void
m_overflow (struct pf_msg_frame *f)
{
  f->chunks[0].offset = UINT64_MAX - 10;
  f->chunks[0].size = 11;
}

static void
m_total_overflow (struct pf_msg_frame *f)
{
  f->chunks[0].size = UINT64_MAX / 2 + 1;
  f->chunks[1].size = UINT64_MAX / 2 + 1;
}

static void
m_unused_chunk (struct pf_msg_frame *f)
{
  f->chunks[3].offset = 1;
}

static void
m_planes5 (struct pf_msg_frame *f)
{
  f->n_planes = 5;
}

static void
m_planes0 (struct pf_msg_frame *f)
{
  f->n_planes = 0;
}

static void
m_plane_out (struct pf_msg_frame *f)
{
  f->plane_offset[1] = 1500;
}

static void
m_unused_plane (struct pf_msg_frame *f)
{
  f->plane_stride[3] = 4;
}

static void
m_meta_flags (struct pf_msg_frame *f)
{
  f->meta_flags |= 2;
}

static void
m_no_meta (struct pf_msg_frame *f)
{
  f->meta_flags = 0;
}

static void
m_reserved (struct pf_msg_frame *f)
{
  f->reserved = 1;
}

static void
m_stride_min (struct pf_msg_frame *f)
{
  f->plane_stride[0] = INT32_MIN;
}

static void
m_none (struct pf_msg_frame *f)
{
}

static void
m_last_plane (struct pf_msg_frame *f)
{
  f->plane_offset[1] = 1499;
}

static void
test_frame (void)
{
  size_t len;
  struct pf_msg_frame f;

  CHECK_INT (parse_frame_variant (m_none), ==, 0);
  CHECK_INT (parse_frame_variant (m_last_plane), ==, 0);
  CHECK_INT (parse_frame_variant (m_chunks0), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_chunks5), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_seg0), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_size0), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_overflow), ==, -EPROTO);
  CHECK (strstr (pf_msg_error (), "overflow") != NULL);
  CHECK_INT (parse_frame_variant (m_total_overflow), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_unused_chunk), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_planes5), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_planes0), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_plane_out), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_unused_plane), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_meta_flags), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_no_meta), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_reserved), ==, -EPROTO);
  CHECK_INT (parse_frame_variant (m_stride_min), ==, -EPROTO);

  /* Every truncation of a valid frame is rejected, none read past len
   * (valgrind/ASan runs of this suite would see it). */
  fill_frame (&f);
  len = pf_msg_write_frame (buf, &f);
  for (size_t l = 0; l < len; l++)
    CHECK_INT (pf_msg_parse (buf, l, 0, &msg), ==, -EPROTO);
  /* And one byte more. */
  put32 (4, 257);
  CHECK_INT (pf_msg_parse (buf, 257, 0, &msg), ==, -EPROTO);
}

static void
test_release_any_seq (void)
{
  size_t len = pf_msg_write_release (buf, UINT64_MAX);

  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK (msg.u.release.seq == UINT64_MAX);
  put64 (16, 0);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
}

/* The hex dumps of docs/protocol.md's worked example, in order, parsed out
 * of the document: one per call, into @out; returns its length, 0 when there
 * are no more. A dump is a run of lines "OOOO: xx xx ..." in a code block. */
static size_t
doc_next_dump (FILE * doc, uint8_t * out, size_t cap)
{
  char line[256];
  size_t n = 0;

  while (fgets (line, sizeof (line), doc) != NULL) {
    unsigned int off, byte;
    char *p;
    int used;

    if (sscanf (line, "%4x:%n", &off, &used) != 1 || line[4] != ':') {
      if (n > 0)
        return n;
      continue;
    }
    CHECK_INT (off, ==, n);
    for (p = line + used; sscanf (p, " %2x%n", &byte, &used) == 1
        && p[0] == ' ' && p[1] != ' '; p += used) {
      CHECK (n < cap);
      out[n++] = (uint8_t) byte;
    }
  }
  return n;
}

/* The worked example of docs/protocol.md section 11 is what the encoders
 * write, byte for byte, and parses back. */
static void
test_doc_example (void)
{
  const char *src = getenv ("PINNEDFLOW_SOURCE_ROOT");
  uint8_t want[PF_MAX_MSG_SIZE];
  char path[1024];
  struct pf_msg_frame f;
  pf_stream_info st;
  FILE *doc;
  size_t n, len;
  int i;

  if (src == NULL)
    t_skip ("PINNEDFLOW_SOURCE_ROOT not set (run through meson test)");
  snprintf (path, sizeof (path), "%s/docs/protocol.md", src);
  doc = fopen (path, "re");
  CHECK (doc != NULL);
  memset (&f, 0, sizeof (f));
  f.seq = 1;
  f.caps_seq = 1;
  f.n_chunks = 1;
  f.chunks[0].segment_id = 3;
  f.chunks[0].offset = 0x1000;
  f.chunks[0].size = 1920 * 1080 * 4;
  f.pts = 0;
  f.dts = PF_TIME_NONE;
  f.duration = 33333333;
  f.offset = f.offset_end = UINT64_MAX;
  f.clock_pts = UINT64_C (10000000000);
  f.send_time = UINT64_C (10000040000);
  f.meta_flags = PF_FRAME_HAS_VIDEO_META;
  f.width = 1920;
  f.height = 1080;
  f.n_planes = 1;
  f.plane_stride[0] = 7680;
  memset (&st, 0, sizeof (st));
  st.flags = PF_STREAM_HAS_SEGMENT;
  st.delivery = PF_DELIVERY_EVERY_FRAME;
  st.segment.format = 3;
  st.segment.rate = 1.0;
  st.segment.applied_rate = 1.0;
  st.segment.stop = PF_TIME_NONE;
  st.segment.duration = PF_TIME_NONE;
  for (i = 0; i < 8; i++) {
    n = doc_next_dump (doc, want, sizeof (want));
    switch (i) {
      case 5:
        len = pf_msg_write_hello_full (buf, PF_PROTOCOL_VERSION,
            PF_ROLE_CONSUMER, 0, PF_DELIVERY_EVERY_FRAME, 0);
        break;
      case 6:
        len = pf_msg_write_stream (buf, &st);
        break;
      case 7:
        len = pf_msg_write_refuse (buf, PF_REFUSE_TOO_MANY_CONSUMERS, 4);
        break;
      case 0:
        len = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 8,
            UINT64_C (0x0123456789abcdef));
        break;
      case 1:
        len = pf_msg_write_segment_add (buf, 3, 8298496);
        break;
      case 2:
        len = pf_msg_write_caps (buf, 1, "video/x-raw");
        break;
      case 3:
        len = pf_msg_write_frame (buf, &f);
        break;
      default:                 /* 4 */
        len = pf_msg_write_release (buf, 1);
        break;
    }
    if (n != len || memcmp (buf, want, len) != 0)
      fprintf (stderr, "dump %d of protocol.md differs from the encoder "
          "(%zu vs %zu bytes)\n", i, n, len);
    CHECK_INT (n, ==, len);
    CHECK (memcmp (buf, want, len) == 0);
    CHECK_INT (pf_msg_parse (want, n, i == 1 ? 1 : 0, &msg), ==, 0);
  }
  CHECK_INT (doc_next_dump (doc, want, sizeof (want)), ==, 0);
  fclose (doc);
}

static int
parse_stream_bits (const pf_stream_info * info, size_t off, uint64_t v,
    int width)
{
  size_t len = pf_msg_write_stream (buf, info);

  if (width == 8)
    put64 (off, v);
  else if (width == 4)
    put32 (off, (uint32_t) v);
  return pf_msg_parse (buf, len, 0, &msg);
}

/* STREAM: liveness, the delivery in force, the segment with its rates as
 * IEEE-754 doubles, every field exact both ways; what a receiver must
 * reject. */
static void
test_stream (void)
{
  const double nan = __builtin_nan (""), inf = __builtin_inf ();
  pf_stream_info in, out;
  size_t len;

  memset (&in, 0, sizeof (in));
  in.flags = PF_STREAM_HAS_SEGMENT;
  in.delivery = PF_DELIVERY_EVERY_FRAME;
  in.segment.format = 3;
  in.segment.flags = 0x1;
  in.segment.rate = -1.5;
  in.segment.applied_rate = 0.25;
  in.segment.base = 11;
  in.segment.offset = 12;
  in.segment.start = 13;
  in.segment.stop = PF_TIME_NONE;
  in.segment.time = 15;
  in.segment.position = 16;
  in.segment.duration = 17;
  len = pf_msg_write_stream (buf, &in);
  CHECK_INT (len, ==, 104);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.type, ==, PF_MSG_STREAM);
  pf_msg_stream_to_info (&msg.u.stream, &out);
  CHECK (memcmp (&in, &out, sizeof (in)) == 0);
  CHECK_INT (pf_msg_parse (buf, len, 1, &msg), ==, -EPROTO);    /* no fds */
  CHECK_INT (pf_msg_parse (buf, len - 8, 0, &msg), ==, -EPROTO);

  /* live, demoted, no segment: the segment fields are all zero */
  memset (&in, 0, sizeof (in));
  in.flags = PF_STREAM_LIVE | PF_STREAM_DEMOTED;
  in.delivery = PF_DELIVERY_NEWEST_FRAME;
  len = pf_msg_write_stream (buf, &in);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  pf_msg_stream_to_info (&msg.u.stream, &out);
  CHECK (memcmp (&in, &out, sizeof (in)) == 0);
  CHECK_INT (parse_stream_bits (&in, 96, 1, 8), ==, -EPROTO);
  CHECK (strstr (pf_msg_error (), "without a segment") != NULL);
  CHECK_INT (parse_stream_bits (&in, 16, 1u << 3, 4), ==, -EPROTO);
  CHECK_INT (parse_stream_bits (&in, 20, 0, 4), ==, -EPROTO);
  CHECK_INT (parse_stream_bits (&in, 20, 3, 4), ==, -EPROTO);
  /* demoted means newest frame */
  CHECK_INT (parse_stream_bits (&in, 20, PF_DELIVERY_EVERY_FRAME, 4), ==,
      -EPROTO);

  /* with a segment: a format, finite non-zero rates */
  in.flags = PF_STREAM_HAS_SEGMENT;
  in.segment.format = 3;
  in.segment.rate = 1.0;
  in.segment.applied_rate = 1.0;
  CHECK_INT (parse_stream_bits (&in, 0, 0, 0), ==, 0);
  CHECK_INT (parse_stream_bits (&in, 24, 0, 4), ==, -EPROTO);
  in.segment.rate = 0.0;
  CHECK_INT (parse_stream_bits (&in, 0, 0, 0), ==, -EPROTO);
  in.segment.rate = nan;
  CHECK_INT (parse_stream_bits (&in, 0, 0, 0), ==, -EPROTO);
  in.segment.rate = 1.0;
  in.segment.applied_rate = -inf;
  CHECK_INT (parse_stream_bits (&in, 0, 0, 0), ==, -EPROTO);
}

/* REFUSE: the producer's answer past max_clients, or its reason for
 * disconnecting a consumer that fell behind; other reasons refused. */
static void
test_refuse (void)
{
  size_t len = pf_msg_write_refuse (buf, PF_REFUSE_TOO_MANY_CONSUMERS, 3);

  CHECK_INT (len, ==, 24);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.type, ==, PF_MSG_REFUSE);
  CHECK_INT (msg.u.refuse.reason, ==, PF_REFUSE_TOO_MANY_CONSUMERS);
  CHECK_INT (msg.u.refuse.limit, ==, 3);
  /* reason 2 (issue 25): the consumer fell behind, sent mid-stream */
  put32 (16, PF_REFUSE_FELL_BEHIND);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, 0);
  CHECK_INT (msg.u.refuse.reason, ==, PF_REFUSE_FELL_BEHIND);
  put32 (16, 3);
  CHECK_INT (pf_msg_parse (buf, len, 0, &msg), ==, -EPROTO);
}

/* FRAME_RING (issue 13): 3 fds, the entry count a power of two, the size
 * and release offset those of the entry count. */
static void
test_frame_ring (void)
{
  size_t len = pf_msg_write_frame_ring (buf, 8);

  CHECK_INT (len, ==, 40);
  CHECK_INT (pf_msg_parse (buf, len, 3, &msg), ==, 0);
  CHECK_INT (msg.type, ==, PF_MSG_FRAME_RING);
  CHECK_INT (msg.u.frame_ring.n_entries, ==, 8);
  CHECK_INT (msg.u.frame_ring.entry_size, ==, 256);
  /* 64 + 8 x 256 = 2112 -> 4096; 64 + 8 x 8 = 128 -> 4096 */
  CHECK_INT (msg.u.frame_ring.release_offset, ==, 4096);
  CHECK_INT (msg.u.frame_ring.size, ==, 8192);
  len = pf_msg_write_frame_ring (buf, 4096);
  CHECK_INT (pf_msg_parse (buf, len, 3, &msg), ==, 0);
  CHECK_INT (msg.u.frame_ring.release_offset, ==, 64 + 4096 * 256 + 4032);
  /* fds: exactly 3 */
  len = pf_msg_write_frame_ring (buf, 8);
  CHECK_INT (pf_msg_parse (buf, len, 2, &msg), ==, -EPROTO);
  put32 (8, 2);
  CHECK_INT (pf_msg_parse (buf, len, 2, &msg), ==, -EPROTO);
  /* entries: a power of two, 1..4096 */
  len = pf_msg_write_frame_ring (buf, 8);
  put32 (16, 6);
  CHECK_INT (pf_msg_parse (buf, len, 3, &msg), ==, -EPROTO);
  put32 (16, 0);
  CHECK_INT (pf_msg_parse (buf, len, 3, &msg), ==, -EPROTO);
  len = pf_msg_write_frame_ring (buf, 8192);
  CHECK_INT (pf_msg_parse (buf, len, 3, &msg), ==, -EPROTO);
  /* entry size, size, release offset */
  len = pf_msg_write_frame_ring (buf, 8);
  put32 (20, 128);
  CHECK_INT (pf_msg_parse (buf, len, 3, &msg), ==, -EPROTO);
  len = pf_msg_write_frame_ring (buf, 8);
  put64 (24, 4096);
  CHECK_INT (pf_msg_parse (buf, len, 3, &msg), ==, -EPROTO);
  len = pf_msg_write_frame_ring (buf, 8);
  put64 (32, 2112);
  CHECK_INT (pf_msg_parse (buf, len, 3, &msg), ==, -EPROTO);
}

/* The FRAME's pair (pf_msg_frame_encode () / pf_msg_frame_decode ()): a
 * publisher's frame goes out byte for byte as pf_msg_write_frame () writes
 * those fields and comes back as the same frame; what a receiver refuses
 * is refused before it is sent, with the receiver's words; the decoder
 * hands anything not a FRAME back to pf_msg_parse (). */
static void
test_frame_codec (void)
{
  pf_producer_frame pf;
  pf_consumer_frame cf;
  struct pf_msg_frame f, m;
  uint8_t wire[256];

  fill_frame (&f);
  memset (&pf, 0, sizeof (pf));
  pf.n_chunks = f.n_chunks;
  memcpy (pf.chunks, f.chunks, sizeof (pf.chunks));
  pf.pts = f.pts;
  pf.dts = f.dts;
  pf.duration = f.duration;
  pf.offset = f.offset;
  pf.offset_end = f.offset_end;
  pf.clock_pts = f.clock_pts;
  pf.buffer_flags = f.buffer_flags;
  pf.meta_flags = f.meta_flags;
  pf.width = f.width;
  pf.height = f.height;
  pf.n_planes = f.n_planes;
  memcpy (pf.plane_offset, f.plane_offset, sizeof (pf.plane_offset));
  memcpy (pf.plane_stride, f.plane_stride, sizeof (pf.plane_stride));
  /* entries past n_chunks and n_planes are not read */
  pf.chunks[3].size = 77;
  pf.plane_stride[3] = 5;

  CHECK_INT (pf_msg_frame_encode (&m, &pf, f.seq, f.caps_seq, f.send_time),
      ==, 0);
  CHECK_INT (pf_msg_write_frame (wire, &f), ==, 256);
  CHECK (memcmp (&m, wire, sizeof (wire)) == 0);
  CHECK_INT (pf_msg_parse (&m, sizeof (m), 0, &msg), ==, 0);

  memset (&cf, 0xa5, sizeof (cf));
  CHECK_INT (pf_msg_frame_decode (&m, sizeof (m), 0, &cf), ==, 0);
  CHECK (cf.seq == 7 && cf.caps_seq == 2 && cf.n_chunks == 2);
  CHECK (cf.chunks[1].segment_id == 12 && cf.chunks[1].size == 500);
  CHECK (cf.chunks[3].size == 0 && cf.plane_stride[3] == 0);
  CHECK (cf.dts == PF_TIME_NONE && cf.send_time == 8);
  CHECK (cf.plane_offset[1] == 1000 && cf.plane_stride[1] == -32);
  /* unaligned: the same frame */
  memcpy (buf + 1, wire, sizeof (wire));
  memset (&cf, 0, sizeof (cf));
  CHECK_INT (pf_msg_frame_decode (buf + 1, sizeof (wire), 0, &cf), ==, 0);
  CHECK (cf.seq == 7 && cf.plane_stride[1] == -32);

  /* refused as a receiver would, in its words */
  pf.chunks[1].size = 0;
  CHECK_INT (pf_msg_frame_encode (&m, &pf, 9, 2, 1), ==, -EINVAL);
  CHECK (strstr (pf_msg_error (), "FRAME 9: chunk 1 is empty") != NULL);
  pf.chunks[1].size = 500;
  pf.n_chunks = 5;
  CHECK_INT (pf_msg_frame_encode (&m, &pf, 9, 2, 1), ==, -EINVAL);
  CHECK (strstr (pf_msg_error (), "5 chunks") != NULL);
  pf.n_chunks = 2;
  pf.meta_flags = 0;
  CHECK_INT (pf_msg_frame_encode (&m, &pf, 9, 2, 1), ==, -EINVAL);
  CHECK (strstr (pf_msg_error (), "without video meta") != NULL);
  pf.meta_flags = PF_FRAME_HAS_VIDEO_META;
  pf.plane_offset[1] = 1500;
  CHECK_INT (pf_msg_frame_encode (&m, &pf, 9, 2, 1), ==, -EINVAL);
  CHECK (strstr (pf_msg_error (), "outside the frame") != NULL);
  pf.plane_offset[1] = 1000;
  CHECK_INT (pf_msg_frame_encode (&m, &pf, 9, 2, 1), ==, 0);
  CHECK_INT (pf_msg_error ()[0], ==, '\0');

  /* the decoder: the parser's rules, header included */
  f.chunks[0].segment_id = 0;
  pf_msg_write_frame (wire, &f);
  CHECK_INT (pf_msg_frame_decode (wire, sizeof (wire), 0, &cf), ==, -EPROTO);
  CHECK (strstr (pf_msg_error (), "segment id 0") != NULL);
  fill_frame (&f);
  pf_msg_write_frame (wire, &f);
  CHECK_INT (pf_msg_frame_decode (wire, sizeof (wire), 1, &cf), ==, -EPROTO);
  CHECK_INT (pf_msg_frame_decode (wire, sizeof (wire) - 8, 0, &cf), ==,
      -EPROTO);
  CHECK_INT (pf_msg_write_eos (wire), ==, 16);
  CHECK_INT (pf_msg_frame_decode (wire, 16, 0, &cf), ==, -ENOMSG);
  CHECK_INT (pf_msg_frame_decode (wire, 3, 0, &cf), ==, -ENOMSG);
}

static const t_case cases[] = {
  {"roundtrip", test_roundtrip},
  {"header", test_header},
  {"fds", test_fds},
  {"hello", test_hello},
  {"segment", test_segment},
  {"device-segment", test_device_segment},
  {"caps", test_caps},
  {"frame", test_frame},
  {"frame-codec", test_frame_codec},
  {"release", test_release_any_seq},
  {"stream", test_stream},
  {"refuse", test_refuse},
  {"frame-ring", test_frame_ring},
  {"doc-example", test_doc_example},
  {NULL, NULL}
};

int
main (int argc, char **argv)
{
  return t_main (argc, argv, cases);
}
