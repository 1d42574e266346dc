/* pinnedflow: dataflow-node API (loaned frames, simple consume), plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-node.h. Three parts: video layout / caps text helpers, the producer
 * (a slot pool on top of pf_producer) and the consumer (frames on top of
 * pf_consumer). Nothing of the wire protocol is handled here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-node.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ======================================================================== */
/* Video layout                                                              */
/* ======================================================================== */

enum layout_kind
{
  PACKED,                       /* one plane, bpp bytes per pixel */
  PLANAR_420,                   /* I420 / YV12 */
  SEMI_420,                     /* NV12 / NV21 */
  PLANAR_444,                   /* Y444 */
};

struct format_desc
{
  const char *name;
  enum layout_kind kind;
  uint32_t bpp;                 /* PACKED: bytes per pixel */
  int pair;                     /* PACKED: 4:2:2, width rounded up to 2 */
};

static const struct format_desc formats[] = {
  {"RGBA", PACKED, 4, 0}, {"BGRA", PACKED, 4, 0}, {"ARGB", PACKED, 4, 0},
  {"ABGR", PACKED, 4, 0}, {"RGBx", PACKED, 4, 0}, {"BGRx", PACKED, 4, 0},
  {"xRGB", PACKED, 4, 0}, {"xBGR", PACKED, 4, 0},
  {"RGB", PACKED, 3, 0}, {"BGR", PACKED, 3, 0},
  {"GRAY8", PACKED, 1, 0}, {"GRAY16_LE", PACKED, 2, 0},
  {"GRAY16_BE", PACKED, 2, 0},
  {"YUY2", PACKED, 2, 1}, {"UYVY", PACKED, 2, 1},
  {"I420", PLANAR_420, 0, 0}, {"YV12", PLANAR_420, 0, 0},
  {"NV12", SEMI_420, 0, 0}, {"NV21", SEMI_420, 0, 0},
  {"Y444", PLANAR_444, 0, 0},
};

static const struct format_desc *
find_format (const char *name)
{
  size_t i;

  if (name == NULL)
    return NULL;
  for (i = 0; i < sizeof (formats) / sizeof (formats[0]); i++)
    if (strcmp (formats[i].name, name) == 0)
      return &formats[i];
  return NULL;
}

/* Rounds @v up to @align (a power of two, or 1). */
static uint64_t
align_up (uint64_t v, uint64_t align)
{
  return (v + align - 1) & ~(align - 1);
}

int
pf_node_video_layout_compute (const char *format, uint32_t width,
    uint32_t height, uint32_t stride_align, pf_node_video_layout * layout)
{
  const struct format_desc *desc;
  uint64_t a, row[PF_MAX_PLANES] = { 0 }, rows[PF_MAX_PLANES] = { 0 };
  uint64_t stride, off = 0;
  uint32_t i, n, h2;

  if (layout == NULL || width == 0 || height == 0)
    return -EINVAL;
  if (stride_align != 0 && (stride_align & (stride_align - 1)) != 0)
    return -EINVAL;
  /* Keep every intermediate far below 64-bit overflow and every stride in
   * an int32. */
  if (width > (1u << 16) || height > (1u << 16))
    return -EOVERFLOW;
  desc = find_format (format);
  if (desc == NULL)
    return -ENOTSUP;

  memset (layout, 0, sizeof (*layout));
  layout->width = width;
  layout->height = height;
  h2 = (height + 1) / 2;
  switch (desc->kind) {
    case PACKED:
      n = 1;
      row[0] = (uint64_t) (desc->pair ? align_up (width, 2) : width) *
          desc->bpp;
      rows[0] = height;
      layout->pixel_stride = desc->bpp;
      break;
    case PLANAR_420:
      n = 3;
      row[0] = width;
      row[1] = row[2] = (width + 1) / 2;
      /* GStreamer reserves an even number of luma rows. */
      rows[0] = align_up (height, 2);
      rows[1] = rows[2] = h2;
      break;
    case SEMI_420:
      n = 2;
      row[0] = width;
      row[1] = align_up (width, 2);
      rows[0] = align_up (height, 2);
      rows[1] = h2;
      break;
    case PLANAR_444:
    default:
      n = 3;
      row[0] = row[1] = row[2] = width;
      rows[0] = rows[1] = rows[2] = height;
      break;
  }

  a = stride_align ? stride_align : 1;
  layout->n_planes = n;
  for (i = 0; i < n; i++) {
    stride = align_up (row[i], 4);
    /* NV12's chroma plane shares the luma stride in GStreamer's layout. */
    if (desc->kind == SEMI_420 && i == 1)
      stride = align_up (row[0], 4);
    stride = align_up (stride, a);
    off = align_up (off, a);
    layout->plane_offset[i] = off;
    layout->plane_stride[i] = (int32_t) stride;
    layout->plane_row_bytes[i] = (uint32_t) row[i];
    layout->plane_height[i] = (uint32_t) (i == 0 ? height : rows[i]);
    off += stride * rows[i];
  }
  layout->size = off;
  return 0;
}

