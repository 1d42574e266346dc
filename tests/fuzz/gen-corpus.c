/* pinnedflow: writes the seed corpora of the fuzz targets
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: gen-corpus DIR  (writes DIR/parse, DIR/consumer, DIR/producer)
 * The committed tests/fuzz/corpus/ was made with it; re-run after protocol
 * changes.
 */
#include <pinnedflow/pf-protocol-private.h>

#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *outdir;
static uint8_t buf[PF_MAX_MSG_SIZE + 64];

static void
write_file (const char *sub, const char *name, const void *data, size_t len)
{
  char path[1024];
  FILE *f;

  snprintf (path, sizeof (path), "%s/%s", outdir, sub);
  if (mkdir (path, 0755) < 0 && errno != EEXIST) {
    perror (path);
    exit (1);
  }
  snprintf (path, sizeof (path), "%s/%s/%s", outdir, sub, name);
  f = fopen (path, "wb");
  if (f == NULL || fwrite (data, 1, len, f) != len || fclose (f) != 0) {
    perror (path);
    exit (1);
  }
}

static void
put32 (uint8_t * b, size_t off, uint32_t v)
{
  v = htole32 (v);
  memcpy (b + off, &v, 4);
}

static void
frame_init (struct pf_msg_frame *f, uint64_t seq, uint32_t caps_seq,
    uint64_t seg, uint64_t off, uint64_t size)
{
  memset (f, 0, sizeof (*f));
  f->seq = seq;
  f->caps_seq = caps_seq;
  f->n_chunks = 1;
  f->chunks[0].segment_id = seg;
  f->chunks[0].offset = off;
  f->chunks[0].size = size;
  f->pts = seq * 33333333;
  f->dts = PF_TIME_NONE;
  f->duration = 33333333;
  f->offset = f->offset_end = UINT64_MAX;
  f->clock_pts = PF_TIME_NONE;
  f->send_time = 1000 + seq;
}

static void
video_frame (struct pf_msg_frame *f)
{
  frame_init (f, 3, 1, 1, 0, 4096);
  f->n_chunks = 2;
  f->chunks[1].segment_id = 2;
  f->chunks[1].offset = 8192;
  f->chunks[1].size = 2048;
  f->meta_flags = PF_FRAME_HAS_VIDEO_META;
  f->width = 64;
  f->height = 64;
  f->n_planes = 2;
  f->plane_offset[1] = 4096;
  f->plane_stride[0] = 64;
  f->plane_stride[1] = 64;
}

static const pf_stream_info stream_every = {
  .flags = PF_STREAM_HAS_SEGMENT,.delivery = PF_DELIVERY_EVERY_FRAME,
  .segment = {.format = 3,.rate = 1.0,.applied_rate = 1.0,
      .stop = PF_TIME_NONE,.duration = PF_TIME_NONE}
};

static const pf_stream_info stream_newest = {
  .flags = PF_STREAM_LIVE,.delivery = PF_DELIVERY_NEWEST_FRAME
};

