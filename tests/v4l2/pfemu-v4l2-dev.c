/* pfemu-v4l2: the capture device the stand-in plays
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Formats, buffers (MMAP in memfds, USERPTR, DMABUF), the writer thread
 * and the ioctls; the rules are listed at the top of pfemu-v4l2.c. Every
 * function runs with pfemu_lock held, except the writer's fill of a
 * buffer (neither queued nor done then, so no ioctl touches it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#undef _FILE_OFFSET_BITS
#include "pfemu-v4l2-private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

pthread_mutex_t pfemu_lock = PTHREAD_MUTEX_INITIALIZER;
PfemuV4l2Stats pfemu_stats;

static struct
{
  const void *addr;
  size_t len;
} holds[MAX_HOLDS];
static uint8_t ramp[256 + MAX_ROW];
static size_t userptr_align = 4096;
static int sparse;
static const char *report_path;

static const uint32_t formats[] = { V4L2_PIX_FMT_YUYV, V4L2_PIX_FMT_NV12 };

static const struct
{
  uint32_t w, h;
} sizes[] = { {320, 240}, {640, 480}, {1280, 720}, {1920, 1080} };
static const uint32_t rates[] = { 30, 60, 240 };        /* frames per second */

/* Reads the environment (at load time). */
void
pfemu_dev_config (void)
{
  const char *s;
  int i;

  if ((s = getenv ("PFEMU_V4L2_ALIGN")) && *s)
    userptr_align = strtoul (s, NULL, 0);
  if (userptr_align == 0)
    userptr_align = 1;
  report_path = getenv ("PFEMU_V4L2_REPORT");
  for (i = 0; i < (int) sizeof (ramp); i++)
    ramp[i] = (uint8_t) i;
}

/* ---- formats ---- */

static int
format_known (uint32_t f)
{
  return f == V4L2_PIX_FMT_YUYV || f == V4L2_PIX_FMT_NV12;
}

static uint32_t
rows_of (uint32_t f, uint32_t h)
{
  return f == V4L2_PIX_FMT_NV12 ? h + h / 2 : h;
}

static uint32_t
row_bytes (uint32_t f, uint32_t w)
{
  return f == V4L2_PIX_FMT_NV12 ? w : w * 2;
}

/* What the driver makes of @pix (TRY_FMT): a known format, the supported
 * size at or below it (else the smallest), packed or padded rows, a
 * bytesperline asked for kept when it is larger (up to 4x) and aligned. */
static void
adjust_format (struct v4l2_pix_format *pix)
{
  /* read each time: a test sets it between runs */
  const char *s = getenv ("PFEMU_V4L2_STRIDE_ALIGN");
  uint32_t stride_align = s ? strtoul (s, NULL, 0) : 1;
  uint32_t i, best = 0, min_bpl;

  if (stride_align == 0 || stride_align > 4096)
    stride_align = 1;

  if (!format_known (pix->pixelformat))
    pix->pixelformat = V4L2_PIX_FMT_YUYV;
  for (i = 0; i < sizeof (sizes) / sizeof (sizes[0]); i++)
    if (sizes[i].w <= pix->width && sizes[i].h <= pix->height)
      best = i;
  pix->width = sizes[best].w;
  pix->height = sizes[best].h;
  min_bpl = row_bytes (pix->pixelformat, pix->width);
  min_bpl = (min_bpl + stride_align - 1) / stride_align * stride_align;
  if (pix->bytesperline < min_bpl || pix->bytesperline > 4 * min_bpl
      || pix->bytesperline % stride_align != 0)
    pix->bytesperline = min_bpl;
  pix->sizeimage = pix->bytesperline * rows_of (pix->pixelformat, pix->height);
  pix->field = V4L2_FIELD_NONE;
  pix->colorspace = V4L2_COLORSPACE_REC709;
  pix->ycbcr_enc = V4L2_YCBCR_ENC_709;
  pix->quantization = V4L2_QUANTIZATION_LIM_RANGE;
  pix->xfer_func = V4L2_XFER_FUNC_709;
  pix->priv = 0;
  pix->flags = 0;
}