/* ======================================================================== */
/* Caps text                                                                 */
/* ======================================================================== */

/* Copies the trimmed text [s, e) into @dst (at most @len - 1 bytes). */
static void
copy_trimmed (char *dst, size_t len, const char *s, const char *e)
{
  size_t n;

  while (s < e && isspace ((unsigned char) *s))
    s++;
  while (e > s && isspace ((unsigned char) e[-1]))
    e--;
  if (e - s >= 2 && *s == '"' && e[-1] == '"') {
    s++;
    e--;
  }
  n = (size_t) (e - s);
  if (n >= len)
    n = len - 1;
  memcpy (dst, s, n);
  dst[n] = '\0';
}

/* End of the field starting at @s: the next ',' or ';' outside quotes and
 * brackets, or the end of the string. */
static const char *
field_end (const char *s)
{
  int depth = 0, quoted = 0;

  for (; *s; s++) {
    if (quoted) {
      if (*s == '\\' && s[1])
        s++;
      else if (*s == '"')
        quoted = 0;
      continue;
    }
    if (*s == '"')
      quoted = 1;
    else if (*s == '{' || *s == '[' || *s == '<' || *s == '(')
      depth++;
    else if ((*s == '}' || *s == ']' || *s == '>' || *s == ')') && depth > 0)
      depth--;
    else if ((*s == ',' || *s == ';') && depth == 0)
      break;
  }
  return s;
}

static int
parse_u32 (const char *s, uint32_t * out)
{
  char *end;
  unsigned long v;

  errno = 0;
  v = strtoul (s, &end, 10);
  if (end == s || errno != 0 || v > UINT32_MAX || *s == '-')
    return -EINVAL;
  *out = (uint32_t) v;
  return 0;
}

int
pf_node_caps_parse (const char *caps, pf_node_caps_info * info)
{
  const char *s, *e, *eq, *v;
  char name[32], value[64];

  if (caps == NULL || info == NULL)
    return -EINVAL;
  memset (info, 0, sizeof (*info));
  info->fps_d = 1;

  /* Media type, possibly followed by "(memory:...)" features. */
  s = caps;
  e = s;
  while (*e && *e != ',' && *e != ';' && *e != '(')
    e++;
  copy_trimmed (info->media_type, sizeof (info->media_type), s, e);
  if (info->media_type[0] == '\0')
    return -EINVAL;
  if (*e == '(') {
    while (*e && *e != ')')
      e++;
    if (*e == ')')
      e++;
  }

  while (*e == ',') {
    s = e + 1;
    e = field_end (s);
    eq = memchr (s, '=', (size_t) (e - s));
    if (eq == NULL)
      continue;
    copy_trimmed (name, sizeof (name), s, eq);
    v = eq + 1;
    while (v < e && isspace ((unsigned char) *v))
      v++;
    if (v < e && *v == '(') {   /* "(int)", "(string)", ... */
      while (v < e && *v != ')')
        v++;
      if (v < e)
        v++;
    }
    copy_trimmed (value, sizeof (value), v, e);
    if (strcmp (name, "format") == 0) {
      copy_trimmed (info->format, sizeof (info->format), value,
          value + strlen (value));
    } else if (strcmp (name, "width") == 0) {
      if (parse_u32 (value, &info->width) < 0)
        info->width = 0;
    } else if (strcmp (name, "height") == 0) {
      if (parse_u32 (value, &info->height) < 0)
        info->height = 0;
    } else if (strcmp (name, "framerate") == 0) {
      int n, d;
      if (sscanf (value, "%d/%d", &n, &d) == 2 && d > 0 && n >= 0) {
        info->fps_n = n;
        info->fps_d = d;
      }
    }
  }
  return 0;
}

int
pf_node_video_caps (char *buf, size_t len, const char *format,
    uint32_t width, uint32_t height, int32_t fps_n, int32_t fps_d)
{
  int n;

  if (buf == NULL || format == NULL || fps_d <= 0 || fps_n < 0)
    return -EINVAL;
  n = snprintf (buf, len, "video/x-raw, format=(string)%s, width=(int)%u, "
      "height=(int)%u, framerate=(fraction)%d/%d", format, width, height,
      fps_n, fps_d);
  if (n < 0 || (size_t) n >= len)
    return -ENOSPC;
  return n;
}