static void
parse_corpus (void)
{
  struct pf_msg_frame f;
  char caps[PF_MAX_CAPS_LEN + 1];
  size_t n;

  n = pf_msg_write_hello (buf, PF_ROLE_PRODUCER, 8, 0x1122334455667788ull);
  write_file ("parse", "hello-producer", buf, n);
  put32 (buf, 16, 0xdeadbeef);
  write_file ("parse", "hello-bad-magic", buf, n);
  n = pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0);
  write_file ("parse", "hello-consumer", buf, n);
  buf[20] = 1;
  write_file ("parse", "hello-version-1", buf, n);
  n = pf_msg_write_hello_full (buf, PF_PROTOCOL_VERSION, PF_ROLE_CONSUMER, 0,
      PF_DELIVERY_NEWEST_FRAME, 0);
  write_file ("parse", "hello-consumer-newest", buf, n);
  put32 (buf, 28, 3);
  write_file ("parse", "hello-consumer-bad-delivery", buf, n);
  n = pf_msg_write_stream (buf, &stream_every);
  write_file ("parse", "stream-segment", buf, n);
  memset (buf + 32, 0xff, 8);   /* rate NaN */
  write_file ("parse", "stream-bad-rate", buf, n);
  n = pf_msg_write_stream (buf, &stream_newest);
  write_file ("parse", "stream-live-newest", buf, n);
  n = pf_msg_write_refuse (buf, PF_REFUSE_TOO_MANY_CONSUMERS, 4);
  write_file ("parse", "refuse", buf, n);
  n = pf_msg_write_segment_add (buf, 1, 65536);
  write_file ("parse", "segment-add", buf, n);
  n = pf_msg_write_segment_remove (buf, 1);
  write_file ("parse", "segment-remove", buf, n);
  n = pf_msg_write_caps (buf, 1, "video/x-raw,format=RGBA,width=64,height=64");
  write_file ("parse", "caps", buf, n);
  buf[30] = '\0';
  write_file ("parse", "caps-nul", buf, n);
  memset (caps, 'c', PF_MAX_CAPS_LEN);
  caps[PF_MAX_CAPS_LEN] = '\0';
  n = pf_msg_write_caps (buf, 7, caps);
  write_file ("parse", "caps-max", buf, n);
  n = pf_msg_write_caps (buf, 1, "a/b");
  put32 (buf, 20, 4);
  write_file ("parse", "caps-length-lie", buf, n);
  frame_init (&f, 1, 1, 1, 0, 1000);
  n = pf_msg_write_frame (buf, &f);
  write_file ("parse", "frame", buf, n);
  write_file ("parse", "frame-truncated", buf, n - 1);
  write_file ("parse", "header-only", buf, 16);
  video_frame (&f);
  n = pf_msg_write_frame (buf, &f);
  write_file ("parse", "frame-video", buf, n);
  f.n_chunks = 5;
  n = pf_msg_write_frame (buf, &f);
  write_file ("parse", "frame-5-chunks", buf, n);
  frame_init (&f, 1, 1, 1, UINT64_MAX - 4, 8);
  n = pf_msg_write_frame (buf, &f);
  write_file ("parse", "frame-overflow", buf, n);
  {
    struct pf_msg_device_segment_add d = {.segment_id = 3,.size = 4 << 20,
      .granularity = 2 << 20,.handle_type = PF_DEVICE_HANDLE_POSIX_FD
    };

    memcpy (d.device_uuid, "pfemu-device-000", 16);

    n = pf_msg_write_device_segment_add (buf, &d);
    write_file ("parse", "device-segment-add", buf, n);
    put32 (buf, 32, 3 << 20);   /* granularity: no power of two */
    write_file ("parse", "device-segment-add-granularity", buf, n);
    put32 (buf, 32, 0);
    put32 (buf, 36, 1);         /* granularity 4 GiB: over the bound */
    write_file ("parse", "device-segment-add-granularity-huge", buf, n);
    d.size = 5 << 20;
    n = pf_msg_write_device_segment_add_unchecked (buf, &d);
    write_file ("parse", "device-segment-add-size", buf, n);
    d.size = 4 << 20;
    memset (d.device_uuid, 0, sizeof (d.device_uuid));
    n = pf_msg_write_device_segment_add_unchecked (buf, &d);
    write_file ("parse", "device-segment-add-zero-uuid", buf, n);
    n = pf_msg_write_hello_full (buf, PF_PROTOCOL_VERSION, PF_ROLE_CONSUMER,
        0, PF_HELLO_DEVICE_SEGMENTS | PF_HELLO_FRAME_RING, 0);
    write_file ("parse", "hello-consumer-device", buf, n);
    n = pf_msg_write_domain (buf, d.device_uuid);       /* all zero: refused */
    write_file ("parse", "domain-zero-uuid", buf, n);
    memcpy (d.device_uuid, "pfemu-device-000", 16);
    n = pf_msg_write_domain (buf, d.device_uuid);
    write_file ("parse", "domain", buf, n);
    put32 (buf, 16, 1);         /* flags: must be 0 */
    write_file ("parse", "domain-flags", buf, n);
  }
  n = pf_msg_write_eos (buf);
  write_file ("parse", "eos", buf, n);
  n = pf_msg_write_release (buf, 42);
  write_file ("parse", "release", buf, n);
  put32 (buf, 0, 99);
  write_file ("parse", "bad-type", buf, n);
}

/* Consumer records: [u16 length][u8 fd flags][bytes]. */
static uint8_t seq_buf[65536];
static size_t seq_len;

static void
rec (const void *data, size_t len, uint8_t flags)
{
  seq_buf[seq_len++] = len & 0xff;
  seq_buf[seq_len++] = (len >> 8) & 0xff;
  seq_buf[seq_len++] = flags;
  memcpy (seq_buf + seq_len, data, len);
  seq_len += len;
}

static void
rec_frame (const struct pf_msg_frame *f, uint8_t flags)
{
  rec (buf, pf_msg_write_frame (buf, f), flags);
}