static void
get_format (Dev * d, struct v4l2_format *f)
{
  memset (&f->fmt, 0, sizeof (f->fmt));
  f->fmt.pix.pixelformat = d->pixfmt;
  f->fmt.pix.width = d->width;
  f->fmt.pix.height = d->height;
  f->fmt.pix.bytesperline = d->bpl;
  adjust_format (&f->fmt.pix);
}

/* ---- buffers ---- */

/* Unmaps every attached dmabuf. */
static void
detach_all (Dev * d)
{
  uint32_t i;

  for (i = 0; i < d->n_att; i++)
    if (!d->att[i].borrowed)
      pfemu_real_munmap (d->att[i].map, d->att[i].len);
  d->n_att = 0;
  for (i = 0; i < d->n_bufs; i++) {
    d->bufs[i].dmamap = NULL;
    d->bufs[i].dmafd = -1;
  }
}

/* The mapping of dmabuf @fd: attached once per dmabuf (as a driver maps a
 * dmabuf for DMA once while it keeps coming back), or MAP_FAILED. */
static void *
attach (Dev * d, int fd)
{
  uint64_t id[3];
  uint32_t i;
  int borrowed;
  void *p;

  if (pfemu_dmabuf_identity (fd, id) < 0)
    return MAP_FAILED;
  for (i = 0; i < d->n_att; i++)
    if (memcmp (d->att[i].id, id, sizeof (id)) == 0)
      return d->att[i].map;
  if (d->n_att == MAX_ATTACH)
    return MAP_FAILED;
  p = pfemu_dmabuf_map (fd, d->sizeimage, &borrowed);
  if (p == MAP_FAILED)
    return p;
  d->att[d->n_att].borrowed = borrowed;
  memcpy (d->att[d->n_att].id, id, sizeof (id));
  d->att[d->n_att].map = p;
  d->att[d->n_att].len = d->sizeimage;
  d->n_att++;
  return p;
}

static int
maps_of (Dev * d)
{
  uint32_t i;
  int n = 0;

  for (i = 0; i < d->n_bufs; i++)
    n += d->bufs[i].n_maps;
  return n;
}

static void
free_buffers (Dev * d)
{
  uint32_t i;

  for (i = 0; i < d->n_bufs; i++) {
    if (d->bufs[i].memfd >= 0)
      pfemu_real_close (d->bufs[i].memfd);
  }
  detach_all (d);
  d->n_bufs = 0;
  d->q_len = d->d_len = d->q_head = d->d_head = 0;
}