const char *
pf_node_strerror (int err)
{
  const char *d;

  switch (-err) {
    case 0:
      return "success";
    case EAGAIN:
      return "no free slot in the pool (every frame is loaned or held)";
    case ETIMEDOUT:
      return "timed out";
    case EPIPE:
      return "the peer is gone (connection closed)";
    case EPROTO:
      return "protocol violation by the peer (see the error message)";
    case EPROTONOSUPPORT:
      return "the peer speaks another protocol version";
    case EMSGSIZE:
      return "a frame is larger than a slot, or caps text too long";
    case EADDRINUSE:
      return "another producer is live on that socket path";
    case ENOTSUP:
      return "unknown video format";
    case ENOENT:
      return "no such socket or frame";
    case EINVAL:
      return "invalid argument";
    default:
      break;
  }
  d = strerrordesc_np (-err);
  return d ? d : "unknown error";
}

/* ======================================================================== */
/* Producer                                                                  */
/* ======================================================================== */

enum slot_state
{
  SLOT_FREE = 0,
  SLOT_LOANED,
  SLOT_PUBLISHED,
};

struct pf_node_producer
{
  pf_producer *transport;
  pf_segment *seg;
  uint8_t *base;
  uint64_t slot_size;
  unsigned int n_slots;

  pthread_mutex_t lock;
  pthread_cond_t cond;          /* a slot came back */
  uint8_t *state;               /* enum slot_state per slot */
  uint64_t *loan_id;            /* per slot, while SLOT_LOANED */
  unsigned int n_free;
  unsigned int n_published;
  unsigned int cursor;          /* next slot to try: round robin */
  uint64_t next_loan_id;

  int have_video;
  pf_node_video_layout video;

  int have_anchor;              /* clock_pts = anchor + pts */
  uint64_t anchor;
};

/* Token handed to pf_producer_publish: the slot index + 1 (never NULL). */
static void *
slot_token (unsigned int slot)
{
  return (void *) (uintptr_t) (slot + 1);
}

static void
slot_return_locked (pf_node_producer * p, unsigned int slot)
{
  if (p->state[slot] == SLOT_PUBLISHED)
    p->n_published--;
  p->state[slot] = SLOT_FREE;
  p->loan_id[slot] = 0;
  p->n_free++;
  pthread_cond_broadcast (&p->cond);
}

static void
on_frame_released (void *user_data, void *token)
{
  pf_node_producer *p = user_data;
  uintptr_t t = (uintptr_t) token;

  if (t == 0 || t > p->n_slots)
    return;
  pthread_mutex_lock (&p->lock);
  if (p->state[t - 1] == SLOT_PUBLISHED)
    slot_return_locked (p, (unsigned int) (t - 1));
  pthread_mutex_unlock (&p->lock);
}

/* Client callbacks only wake waiters: the count itself is the transport's
 * (already up to date when a callback runs, which is after the fact). */
static void
on_client_change (void *user_data, const pf_client_info * info)
{
  pf_node_producer *p = user_data;

  pthread_mutex_lock (&p->lock);
  pthread_cond_broadcast (&p->cond);
  pthread_mutex_unlock (&p->lock);
}

int
pf_node_producer_new (const pf_node_producer_config * config,
    pf_node_producer ** out)
{
  pf_node_producer *p = NULL;
  pf_producer_config pc;
  pthread_condattr_t ca;
  unsigned int flags;
  uint64_t total;
  int res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (config == NULL || config->socket_path == NULL ||
      config->socket_path[0] == '\0' || config->slot_size == 0)
    return -EINVAL;

  p = calloc (1, sizeof (*p));
  if (p == NULL)
    return -ENOMEM;
  p->n_slots = config->n_slots ? config->n_slots : 4;
  if (p->n_slots > 4096) {
    res = -EINVAL;
    goto fail_alloc;
  }
  p->slot_size = align_up (config->slot_size, pf_page_size ());
  if (p->slot_size < config->slot_size ||
      p->slot_size > UINT64_MAX / p->n_slots) {
    res = -EOVERFLOW;
    goto fail_alloc;
  }
  total = p->slot_size * p->n_slots;

  p->state = calloc (p->n_slots, sizeof (*p->state));
  p->loan_id = calloc (p->n_slots, sizeof (*p->loan_id));
  if (p->state == NULL || p->loan_id == NULL) {
    res = -ENOMEM;
    goto fail_alloc;
  }
  p->n_free = p->n_slots;
  p->next_loan_id = 1;

  pthread_mutex_init (&p->lock, NULL);
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&p->cond, &ca);
  pthread_condattr_destroy (&ca);

  flags = PF_SEGMENT_FLAG_SEAL_WRITERS;
  if (!(config->flags & PF_NODE_PRODUCER_NO_LOCK))
    flags |= PF_SEGMENT_FLAG_LOCK;
  if (config->flags & PF_NODE_PRODUCER_HUGEPAGES)
    flags |= PF_SEGMENT_FLAG_HUGEPAGES;
  res = pf_segment_new ("pinnedflow-node-pool", total, flags, &p->seg);
  if (res < 0)
    goto fail_sync;
  p->base = pf_segment_get_base (p->seg);

  memset (&pc, 0, sizeof (pc));
  pc.socket_path = config->socket_path;
  pc.perms = config->perms ? config->perms : 0600;
  pc.max_client_frames = config->max_client_frames ?
      config->max_client_frames : p->n_slots;
  pc.callbacks.frame_released = on_frame_released;
  pc.callbacks.client_connected = on_client_change;
  pc.callbacks.client_disconnected = on_client_change;
  pc.callbacks.user_data = p;
  res = pf_producer_new (&pc, &p->transport);
  if (res < 0)
    goto fail_seg;

  *out = p;
  return 0;