static void
flush (const char *name)
{
  write_file ("consumer", name, seq_buf, seq_len);
  seq_len = 0;
}

static void
consumer_corpus (void)
{
  struct pf_msg_frame f;
  int i;

  /* A whole valid session. */
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  rec (buf, pf_msg_write_caps (buf, 1, "video/x-raw,format=GRAY8"), 0);
  for (i = 1; i <= 6; i++) {
    frame_init (&f, i, 1, 1, (uint64_t) (i % 4) * 16384, 16384);
    rec_frame (&f, 0);
  }
  rec (buf, pf_msg_write_segment_remove (buf, 1), 0);
  rec (buf, pf_msg_write_eos (buf), 0);
  flush ("session");

  /* Two segments, multi-chunk video frame, caps change. */
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  rec (buf, pf_msg_write_segment_add (buf, 2, 16384), 1);
  rec (buf, pf_msg_write_caps (buf, 1, "video/x-raw"), 0);
  video_frame (&f);
  rec_frame (&f, 0);
  rec (buf, pf_msg_write_caps (buf, 2, "video/x-raw,width=8"), 0);
  frame_init (&f, 4, 2, 2, 0, 16384);
  rec_frame (&f, 0);
  flush ("video-two-segments");

  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 2);
  flush ("unsealed-memfd");
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 4);
  flush ("pipe-fd");
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 5);
  flush ("two-fds");
  rec (buf, pf_msg_write_segment_add (buf, 1, 131072), 1);
  flush ("size-lie");
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 0);
  flush ("no-fd");
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  flush ("duplicate-segment");
  frame_init (&f, 1, 0, 9, 0, 100);
  rec_frame (&f, 0);
  flush ("unknown-segment");
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  frame_init (&f, 1, 0, 1, 65000, 1000);
  rec_frame (&f, 0);
  flush ("chunk-outside");
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  frame_init (&f, 1, 0, 1, 0, 100);
  rec_frame (&f, 1);
  flush ("fd-on-frame");
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  frame_init (&f, 5, 0, 1, 0, 100);
  rec_frame (&f, 0);
  frame_init (&f, 5, 0, 1, 0, 100);
  rec_frame (&f, 0);
  flush ("seq-repeat");
  rec (buf, pf_msg_write_release (buf, 1), 0);
  flush ("release-from-producer");

  /* Device segments (the fuzzed consumer imports none: refused, their
   * frames released unseen) beside a host segment. */
  {
    struct pf_msg_device_segment_add d = {.segment_id = 7,.size = 65536,
      .granularity = 4096,.handle_type = PF_DEVICE_HANDLE_POSIX_FD
    };

    memcpy (d.device_uuid, "pfemu-device-000", 16);

    rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
    rec (buf, pf_msg_write_device_segment_add (buf, &d), 1);
    for (i = 1; i <= 4; i++) {
      frame_init (&f, i, 0, i % 2 ? 7 : 1, (uint64_t) i * 4096, 4096);
      rec_frame (&f, 0);
    }
    rec (buf, pf_msg_write_segment_remove (buf, 7), 0);
    rec (buf, pf_msg_write_eos (buf), 0);
    flush ("device-session");
    rec (buf, pf_msg_write_device_segment_add (buf, &d), 0);
    flush ("device-no-fd");
    rec (buf, pf_msg_write_device_segment_add (buf, &d), 4);
    flush ("device-pipe");
    rec (buf, pf_msg_write_device_segment_add (buf, &d), 1);
    frame_init (&f, 1, 0, 7, 65000, 1000);
    rec_frame (&f, 0);
    flush ("device-chunk-outside");
  }

  /* Version 2: a non-live stream with its segment, every frame. */
  rec (buf, pf_msg_write_stream (buf, &stream_every), 0);
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  for (i = 1; i <= 3; i++) {
    frame_init (&f, i, 0, 1, (uint64_t) i * 4096, 4096);
    rec_frame (&f, 0);
  }
  rec (buf, pf_msg_write_eos (buf), 0);
  flush ("stream-every");

  /* Newest frame: frames queue up (flag 32: no drain), stale ones are
   * released for the newest; a segment message between them, a CAPS
   * stopping the skip. */
  rec (buf, pf_msg_write_stream (buf, &stream_newest), 0);
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1 | 32);
  for (i = 1; i <= 3; i++) {
    frame_init (&f, i, 0, 1, (uint64_t) i * 4096, 4096);
    rec_frame (&f, 32);
  }
  rec (buf, pf_msg_write_segment_add (buf, 2, 65536), 1 | 32);
  frame_init (&f, 4, 0, 2, 0, 4096);
  rec_frame (&f, 32);
  rec (buf, pf_msg_write_caps (buf, 1, "video/x-raw"), 32);
  frame_init (&f, 5, 1, 2, 4096, 4096);
  rec_frame (&f, 0);
  flush ("stream-newest-stale");

  /* ... and a violation queued behind the frames */
  rec (buf, pf_msg_write_stream (buf, &stream_newest), 0);
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1 | 32);
  frame_init (&f, 1, 0, 1, 0, 4096);
  rec_frame (&f, 32);
  frame_init (&f, 2, 0, 9, 0, 4096);
  rec_frame (&f, 0);
  flush ("stream-newest-violation");

  /* A demotion in the middle; a REFUSE after the handshake. */
  rec (buf, pf_msg_write_stream (buf, &stream_every), 0);
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  frame_init (&f, 1, 0, 1, 0, 4096);
  rec_frame (&f, 0);
  {
    pf_stream_info d = stream_newest;

    d.flags = PF_STREAM_DEMOTED;
    rec (buf, pf_msg_write_stream (buf, &d), 0);
  }
  frame_init (&f, 2, 0, 1, 4096, 4096);
  rec_frame (&f, 0);
  rec (buf, pf_msg_write_refuse (buf, PF_REFUSE_TOO_MANY_CONSUMERS, 1), 0);
  flush ("stream-demoted-refuse");

  /* Frames kept (flag 8) past the limit, a segment removed under them. */
  rec (buf, pf_msg_write_segment_add (buf, 1, 65536), 1);
  for (i = 1; i <= 5; i++) {
    frame_init (&f, i, 0, 1, (uint64_t) i * 4096, 4096);
    rec_frame (&f, 8 | (i == 2 ? 16 : 0));
  }
  rec (buf, pf_msg_write_segment_remove (buf, 1), 8);
  flush ("held-over-limit");
}