static int
reqbufs (Dev * d, struct v4l2_requestbuffers *r)
{
  uint32_t i, count;

  r->capabilities = V4L2_BUF_CAP_SUPPORTS_MMAP |
      V4L2_BUF_CAP_SUPPORTS_USERPTR | V4L2_BUF_CAP_SUPPORTS_DMABUF;
  if (r->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
    return -EINVAL;
  if (r->memory != V4L2_MEMORY_MMAP && r->memory != V4L2_MEMORY_USERPTR
      && r->memory != V4L2_MEMORY_DMABUF)
    return -EINVAL;
  if (d->streaming || maps_of (d) > 0)
    return -EBUSY;
  free_buffers (d);
  count = r->count > MAX_BUFS ? MAX_BUFS : r->count;
  d->memory = r->memory;
  for (i = 0; i < count; i++) {
    Buf *b = &d->bufs[i];

    memset (b, 0, sizeof (*b));
    b->memfd = -1;
    b->dmafd = -1;
    b->length = d->sizeimage;
    if (r->memory == V4L2_MEMORY_MMAP) {
      b->memfd = memfd_create ("pfemu-v4l2", MFD_CLOEXEC);
      if (b->memfd < 0 || ftruncate (b->memfd, d->sizeimage) < 0) {
        int err = errno;

        if (b->memfd >= 0)
          pfemu_real_close (b->memfd);
        d->n_bufs = i;
        free_buffers (d);
        return -err;
      }
    }
    d->n_bufs = i + 1;
  }
  r->count = count;
  return 0;
}

static void
fill_buffer (Dev * d, uint32_t index, struct v4l2_buffer *vb)
{
  Buf *b = &d->bufs[index];

  vb->index = index;
  vb->type = V4L2_BUF_TYPE_VIDEO_CAPTURE;
  vb->memory = d->memory;
  vb->length = b->length;
  vb->field = V4L2_FIELD_NONE;
  vb->flags = V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC | V4L2_BUF_FLAG_TSTAMP_SRC_EOF;
  if (b->state == BUF_QUEUED || b->state == BUF_WRITING)
    vb->flags |= V4L2_BUF_FLAG_QUEUED;
  if (b->state == BUF_DONE)
    vb->flags |= V4L2_BUF_FLAG_DONE;
  if (b->n_maps > 0)
    vb->flags |= V4L2_BUF_FLAG_MAPPED;
  vb->bytesused = b->bytesused;
  vb->sequence = b->sequence;
  vb->timestamp = b->ts;
  if (d->memory == V4L2_MEMORY_MMAP)
    vb->m.offset = index * 4096;        /* vb2's cookie: index << PAGE_SHIFT */
  else if (d->memory == V4L2_MEMORY_USERPTR)
    vb->m.userptr = b->userptr;
  else
    vb->m.fd = b->dmafd;
}

/* [start, start + len) lies in mapped pages (what get_user_pages needs). */
static int
range_mapped (unsigned long start, size_t len)
{
  unsigned long page = (unsigned long) sysconf (_SC_PAGESIZE);
  unsigned long first = start & ~(page - 1);
  size_t n = (start + len - first + page - 1) / page;
  unsigned char *vec = malloc (n);
  int ok;

  if (vec == NULL)
    return 0;
  ok = mincore ((void *) first, n * page, vec) == 0;
  free (vec);
  return ok;
}

/* The memory of a queued buffer, where the writer fills it. */
static uint8_t *
buffer_memory (Dev * d, Buf * b, int *unmap_after)
{
  void *p;

  *unmap_after = 0;
  if (d->memory == V4L2_MEMORY_USERPTR)
    return (uint8_t *) b->userptr;
  if (d->memory == V4L2_MEMORY_DMABUF)
    return b->dmamap;
  p = pfemu_real_mmap (NULL, b->length, PROT_READ | PROT_WRITE, MAP_SHARED,
      b->memfd, 0);
  if (p == MAP_FAILED)
    return NULL;
  *unmap_after = 1;
  return p;
}

static int
qbuf (Dev * d, struct v4l2_buffer *vb)
{
  Buf *b;
  uint32_t i;

  if (vb->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || vb->memory != d->memory
      || vb->index >= d->n_bufs)
    return -EINVAL;
  b = &d->bufs[vb->index];
  if (b->state != BUF_USER)
    return -EINVAL;             /* queued twice */
  if (d->memory == V4L2_MEMORY_USERPTR) {
    unsigned long p = vb->m.userptr;

    if (p == 0 || vb->length < d->sizeimage || p % userptr_align != 0)
      return -EINVAL;
    if (!range_mapped (p, vb->length))
      return -EFAULT;
    /* two queued buffers over one memory: the device would write one
     * frame over the other */
    for (i = 0; i < d->n_bufs; i++) {
      Buf *o = &d->bufs[i];

      if (o != b && o->state != BUF_USER && o->userptr < p + d->sizeimage
          && p < o->userptr + d->sizeimage)
        return -EINVAL;
    }
    b->userptr = p;
    b->length = vb->length;
  } else if (d->memory == V4L2_MEMORY_DMABUF) {
    int64_t size = pfemu_dmabuf_size (vb->m.fd);
    void *p;

    if (size < 0 || (size_t) size < d->sizeimage)
      return -EINVAL;
    p = attach (d, vb->m.fd);
    if (p == MAP_FAILED)
      return -EINVAL;
    b->dmamap = p;
    b->dmafd = vb->m.fd;
    b->length = (size_t) size;
  }
  b->state = BUF_QUEUED;
  d->queued[(d->q_head + d->q_len) % MAX_BUFS] = vb->index;
  d->q_len++;
  pfemu_stats.qbuf++;
  fill_buffer (d, vb->index, vb);
  return 0;
}

static int
dqbuf (Dev * d, int fd, struct v4l2_buffer *vb)
{
  uint32_t index;
  uint64_t one;
  int nonblock = (fcntl (fd, F_GETFL) & O_NONBLOCK) != 0;

  if (vb->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || vb->memory != d->memory)
    return -EINVAL;
  while (d->streaming && d->d_len == 0) {
    if (nonblock)
      return -EAGAIN;
    pthread_cond_wait (&d->cond, &pfemu_lock);
  }
  if (!d->streaming)
    return -EINVAL;
  index = d->done[d->d_head];
  d->d_head = (d->d_head + 1) % MAX_BUFS;
  d->d_len--;
  if (read (d->wake_fd, &one, sizeof (one)) != sizeof (one))
    return -EIO;                /* cannot be: a count per done buffer */
  d->bufs[index].state = BUF_USER;
  fill_buffer (d, index, vb);
  pfemu_stats.dqbuf++;
  return 0;
}

/* ---- the writer ---- */

static void
write_frame (Dev * d, uint8_t * mem, uint32_t seq)
{
  uint32_t rows = rows_of (d->pixfmt, d->height);
  uint32_t rb = row_bytes (d->pixfmt, d->width);
  uint32_t r;

  for (r = 0; r < rows; r++) {
    if (sparse && r > 0)
      break;
    memcpy (mem + (size_t) r * d->bpl, ramp + ((r + seq) & 0xff), rb);
  }
  memcpy (mem, PFEMU_V4L2_MAGIC, 4);
  memcpy (mem + 4, &seq, 4);
}

static int
held_overlap (const uint8_t * mem, size_t len)
{
  int i;

  for (i = 0; i < MAX_HOLDS; i++)
    if (holds[i].addr && (const uint8_t *) holds[i].addr < mem + len
        && mem < (const uint8_t *) holds[i].addr + holds[i].len)
      return 1;
  return 0;
}

static void *
writer (void *data)
{
  Dev *d = data;
  struct timespec next;
  uint64_t period_ns;

  clock_gettime (CLOCK_MONOTONIC, &next);
  pthread_mutex_lock (&pfemu_lock);
  period_ns = 1000000000ull * d->fps_num / d->fps_den;
  while (!d->stop) {
    uint32_t index;
    Buf *b;
    uint8_t *mem;
    int unmap_after;
    struct timespec now;
    uint64_t one = 1;

    next.tv_nsec += period_ns;
    while (next.tv_nsec >= 1000000000) {
      next.tv_nsec -= 1000000000;
      next.tv_sec++;
    }
    pthread_mutex_unlock (&pfemu_lock);
    clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    pthread_mutex_lock (&pfemu_lock);
    if (d->stop)
      break;
    if (d->q_len == 0) {
      pfemu_stats.starved++;
      d->seq++;
      continue;
    }
    index = d->queued[d->q_head];
    d->q_head = (d->q_head + 1) % MAX_BUFS;
    d->q_len--;
    b = &d->bufs[index];
    b->state = BUF_WRITING;
    mem = buffer_memory (d, b, &unmap_after);
    if (mem && held_overlap (mem, d->sizeimage))
      pfemu_stats.held_writes++;
    pthread_mutex_unlock (&pfemu_lock);
    if (mem)
      write_frame (d, mem, d->seq);
    if (unmap_after)
      pfemu_real_munmap (mem, b->length);
    pthread_mutex_lock (&pfemu_lock);
    clock_gettime (CLOCK_MONOTONIC, &now);
    b->ts.tv_sec = now.tv_sec;
    b->ts.tv_usec = now.tv_nsec / 1000;
    b->sequence = d->seq++;
    b->bytesused = d->sizeimage;
    b->state = BUF_DONE;
    d->done[(d->d_head + d->d_len) % MAX_BUFS] = index;
    d->d_len++;
    pfemu_stats.frames++;
    if (d->memory == V4L2_MEMORY_USERPTR)
      pfemu_stats.userptr_frames++;
    else if (d->memory == V4L2_MEMORY_MMAP)
      pfemu_stats.mmap_frames++;
    else
      pfemu_stats.dmabuf_frames++;
    if (write (d->wake_fd, &one, sizeof (one)) != sizeof (one))
      abort ();                 /* an eventfd counter cannot overflow here */
    pthread_cond_broadcast (&d->cond);
  }
  pthread_mutex_unlock (&pfemu_lock);
  return NULL;
}

static int
streamon (Dev * d, const int *type)
{
  if (*type != V4L2_BUF_TYPE_VIDEO_CAPTURE || d->n_bufs == 0)
    return -EINVAL;
  if (d->streaming)
    return 0;
  {
    const char *s = getenv ("PFEMU_V4L2_PATTERN");

    sparse = s != NULL && strcmp (s, "sparse") == 0;
  }
  d->stop = 0;
  if (pthread_create (&d->thread, NULL, writer, d) != 0)
    return -ENOMEM;
  d->streaming = 1;
  return 0;
}

/* Lock held; dropped while the writer is joined. */
static int
streamoff (Dev * d, const int *type)
{
  uint32_t i;
  uint64_t v;

  if (type && *type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
    return -EINVAL;
  if (d->streaming) {
    d->stop = 1;
    pthread_mutex_unlock (&pfemu_lock);
    pthread_join (d->thread, NULL);
    pthread_mutex_lock (&pfemu_lock);
    d->streaming = 0;
    pthread_cond_broadcast (&d->cond);
  }
  /* one count per done buffer */
  for (i = 0; i < d->d_len; i++)
    if (read (d->wake_fd, &v, sizeof (v)) != sizeof (v))
      break;
  for (i = 0; i < d->n_bufs; i++)
    d->bufs[i].state = BUF_USER;
  d->q_len = d->d_len = d->q_head = d->d_head = 0;
  return 0;
}

/* ---- the ioctls ---- */

static int
enum_framesizes (struct v4l2_frmsizeenum *fs)
{
  if (!format_known (fs->pixel_format)
      || fs->index >= sizeof (sizes) / sizeof (sizes[0]))
    return -EINVAL;
  fs->type = V4L2_FRMSIZE_TYPE_DISCRETE;
  fs->discrete.width = sizes[fs->index].w;
  fs->discrete.height = sizes[fs->index].h;
  return 0;
}

static int
enum_frameintervals (struct v4l2_frmivalenum *fi)
{
  uint32_t i;
  int found = 0;

  for (i = 0; i < sizeof (sizes) / sizeof (sizes[0]); i++)
    if (sizes[i].w == fi->width && sizes[i].h == fi->height)
      found = 1;
  if (!found || !format_known (fi->pixel_format)
      || fi->index >= sizeof (rates) / sizeof (rates[0]))
    return -EINVAL;
  fi->type = V4L2_FRMIVAL_TYPE_DISCRETE;
  fi->discrete.numerator = 1;
  fi->discrete.denominator = rates[fi->index];
  return 0;
}

static int
parm (Dev * d, struct v4l2_streamparm *p, int set)
{
  if (p->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
    return -EINVAL;
  if (set) {
    struct v4l2_fract *t = &p->parm.capture.timeperframe;
    uint32_t i, best = rates[0];

    /* the supported rate nearest to the one asked for */
    if (t->numerator != 0 && t->denominator != 0)
      for (i = 0; i < sizeof (rates) / sizeof (rates[0]); i++)
        if ((uint64_t) rates[i] * t->numerator <= t->denominator)
          best = rates[i];
    if (d->streaming)
      return -EBUSY;
    d->fps_num = 1;
    d->fps_den = best;
  }
  memset (&p->parm, 0, sizeof (p->parm));
  p->parm.capture.capability = V4L2_CAP_TIMEPERFRAME;
  p->parm.capture.timeperframe.numerator = d->fps_num;
  p->parm.capture.timeperframe.denominator = d->fps_den;
  p->parm.capture.readbuffers = 0;
  return 0;
}

int
pfemu_dev_ioctl (Dev * d, int fd, unsigned long req, void *arg)
{
  switch (req) {
    case VIDIOC_QUERYCAP:{
      struct v4l2_capability *c = arg;

      memset (c, 0, sizeof (*c));
      strcpy ((char *) c->driver, "pfemu-v4l2");
      strcpy ((char *) c->card, "pinnedflow V4L2 stand-in");
      strcpy ((char *) c->bus_info, "platform:pfemu-v4l2");
      c->version = (6 << 16) | (1 << 8);
      c->device_caps = V4L2_CAP_VIDEO_CAPTURE | V4L2_CAP_STREAMING;
      c->capabilities = c->device_caps | V4L2_CAP_DEVICE_CAPS;
      return 0;
    }
    case VIDIOC_ENUM_FMT:{
      struct v4l2_fmtdesc *f = arg;

      if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE
          || f->index >= sizeof (formats) / sizeof (formats[0]))
        return -EINVAL;
      f->pixelformat = formats[f->index];
      f->flags = 0;
      snprintf ((char *) f->description, sizeof (f->description), "%s",
          f->index == 0 ? "YUYV 4:2:2" : "Y/UV 4:2:0");
      return 0;
    }
    case VIDIOC_G_FMT:{
      struct v4l2_format *f = arg;

      if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
        return -EINVAL;
      get_format (d, f);
      return 0;
    }
    case VIDIOC_TRY_FMT:
    case VIDIOC_S_FMT:{
      struct v4l2_format *f = arg;

      if (f->type != V4L2_BUF_TYPE_VIDEO_CAPTURE)
        return -EINVAL;
      adjust_format (&f->fmt.pix);
      if (req == VIDIOC_TRY_FMT)
        return 0;
      if (d->streaming || d->n_bufs > 0)
        return -EBUSY;
      d->pixfmt = f->fmt.pix.pixelformat;
      d->width = f->fmt.pix.width;
      d->height = f->fmt.pix.height;
      d->bpl = f->fmt.pix.bytesperline;
      d->sizeimage = f->fmt.pix.sizeimage;
      return 0;
    }
    case VIDIOC_ENUM_FRAMESIZES:
      return enum_framesizes (arg);
    case VIDIOC_ENUM_FRAMEINTERVALS:
      return enum_frameintervals (arg);
    case VIDIOC_G_PARM:
      return parm (d, arg, 0);
    case VIDIOC_S_PARM:
      return parm (d, arg, 1);
    case VIDIOC_REQBUFS:
      return reqbufs (d, arg);
    case VIDIOC_QUERYBUF:{
      struct v4l2_buffer *vb = arg;

      if (vb->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || vb->index >= d->n_bufs)
        return -EINVAL;
      fill_buffer (d, vb->index, vb);
      return 0;
    }
    case VIDIOC_QBUF:
      return qbuf (d, arg);
    case VIDIOC_DQBUF:
      return dqbuf (d, fd, arg);
    case VIDIOC_EXPBUF:{
      struct v4l2_exportbuffer *e = arg;

      if (e->type != V4L2_BUF_TYPE_VIDEO_CAPTURE || d->memory !=
          V4L2_MEMORY_MMAP || e->index >= d->n_bufs || e->plane != 0)
        return -EINVAL;
      e->fd = fcntl (d->bufs[e->index].memfd, F_DUPFD_CLOEXEC, 0);
      return e->fd < 0 ? -errno : 0;
    }
    case VIDIOC_STREAMON:
      return streamon (d, arg);
    case VIDIOC_STREAMOFF:
      return streamoff (d, arg);
    default:
      return -ENOTTY;
  }
}

Dev *
pfemu_dev_new (void)
{
  Dev *d = calloc (1, sizeof (*d));
  struct v4l2_format f = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE };

  if (d == NULL)
    return NULL;
  d->pixfmt = V4L2_PIX_FMT_YUYV;
  d->width = 640;
  d->height = 480;
  get_format (d, &f);
  d->bpl = f.fmt.pix.bytesperline;
  d->sizeimage = f.fmt.pix.sizeimage;
  d->fps_num = 1;
  d->fps_den = 30;
  d->memory = V4L2_MEMORY_MMAP;
  d->refs = 1;
  d->wake_fd = -1;
  pthread_cond_init (&d->cond, NULL);
  return d;
}

static void
write_report (void)
{
  int fd;

  if (report_path == NULL)
    return;
  fd = pfemu_real_open (report_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC,
      0644);
  if (fd < 0)
    return;
  dprintf (fd, "pfemu-v4l2 pid=%d frames=%llu starved=%llu held_writes=%llu "
      "refused=%llu userptr_frames=%llu mmap_frames=%llu dmabuf_frames=%llu "
      "qbuf=%llu dqbuf=%llu\n", (int) getpid (),
      (unsigned long long) pfemu_stats.frames,
      (unsigned long long) pfemu_stats.starved,
      (unsigned long long) pfemu_stats.held_writes,
      (unsigned long long) pfemu_stats.refused,
      (unsigned long long) pfemu_stats.userptr_frames,
      (unsigned long long) pfemu_stats.mmap_frames,
      (unsigned long long) pfemu_stats.dmabuf_frames,
      (unsigned long long) pfemu_stats.qbuf,
      (unsigned long long) pfemu_stats.dqbuf);
  pfemu_real_close (fd);
}


void
pfemu_dev_free (Dev * d)
{
  streamoff (d, NULL);
  free_buffers (d);
  if (d->wake_fd >= 0)
    pfemu_real_close (d->wake_fd);
  pthread_cond_destroy (&d->cond);
  free (d);
  pfemu_stats.closes++;
  write_report ();
}

/* ---- for tests in the same process ---- */


EXPORT void
pfemu_v4l2_get_stats (PfemuV4l2Stats * out)
{
  pthread_mutex_lock (&pfemu_lock);
  *out = pfemu_stats;
  pthread_mutex_unlock (&pfemu_lock);
}

EXPORT void
pfemu_v4l2_hold (const void *addr, size_t len)
{
  int i;

  pthread_mutex_lock (&pfemu_lock);
  for (i = 0; i < MAX_HOLDS; i++) {
    if (holds[i].addr == NULL) {
      holds[i].addr = addr;
      holds[i].len = len;
      break;
    }
  }
  pthread_mutex_unlock (&pfemu_lock);
}

EXPORT void
pfemu_v4l2_unhold (const void *addr)
{
  int i;

  pthread_mutex_lock (&pfemu_lock);
  for (i = 0; i < MAX_HOLDS; i++) {
    if (holds[i].addr == addr) {
      holds[i].addr = NULL;
      break;
    }
  }
  pthread_mutex_unlock (&pfemu_lock);
}