fail_seg:
  pf_segment_unref (p->seg);
fail_sync:
  pthread_cond_destroy (&p->cond);
  pthread_mutex_destroy (&p->lock);
fail_alloc:
  free (p->state);
  free (p->loan_id);
  free (p);
  return res;
}

void
pf_node_producer_free (pf_node_producer * p)
{
  if (p == NULL)
    return;
  /* Runs frame_released for every frame still held, then stops the I/O
   * thread: no callback can arrive after this. */
  pf_producer_close (p->transport);
  pf_producer_unref (p->transport);
  pf_segment_unref (p->seg);
  pthread_cond_destroy (&p->cond);
  pthread_mutex_destroy (&p->lock);
  free (p->state);
  free (p->loan_id);
  free (p);
}

int
pf_node_producer_set_caps (pf_node_producer * p, const char *caps)
{
  if (p == NULL || caps == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  p->have_video = 0;
  pthread_mutex_unlock (&p->lock);
  return pf_producer_set_caps (p->transport, caps);
}

int
pf_node_producer_set_video (pf_node_producer * p, const char *format,
    uint32_t width, uint32_t height, int32_t fps_n, int32_t fps_d)
{
  pf_node_video_layout layout;
  char caps[256];
  int res;

  if (p == NULL)
    return -EINVAL;
  res = pf_node_video_layout_compute (format, width, height, 0, &layout);
  if (res < 0)
    return res;
  if (layout.size > p->slot_size)
    return -EMSGSIZE;
  res = pf_node_video_caps (caps, sizeof (caps), format, width, height,
      fps_n, fps_d);
  if (res < 0)
    return res;
  res = pf_producer_set_caps (p->transport, caps);
  if (res < 0)
    return res;
  pthread_mutex_lock (&p->lock);
  p->video = layout;
  p->have_video = 1;
  pthread_mutex_unlock (&p->lock);
  return 0;
}

static void
deadline_after (struct timespec *ts, int timeout_ms)
{
  clock_gettime (CLOCK_MONOTONIC, ts);
  ts->tv_sec += timeout_ms / 1000;
  ts->tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

/* Takes a free slot, waiting as asked. Called with the lock held. */
static int
take_slot_locked (pf_node_producer * p, int timeout_ms, unsigned int *slot)
{
  struct timespec deadline;
  unsigned int i, s;
  int r;

  if (timeout_ms > 0)
    deadline_after (&deadline, timeout_ms);
  while (p->n_free == 0) {
    if (timeout_ms == 0)
      return -EAGAIN;
    if (timeout_ms < 0) {
      pthread_cond_wait (&p->cond, &p->lock);
    } else {
      r = pthread_cond_timedwait (&p->cond, &p->lock, &deadline);
      if (r == ETIMEDOUT && p->n_free == 0)
        return -ETIMEDOUT;
    }
  }
  for (i = 0; i < p->n_slots; i++) {
    s = (p->cursor + i) % p->n_slots;
    if (p->state[s] == SLOT_FREE) {
      p->cursor = (s + 1) % p->n_slots;
      p->state[s] = SLOT_LOANED;
      p->loan_id[s] = p->next_loan_id++;
      p->n_free--;
      *slot = s;
      return 0;
    }
  }
  return -EIO;                  /* n_free out of sync: cannot happen */
}

static int
loan_common (pf_node_producer * p, int timeout_ms, int video,
    pf_node_loan * loan)
{
  unsigned int slot;
  int res;

  if (p == NULL || loan == NULL)
    return -EINVAL;
  memset (loan, 0, sizeof (*loan));
  pthread_mutex_lock (&p->lock);
  if (video && !p->have_video) {
    pthread_mutex_unlock (&p->lock);
    return -EINVAL;
  }
  res = take_slot_locked (p, timeout_ms, &slot);
  if (res == 0) {
    loan->slot = slot;
    loan->loan_id = p->loan_id[slot];
    loan->segment_offset = (uint64_t) slot *p->slot_size;
    loan->data = p->base + loan->segment_offset;
    loan->capacity = p->slot_size;
    loan->size = p->slot_size;
    if (video) {
      loan->has_video_meta = 1;
      loan->layout = p->video;
      loan->size = p->video.size;
    }
    loan->pts = loan->dts = loan->duration = PF_TIME_NONE;
    loan->clock_pts = PF_TIME_NONE;
  }
  pthread_mutex_unlock (&p->lock);
  return res;
}

int
pf_node_producer_loan (pf_node_producer * p, int timeout_ms,
    pf_node_loan * loan)
{
  return loan_common (p, timeout_ms, 0, loan);
}

int
pf_node_producer_loan_video (pf_node_producer * p, int timeout_ms,
    pf_node_loan * loan)
{
  return loan_common (p, timeout_ms, 1, loan);
}

/* Checks that @loan is a live loan of @p. Called with the lock held. */
static int
check_loan_locked (pf_node_producer * p, const pf_node_loan * loan)
{
  if (loan->slot >= p->n_slots || loan->loan_id == 0 ||
      p->state[loan->slot] != SLOT_LOANED ||
      p->loan_id[loan->slot] != loan->loan_id)
    return -EINVAL;
  return 0;
}

int
pf_node_producer_publish (pf_node_producer * p, pf_node_loan * loan)
{
  pf_frame frame;
  pf_segment *segs[1];
  uint64_t clock_pts;
  unsigned int i, slot;
  int res;

  if (p == NULL || loan == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  res = check_loan_locked (p, loan);
  if (res == 0 && (loan->size == 0 || loan->size > p->slot_size))
    res = -EINVAL;
  if (res == 0 && loan->has_video_meta &&
      (loan->layout.n_planes > PF_MAX_PLANES || loan->layout.size > loan->size))
    res = -EINVAL;
  if (res < 0) {
    /* A bad size still consumes a genuine loan, as documented. */
    if (check_loan_locked (p, loan) == 0)
      slot_return_locked (p, loan->slot);
    pthread_mutex_unlock (&p->lock);
    loan->loan_id = 0;
    return res;
  }
  slot = loan->slot;
  p->state[slot] = SLOT_PUBLISHED;
  p->n_published++;
  clock_pts = loan->clock_pts;
  if (clock_pts == PF_TIME_NONE && loan->pts != PF_TIME_NONE) {
    if (!p->have_anchor) {
      uint64_t now = pf_monotonic_ns ();
      p->anchor = now > loan->pts ? now - loan->pts : 0;
      p->have_anchor = 1;
    }
    clock_pts = p->anchor + loan->pts;
  }
  pthread_mutex_unlock (&p->lock);

  memset (&frame, 0, sizeof (frame));
  frame.n_chunks = 1;
  frame.chunks[0].segment_id = pf_segment_get_id (p->seg);
  frame.chunks[0].offset = (uint64_t) slot *p->slot_size;
  frame.chunks[0].size = loan->size;
  frame.pts = loan->pts;
  frame.dts = loan->dts;
  frame.duration = loan->duration;
  frame.offset = UINT64_MAX;
  frame.offset_end = UINT64_MAX;
  frame.clock_pts = clock_pts;
  frame.buffer_flags = loan->buffer_flags;
  if (loan->has_video_meta) {
    frame.meta_flags = PF_FRAME_HAS_VIDEO_META;
    frame.width = loan->layout.width;
    frame.height = loan->layout.height;
    frame.n_planes = loan->layout.n_planes;
    for (i = 0; i < loan->layout.n_planes; i++) {
      frame.plane_offset[i] = loan->layout.plane_offset[i];
      frame.plane_stride[i] = loan->layout.plane_stride[i];
    }
  }
  segs[0] = p->seg;
  loan->loan_id = 0;

  res = pf_producer_publish (p->transport, &frame, segs, slot_token (slot));
  if (res <= 0) {
    /* Nobody holds it: frame_released will not run. */
    pthread_mutex_lock (&p->lock);
    if (p->state[slot] == SLOT_PUBLISHED)
      slot_return_locked (p, slot);
    pthread_mutex_unlock (&p->lock);
  }
  return res;
}

int
pf_node_producer_discard (pf_node_producer * p, pf_node_loan * loan)
{
  int res;

  if (p == NULL || loan == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  res = check_loan_locked (p, loan);
  if (res == 0)
    slot_return_locked (p, loan->slot);
  pthread_mutex_unlock (&p->lock);
  loan->loan_id = 0;
  return res;
}

int
pf_node_producer_send_eos (pf_node_producer * p)
{
  if (p == NULL)
    return -EINVAL;
  return pf_producer_send_eos (p->transport);
}

/* Waits on the condition until done (p) returns true. Lock held. */
static int
wait_until_locked (pf_node_producer * p, int timeout_ms,
    int (*done) (pf_node_producer * p, unsigned int arg), unsigned int arg)
{
  struct timespec deadline;

  if (timeout_ms > 0)
    deadline_after (&deadline, timeout_ms);
  while (!done (p, arg)) {
    if (timeout_ms == 0)
      return -ETIMEDOUT;
    if (timeout_ms < 0) {
      pthread_cond_wait (&p->cond, &p->lock);
    } else if (pthread_cond_timedwait (&p->cond, &p->lock, &deadline) ==
        ETIMEDOUT && !done (p, arg)) {
      return -ETIMEDOUT;
    }
  }
  return 0;
}

static int
is_idle (pf_node_producer * p, unsigned int unused)
{
  return p->n_published == 0;
}

static int
has_clients (pf_node_producer * p, unsigned int n)
{
  /* The transport's lock nests inside ours; its callbacks run unlocked. */
  return pf_producer_get_n_clients (p->transport) >= n;
}

int
pf_node_producer_wait_idle (pf_node_producer * p, int timeout_ms)
{
  int res;

  if (p == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  res = wait_until_locked (p, timeout_ms, is_idle, 0);
  pthread_mutex_unlock (&p->lock);
  return res;
}

int
pf_node_producer_wait_clients (pf_node_producer * p, unsigned int n_clients,
    int timeout_ms)
{
  int res;

  if (p == NULL)
    return -EINVAL;
  pthread_mutex_lock (&p->lock);
  res = wait_until_locked (p, timeout_ms, has_clients, n_clients);
  pthread_mutex_unlock (&p->lock);
  return res;
}

unsigned int
pf_node_producer_get_n_slots (pf_node_producer * p)
{
  return p ? p->n_slots : 0;
}

unsigned int
pf_node_producer_get_free_slots (pf_node_producer * p)
{
  unsigned int n;

  if (p == NULL)
    return 0;
  pthread_mutex_lock (&p->lock);
  n = p->n_free;
  pthread_mutex_unlock (&p->lock);
  return n;
}

unsigned int
pf_node_producer_get_n_clients (pf_node_producer * p)
{
  return p ? pf_producer_get_n_clients (p->transport) : 0;
}

pf_segment *
pf_node_producer_get_segment (pf_node_producer * p)
{
  return p ? p->seg : NULL;
}

pf_producer *
pf_node_producer_get_transport (pf_node_producer * p)
{
  return p ? p->transport : NULL;
}

/* ======================================================================== */
/* Consumer                                                                  */
/* ======================================================================== */

/* One caps string, shared by the frames that belong to it. */
struct node_caps
{
  atomic_int refcount;
  pf_node_caps_info info;
  int has_layout;
  pf_node_video_layout layout;  /* default layout from the caps */
  char text[];
};

struct node_frame
{
  pf_node_frame pub;            /* first: the public pointer is ours */
  pf_node_consumer *owner;
  struct node_caps *caps;
  pf_segment *segs[PF_MAX_CHUNKS];
  struct node_frame *next_spare;
};

struct pf_node_consumer
{
  atomic_int refcount;          /* the application's handle + one per frame */
  pf_consumer *transport;
  struct node_caps *caps;       /* latest, or NULL; receiving thread only */
  int broken;                   /* a violation seen here: next() fails */
  char error[256];
  /* Released frames, reused by next(): no allocation per frame once as
   * many frames as the application holds at most have been made. Frames
   * may be released from any thread. */
  pthread_mutex_t spare_lock;
  struct node_frame *spare;
};

static struct node_caps *
node_caps_new (const char *text)
{
  size_t len = strlen (text);
  struct node_caps *nc = malloc (sizeof (*nc) + len + 1);

  if (nc == NULL)
    return NULL;
  atomic_init (&nc->refcount, 1);
  memcpy (nc->text, text, len + 1);
  if (pf_node_caps_parse (text, &nc->info) < 0)
    memset (&nc->info, 0, sizeof (nc->info));
  nc->has_layout = nc->info.width && nc->info.height &&
      pf_node_video_layout_compute (nc->info.format, nc->info.width,
      nc->info.height, 0, &nc->layout) == 0;
  if (!nc->has_layout)
    memset (&nc->layout, 0, sizeof (nc->layout));
  return nc;
}

static struct node_caps *
node_caps_ref (struct node_caps *nc)
{
  if (nc)
    atomic_fetch_add (&nc->refcount, 1);
  return nc;
}

static void
node_caps_unref (struct node_caps *nc)
{
  if (nc && atomic_fetch_sub (&nc->refcount, 1) == 1)
    free (nc);
}

static void
consumer_unref (pf_node_consumer * c)
{
  struct node_frame *f;

  if (atomic_fetch_sub (&c->refcount, 1) != 1)
    return;
  pf_consumer_unref (c->transport);
  node_caps_unref (c->caps);
  while ((f = c->spare) != NULL) {
    c->spare = f->next_spare;
    free (f);
  }
  pthread_mutex_destroy (&c->spare_lock);
  free (c);
}

int
pf_node_consumer_new (const char *socket_path, int timeout_ms,
    pf_node_consumer ** out)
{
  pf_node_consumer *c;
  int res;

  if (out == NULL)
    return -EINVAL;
  *out = NULL;
  if (socket_path == NULL || socket_path[0] == '\0')
    return -EINVAL;
  c = calloc (1, sizeof (*c));
  if (c == NULL)
    return -ENOMEM;
  atomic_init (&c->refcount, 1);
  res = pf_consumer_connect (socket_path, timeout_ms, &c->transport);
  if (res < 0) {
    free (c);
    return res;
  }
  pthread_mutex_init (&c->spare_lock, NULL);
  *out = c;
  return 0;
}

void
pf_node_consumer_free (pf_node_consumer * c)
{
  if (c)
    consumer_unref (c);
}

int
pf_node_consumer_get_fd (pf_node_consumer * c)
{
  return c ? pf_consumer_get_fd (c->transport) : -EINVAL;
}

/* TRUE when every plane of @l lies inside @size bytes. Planes whose row
 * count is unknown (no layout from the caps) only need to start inside. */
static int
layout_fits (const pf_node_video_layout * l, uint64_t size)
{
  uint64_t end;
  uint32_t i;

  for (i = 0; i < l->n_planes; i++) {
    if (l->plane_stride[i] <= 0 || l->plane_offset[i] >= size)
      return 0;
    if (l->plane_height[i] == 0)
      continue;
    end = l->plane_offset[i] + (uint64_t) l->plane_stride[i] *
        (l->plane_height[i] - 1) + l->plane_row_bytes[i];
    if ((uint64_t) l->plane_stride[i] < l->plane_row_bytes[i] || end > size)
      return 0;
  }
  return 1;
}

/* Fills a frame from a FRAME event, taking references. */
static int
make_frame (pf_node_consumer * c, const pf_event * ev, pf_node_frame ** out)
{
  const struct pf_msg_frame *m = &ev->frame;
  struct node_frame *f;
  uint32_t i;

  pthread_mutex_lock (&c->spare_lock);
  if ((f = c->spare) != NULL)
    c->spare = f->next_spare;
  pthread_mutex_unlock (&c->spare_lock);
  if (f == NULL && (f = malloc (sizeof (*f))) == NULL)
    return -ENOMEM;
  memset (f, 0, sizeof (*f));
  f->owner = c;
  atomic_fetch_add (&c->refcount, 1);
  f->caps = node_caps_ref (c->caps);

  f->pub.seq = m->seq;
  f->pub.caps_seq = m->caps_seq;
  f->pub.n_chunks = m->n_chunks;
  for (i = 0; i < m->n_chunks && i < PF_MAX_CHUNKS; i++) {
    f->segs[i] = pf_segment_ref (ev->segments[i]);
    f->pub.chunk_data[i] = ev->data[i];
    f->pub.chunk_size[i] = m->chunks[i].size;
    f->pub.size += m->chunks[i].size;
  }
  f->pub.data = m->n_chunks == 1 ? ev->data[0] : NULL;

  if (f->caps) {
    f->pub.caps = f->caps->text;
    f->pub.info = f->caps->info;
  } else {
    f->pub.caps = "";
  }
  if (m->meta_flags & PF_FRAME_HAS_VIDEO_META) {
    f->pub.has_video_meta = 1;
    if (f->caps && f->caps->has_layout &&
        f->caps->layout.n_planes == m->n_planes)
      f->pub.layout = f->caps->layout;  /* row bytes, plane heights */
    f->pub.layout.width = m->width;
    f->pub.layout.height = m->height;
    f->pub.layout.n_planes = m->n_planes;
    for (i = 0; i < m->n_planes && i < PF_MAX_PLANES; i++) {
      f->pub.layout.plane_offset[i] = m->plane_offset[i];
      f->pub.layout.plane_stride[i] = m->plane_stride[i];
    }
    f->pub.layout.size = f->pub.size;
  } else if (f->caps && f->caps->has_layout &&
      f->caps->layout.size <= f->pub.size) {
    f->pub.layout = f->caps->layout;
  }
  /* The meta comes from the peer: a plane outside the frame would send an
   * application reading by stride past the frame's memory. */
  if (!layout_fits (&f->pub.layout, f->pub.size)) {
    snprintf (c->error, sizeof (c->error), "FRAME %" PRIu64 ": video meta "
        "(%u planes) lies outside the frame's %" PRIu64 " bytes", m->seq,
        f->pub.layout.n_planes, f->pub.size);
    pf_node_frame_release (&f->pub);
    return -EPROTO;
  }

  f->pub.pts = m->pts;
  f->pub.dts = m->dts;
  f->pub.duration = m->duration;
  f->pub.clock_pts = m->clock_pts;
  f->pub.send_time = m->send_time;
  f->pub.recv_time = pf_monotonic_ns ();
  f->pub.buffer_flags = m->buffer_flags;
  f->pub.readonly = (pf_segment_get_state (f->segs[0]) &
      PF_SEGMENT_STATE_READONLY) ? 1 : 0;
  f->pub.segment = f->segs[0];
  f->pub.segment_base = pf_segment_get_base (f->segs[0]);
  f->pub.segment_size = pf_segment_get_size (f->segs[0]);
  f->pub.segment_fd = pf_segment_get_fd (f->segs[0]);
  f->pub.segment_id = pf_segment_get_id (f->segs[0]);
  f->pub.segment_offset = m->chunks[0].offset;
  *out = &f->pub;
  return 0;
}

static int
remaining_ms (const struct timespec *deadline)
{
  struct timespec now;
  int64_t ms;

  clock_gettime (CLOCK_MONOTONIC, &now);
  ms = (int64_t) (deadline->tv_sec - now.tv_sec) * 1000 +
      (deadline->tv_nsec - now.tv_nsec) / 1000000;
  if (ms < 0)
    return 0;
  return ms > INT_MAX ? INT_MAX : (int) ms;
}

int
pf_node_consumer_next (pf_node_consumer * c, int timeout_ms,
    pf_node_frame ** frame)
{
  struct timespec deadline;
  struct node_caps *nc;
  pf_event ev;
  uint64_t seq;
  int res, t = timeout_ms;

  if (c == NULL || frame == NULL)
    return -EINVAL;
  *frame = NULL;
  if (c->broken)
    return -EPROTO;
  if (timeout_ms > 0)
    deadline_after (&deadline, timeout_ms);

  for (;;) {
    memset (&ev, 0, sizeof (ev));
    res = pf_consumer_receive (c->transport, t, &ev);
    if (res <= 0) {
      if (res < 0)
        snprintf (c->error, sizeof (c->error), "%s",
            pf_consumer_get_error (c->transport)[0] ?
            pf_consumer_get_error (c->transport) : pf_node_strerror (res));
      return res;
    }
    switch (ev.type) {
      case PF_EVENT_CAPS:
        nc = node_caps_new (ev.caps ? ev.caps : "");
        pf_consumer_event_clear (&ev);
        if (nc == NULL)
          return -ENOMEM;
        node_caps_unref (c->caps);
        c->caps = nc;
        break;
      case PF_EVENT_FRAME:
        /* pf_consumer validated the message: 1..4 chunks, each mapped. */
        seq = ev.frame.seq;
        res = make_frame (c, &ev, frame);
        pf_consumer_event_clear (&ev);  /* zeroes ev: seq saved above */
        if (res == -EPROTO)
          c->broken = 1;
        else if (res == -ENOMEM)
          pf_consumer_release (c->transport, seq);      /* never handed out */
        return res < 0 ? res : 1;
      case PF_EVENT_EOS:
        pf_consumer_event_clear (&ev);
        return PF_NODE_EOS;
      default:
        pf_consumer_event_clear (&ev);
        break;
    }
    if (timeout_ms > 0)
      t = remaining_ms (&deadline);
  }
}

int
pf_node_frame_release (pf_node_frame * frame)
{
  struct node_frame *f = (struct node_frame *) frame;
  pf_node_consumer *c;
  uint32_t i;
  int res;

  if (f == NULL)
    return 0;
  c = f->owner;
  res = pf_consumer_release (c->transport, f->pub.seq);
  for (i = 0; i < PF_MAX_CHUNKS; i++)
    if (f->segs[i])
      pf_segment_unref (f->segs[i]);
  node_caps_unref (f->caps);
  memset (f, 0, sizeof (*f));   /* a stale pointer reads zeros, not data */
  pthread_mutex_lock (&c->spare_lock);
  f->next_spare = c->spare;
  c->spare = f;
  pthread_mutex_unlock (&c->spare_lock);
  consumer_unref (c);
  return res;
}

const char *
pf_node_consumer_get_caps (pf_node_consumer * c)
{
  return c && c->caps ? c->caps->text : NULL;
}

unsigned int
pf_node_consumer_get_held (pf_node_consumer * c)
{
  return c ? pf_consumer_get_held (c->transport) : 0;
}

uint32_t
pf_node_consumer_get_max_held (pf_node_consumer * c)
{
  return c ? pf_consumer_get_max_held (c->transport) : 0;
}

const char *
pf_node_consumer_get_error (pf_node_consumer * c)
{
  if (c == NULL)
    return "";
  if (c->error[0])
    return c->error;
  return pf_consumer_get_error (c->transport);
}

pf_consumer *
pf_node_consumer_get_transport (pf_node_consumer * c)
{
  return c ? c->transport : NULL;
}

size_t
pf_node_abi_sizeof (const char *type_name)
{
  if (type_name == NULL)
    return 0;
  if (strcmp (type_name, "pf_node_frame") == 0)
    return sizeof (pf_node_frame);
  if (strcmp (type_name, "pf_node_loan") == 0)
    return sizeof (pf_node_loan);
  if (strcmp (type_name, "pf_node_video_layout") == 0)
    return sizeof (pf_node_video_layout);
  if (strcmp (type_name, "pf_node_caps_info") == 0)
    return sizeof (pf_node_caps_info);
  return 0;
}