/* Producer side: what a consumer sends after its HELLO; frames 1..4 held. */
static void
producer_corpus (void)
{
  uint64_t s;

  for (s = 1; s <= 4; s++)
    rec (buf, pf_msg_write_release (buf, s), 0);
  write_file ("producer", "release-all", seq_buf, seq_len);
  seq_len = 0;
  rec (buf, pf_msg_write_release (buf, 2), 0);
  rec (buf, pf_msg_write_release (buf, 2), 0);
  write_file ("producer", "release-twice", seq_buf, seq_len);
  seq_len = 0;
  rec (buf, pf_msg_write_release (buf, 9), 0);
  write_file ("producer", "release-unknown", seq_buf, seq_len);
  seq_len = 0;
  rec (buf, pf_msg_write_release (buf, 1), 1);
  write_file ("producer", "release-with-fd", seq_buf, seq_len);
  seq_len = 0;
  rec (buf, pf_msg_write_release (buf, 1), 0);
  rec (buf, pf_msg_write_hello (buf, PF_ROLE_CONSUMER, 0, 0), 0);
  write_file ("producer", "hello-twice", seq_buf, seq_len);
  seq_len = 0;
  rec (buf, pf_msg_write_eos (buf), 0);
  write_file ("producer", "eos-from-consumer", seq_buf, seq_len);
  seq_len = 0;
  rec (buf, pf_msg_write_release (buf, 1), 0);
  rec (buf, pf_msg_write_stream (buf, &stream_every), 0);
  write_file ("producer", "stream-from-consumer", seq_buf, seq_len);
  seq_len = 0;
  rec (buf, pf_msg_write_release (buf, 3), 0);
  rec (buf, pf_msg_write_release (buf, 4), 0);
  rec (buf, pf_msg_write_refuse (buf, PF_REFUSE_TOO_MANY_CONSUMERS, 1), 0);
  write_file ("producer", "refuse-from-consumer", seq_buf, seq_len);
  seq_len = 0;
  /* a DOMAIN from a consumer that did not ask for device segments */
  rec (buf, pf_msg_write_release (buf, 1), 0);
  rec (buf, pf_msg_write_domain (buf, (const uint8_t *) "pfemu-device-000"), 0);
  write_file ("producer", "domain-without-device-bit", seq_buf, seq_len);
  seq_len = 0;
}

int
main (int argc, char **argv)
{
  if (argc != 2) {
    fprintf (stderr, "usage: %s OUTDIR\n", argv[0]);
    return 2;
  }
  outdir = argv[1];
  mkdir (outdir, 0755);
  parse_corpus ();
  consumer_corpus ();
  producer_corpus ();
  return 0;
}
