/* pfemu-v4l2: a V4L2 capture device played to GStreamer's real v4l2src
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * LD_PRELOAD this library and open PFEMU_V4L2_DEVICE (default
 * /dev/video-pfemu0): stat() says it is a character device, open() gives
 * an eventfd that stands for the device (so GstPoll's ppoll works on it
 * unchanged: it is readable while a filled buffer waits, as a V4L2 fd is),
 * and ioctl/mmap/munmap/dup/close on it play a single-planar capture
 * driver with MMAP, USERPTR and DMABUF buffers:
 *   QUERYCAP, ENUM_FMT (YUYV, NV12), G/S/TRY_FMT, ENUM_FRAMESIZES,
 *   ENUM_FRAMEINTERVALS, G/S_PARM, REQBUFS, QUERYBUF, QBUF, DQBUF, EXPBUF,
 *   STREAMON, STREAMOFF; every other ioctl is ENOTTY.
 * It is as strict as vb2 is: a USERPTR must be aligned (PFEMU_V4L2_ALIGN,
 * default the page size), mapped (EFAULT) and at least sizeimage long;
 * a buffer is queued once (EINVAL), REQBUFS and S_FMT are EBUSY while
 * streaming or while buffers exist / are mapped; DQBUF returns buffers in
 * the order they were filled. A thread writes frames at the negotiated
 * interval into the oldest queued buffer only (none queued: a starved
 * tick), and a buffer leaves the driver only by DQBUF.
 * Frames: the pattern of pfemu-v4l2.h (PFEMU_V4L2_PATTERN=sparse: only
 * the header and the first row, a camera whose DMA costs no CPU).
 * PFEMU_V4L2_STRIDE_ALIGN pads bytesperline (default 1: packed rows).
 * PFEMU_V4L2_REPORT: a file the counters are appended to at each last
 * close. A test in the same process reads them with
 * pfemu_v4l2_get_stats() and marks ranges it reads with
 * pfemu_v4l2_hold(): a frame written over one is counted (held_writes).
 *
 * Threads: one global mutex guards the fd table, the mapping list, the
 * held ranges and every device's state (calls on other fds check the
 * table entry atomically and never take it; a fork takes it, so that
 * the child's copy is not left locked); the writer thread of a device
 * fills a buffer outside it (the buffer is neither queued nor done then,
 * so no ioctl touches it) and STREAMOFF joins the thread before it
 * returns the buffers.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* The plain and the 64 names are both defined here: neither may be
 * redirected to the other. */
#undef _FILE_OFFSET_BITS
#include "pfemu-v4l2.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/videodev2.h>

#define EXPORT __attribute__ ((visibility ("default")))
#define MAX_FDS 4096
#define MAX_BUFS VIDEO_MAX_FRAME
#define MAX_MAPS 256
#define MAX_HOLDS 256
#define MAX_ROW 8192

enum
{ BUF_USER, BUF_QUEUED, BUF_WRITING, BUF_DONE };

typedef struct
{
  int state;
  int memfd;                    /* MMAP: its memory; else -1 */
  size_t length;
  unsigned long userptr;        /* USERPTR: while queued or done */
  int dmafd;                    /* DMABUF: the fd QBUF gave */
  void *dmamap;                 /* DMABUF: our mapping while queued */
  size_t dmalen;
  uint32_t sequence;
  uint32_t bytesused;
  struct timeval ts;
  int n_maps;
} Buf;

typedef struct
{
  int refs;                     /* application fds */
  int wake_fd;                  /* our own fd of the eventfd */
  uint32_t pixfmt, width, height, bpl, sizeimage;
  uint32_t fps_num, fps_den;    /* timeperframe num/den */
  uint32_t memory, n_bufs;
  Buf bufs[MAX_BUFS];
  uint32_t queued[MAX_BUFS], q_head, q_len;
  uint32_t done[MAX_BUFS], d_head, d_len;
  int streaming, stop;
  pthread_t thread;
  pthread_cond_t cond;
  uint32_t seq;
} Dev;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Dev *fds[MAX_FDS];
static struct
{
  void *addr;
  size_t len;
  Dev *dev;
  uint32_t index;
} maps[MAX_MAPS];
static struct
{
  const void *addr;
  size_t len;
} holds[MAX_HOLDS];
static int n_maps;              /* entries of maps[] in use */
static PfemuV4l2Stats stats;
static uint8_t ramp[256 + MAX_ROW];

static const char *dev_path = PFEMU_V4L2_DEFAULT_DEVICE;
static size_t userptr_align = 4096;
static int sparse;
static const char *report_path;

static const uint32_t formats[] = { V4L2_PIX_FMT_YUYV, V4L2_PIX_FMT_NV12 };

static const struct
{
  uint32_t w, h;
} sizes[] = { {320, 240}, {640, 480}, {1280, 720}, {1920, 1080} };
static const uint32_t rates[] = { 30, 60, 240 };        /* frames per second */

#define REAL(ret, name, args) \
  static ret (*real_##name) args; \
  if (real_##name == NULL) \
    real_##name = (ret (*) args) dlsym (RTLD_NEXT, #name)

static void
fork_prepare (void)
{
  pthread_mutex_lock (&lock);
}

static void
fork_parent (void)
{
  pthread_mutex_unlock (&lock);
}

static void
fork_child (void)
{
  pthread_mutex_unlock (&lock);
}

/* Reads the environment at load time. */
static void pfemu_v4l2_init (void) __attribute__((constructor));

static void
pfemu_v4l2_init (void)
{
  const char *s;
  int i;

  if ((s = getenv ("PFEMU_V4L2_DEVICE")) && *s)
    dev_path = s;
  if ((s = getenv ("PFEMU_V4L2_ALIGN")) && *s)
    userptr_align = strtoul (s, NULL, 0);
  if (userptr_align == 0)
    userptr_align = 1;
  report_path = getenv ("PFEMU_V4L2_REPORT");
  /* a fork while another thread holds the lock would leave the child's
   * copy locked: its close() of every fd before exec (g_spawn) would
   * hang */
  pthread_atfork (fork_prepare, fork_parent, fork_child);
  for (i = 0; i < (int) sizeof (ramp); i++)
    ramp[i] = (uint8_t) i;
}

/* close() without our interception (the lock may be held) */
static int
sys_close (int fd)
{
  REAL (int, close, (int));

  return real_close (fd);
}

static Dev *
dev_of (int fd)
{
  return fd >= 0 && fd < MAX_FDS ? fds[fd] : NULL;
}

/* Whether @fd may be a device fd, without the lock: entries change only
 * for fds being opened or closed, which no other thread uses then. */
static int
maybe_device (int fd)
{
  return fd >= 0 && fd < MAX_FDS
      && __atomic_load_n (&fds[fd], __ATOMIC_ACQUIRE) != NULL;
}

static int
is_device (const char *path)
{
  return path != NULL && strcmp (path, dev_path) == 0;
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

static void
unmap_dmabuf (Buf * b)
{
  REAL (int, munmap, (void *, size_t));

  if (b->dmamap)
    real_munmap (b->dmamap, b->dmalen);
  b->dmamap = NULL;
  b->dmafd = -1;
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
      sys_close (d->bufs[i].memfd);
    unmap_dmabuf (&d->bufs[i]);
  }
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
          sys_close (b->memfd);
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
  REAL (void *, mmap, (void *, size_t, int, int, int, off_t));
  void *p;

  *unmap_after = 0;
  if (d->memory == V4L2_MEMORY_USERPTR)
    return (uint8_t *) b->userptr;
  if (d->memory == V4L2_MEMORY_DMABUF)
    return b->dmamap;
  p = real_mmap (NULL, b->length, PROT_READ | PROT_WRITE, MAP_SHARED,
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
    REAL (void *, mmap, (void *, size_t, int, int, int, off_t));
    off_t size = lseek (vb->m.fd, 0, SEEK_END);
    void *p;

    if (size < 0 || (size_t) size < d->sizeimage)
      return -EINVAL;
    p = real_mmap (NULL, d->sizeimage, PROT_READ | PROT_WRITE, MAP_SHARED,
        vb->m.fd, 0);
    if (p == MAP_FAILED)
      return -EINVAL;
    b->dmafd = vb->m.fd;
    b->dmamap = p;
    b->dmalen = d->sizeimage;
    b->length = (size_t) size;
  }
  b->state = BUF_QUEUED;
  d->queued[(d->q_head + d->q_len) % MAX_BUFS] = vb->index;
  d->q_len++;
  stats.qbuf++;
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
    pthread_cond_wait (&d->cond, &lock);
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
  if (d->memory == V4L2_MEMORY_DMABUF)
    unmap_dmabuf (&d->bufs[index]);
  stats.dqbuf++;
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
  REAL (int, munmap, (void *, size_t));
  Dev *d = data;
  struct timespec next;
  uint64_t period_ns;

  clock_gettime (CLOCK_MONOTONIC, &next);
  pthread_mutex_lock (&lock);
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
    pthread_mutex_unlock (&lock);
    clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    pthread_mutex_lock (&lock);
    if (d->stop)
      break;
    if (d->q_len == 0) {
      stats.starved++;
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
      stats.held_writes++;
    pthread_mutex_unlock (&lock);
    if (mem)
      write_frame (d, mem, d->seq);
    if (unmap_after)
      real_munmap (mem, b->length);
    pthread_mutex_lock (&lock);
    clock_gettime (CLOCK_MONOTONIC, &now);
    b->ts.tv_sec = now.tv_sec;
    b->ts.tv_usec = now.tv_nsec / 1000;
    b->sequence = d->seq++;
    b->bytesused = d->sizeimage;
    b->state = BUF_DONE;
    d->done[(d->d_head + d->d_len) % MAX_BUFS] = index;
    d->d_len++;
    stats.frames++;
    if (d->memory == V4L2_MEMORY_USERPTR)
      stats.userptr_frames++;
    else if (d->memory == V4L2_MEMORY_MMAP)
      stats.mmap_frames++;
    else
      stats.dmabuf_frames++;
    if (write (d->wake_fd, &one, sizeof (one)) != sizeof (one))
      abort ();                 /* an eventfd counter cannot overflow here */
    pthread_cond_broadcast (&d->cond);
  }
  pthread_mutex_unlock (&lock);
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
    pthread_mutex_unlock (&lock);
    pthread_join (d->thread, NULL);
    pthread_mutex_lock (&lock);
    d->streaming = 0;
    pthread_cond_broadcast (&d->cond);
  }
  /* one count per done buffer */
  for (i = 0; i < d->d_len; i++)
    if (read (d->wake_fd, &v, sizeof (v)) != sizeof (v))
      break;
  for (i = 0; i < d->n_bufs; i++) {
    d->bufs[i].state = BUF_USER;
    if (d->memory == V4L2_MEMORY_DMABUF)
      unmap_dmabuf (&d->bufs[i]);
  }
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

static int
device_ioctl (Dev * d, int fd, unsigned long req, void *arg)
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

/* ---- the intercepted calls ---- */

static void
fake_stat (struct stat *st)
{
  memset (st, 0, sizeof (*st));
  st->st_mode = S_IFCHR | 0660;
  st->st_rdev = makedev (81, 250);
  st->st_nlink = 1;
  st->st_blksize = 4096;
}

EXPORT int
stat (const char *path, struct stat *st)
{
  REAL (int, stat, (const char *, struct stat *));

  if (is_device (path)) {
    fake_stat (st);
    return 0;
  }
  return real_stat (path, st);
}

EXPORT int
stat64 (const char *path, struct stat64 *st)
{
  REAL (int, stat64, (const char *, struct stat64 *));

  if (is_device (path)) {
    fake_stat ((struct stat *) st);
    return 0;
  }
  return real_stat64 (path, st);
}

static int
open_device (int flags)
{
  Dev *d;
  int fd;

  d = calloc (1, sizeof (*d));
  if (d == NULL) {
    errno = ENOMEM;
    return -1;
  }
  fd = eventfd (0, EFD_SEMAPHORE | EFD_CLOEXEC |
      ((flags & O_NONBLOCK) ? EFD_NONBLOCK : 0));
  if (fd < 0) {
    free (d);
    return -1;
  }
  /* ours, to signal and count done buffers (it shares the description) */
  d->wake_fd = fcntl (fd, F_DUPFD_CLOEXEC, 0);
  if (d->wake_fd < 0 || fd >= MAX_FDS) {
    sys_close (fd);
    if (d->wake_fd >= 0)
      sys_close (d->wake_fd);
    free (d);
    errno = EMFILE;
    return -1;
  }
  d->pixfmt = V4L2_PIX_FMT_YUYV;
  d->width = 640;
  d->height = 480;
  {
    struct v4l2_format f = {.type = V4L2_BUF_TYPE_VIDEO_CAPTURE };

    get_format (d, &f);
    d->bpl = f.fmt.pix.bytesperline;
    d->sizeimage = f.fmt.pix.sizeimage;
  }
  d->fps_num = 1;
  d->fps_den = 30;
  d->memory = V4L2_MEMORY_MMAP;
  d->refs = 1;
  pthread_cond_init (&d->cond, NULL);
  pthread_mutex_lock (&lock);
  __atomic_store_n (&fds[fd], d, __ATOMIC_RELEASE);
  stats.opens++;
  pthread_mutex_unlock (&lock);
  return fd;
}

EXPORT int
open (const char *path, int flags, ...)
{
  REAL (int, open, (const char *, int, ...));
  mode_t mode = 0;

  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;

    va_start (ap, flags);
    mode = va_arg (ap, mode_t);
    va_end (ap);
  }
  if (is_device (path))
    return open_device (flags);
  return real_open (path, flags, mode);
}

EXPORT int
open64 (const char *path, int flags, ...)
{
  REAL (int, open64, (const char *, int, ...));
  mode_t mode = 0;

  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;

    va_start (ap, flags);
    mode = va_arg (ap, mode_t);
    va_end (ap);
  }
  if (is_device (path))
    return open_device (flags);
  return real_open64 (path, flags, mode);
}

EXPORT int
openat (int dirfd, const char *path, int flags, ...)
{
  REAL (int, openat, (int, const char *, int, ...));
  mode_t mode = 0;

  if (flags & (O_CREAT | O_TMPFILE)) {
    va_list ap;

    va_start (ap, flags);
    mode = va_arg (ap, mode_t);
    va_end (ap);
  }
  if (is_device (path))
    return open_device (flags);
  return real_openat (dirfd, path, flags, mode);
}

static void
write_report (void)
{
  REAL (int, open, (const char *, int, ...));
  int fd;

  if (report_path == NULL)
    return;
  fd = real_open (report_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    return;
  dprintf (fd, "pfemu-v4l2 pid=%d frames=%llu starved=%llu held_writes=%llu "
      "refused=%llu userptr_frames=%llu mmap_frames=%llu dmabuf_frames=%llu "
      "qbuf=%llu dqbuf=%llu\n", (int) getpid (),
      (unsigned long long) stats.frames, (unsigned long long) stats.starved,
      (unsigned long long) stats.held_writes,
      (unsigned long long) stats.refused,
      (unsigned long long) stats.userptr_frames,
      (unsigned long long) stats.mmap_frames,
      (unsigned long long) stats.dmabuf_frames,
      (unsigned long long) stats.qbuf, (unsigned long long) stats.dqbuf);
  sys_close (fd);
}

EXPORT int
close (int fd)
{
  REAL (int, close, (int));
  Dev *d;

  if (!maybe_device (fd))
    return real_close (fd);
  pthread_mutex_lock (&lock);
  d = dev_of (fd);
  if (d) {
    __atomic_store_n (&fds[fd], NULL, __ATOMIC_RELEASE);
    if (--d->refs == 0) {
      streamoff (d, NULL);
      free_buffers (d);
      sys_close (d->wake_fd);
      pthread_cond_destroy (&d->cond);
      free (d);
      stats.closes++;
      write_report ();
    }
  }
  pthread_mutex_unlock (&lock);
  return real_close (fd);
}

EXPORT int
dup (int fd)
{
  REAL (int, dup, (int));
  int nfd = real_dup (fd);
  Dev *d;

  pthread_mutex_lock (&lock);
  d = dev_of (fd);
  if (d && nfd >= 0) {
    if (nfd >= MAX_FDS) {
      pthread_mutex_unlock (&lock);
      close (nfd);
      errno = EMFILE;
      return -1;
    }
    d->refs++;
    __atomic_store_n (&fds[nfd], d, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock (&lock);
  return nfd;
}

EXPORT int
ioctl (int fd, unsigned long req, ...)
{
  REAL (int, ioctl, (int, unsigned long, ...));
  va_list ap;
  void *arg;
  Dev *d;
  int res;

  va_start (ap, req);
  arg = va_arg (ap, void *);
  va_end (ap);

  if (!maybe_device (fd))
    return real_ioctl (fd, req, arg);
  pthread_mutex_lock (&lock);
  d = dev_of (fd);
  if (d == NULL) {
    pthread_mutex_unlock (&lock);
    return real_ioctl (fd, req, arg);
  }
  res = arg == NULL ? -EFAULT : device_ioctl (d, fd, req, arg);
  if (res == -EINVAL || res == -EBUSY || res == -EFAULT)
    stats.refused++;
  pthread_mutex_unlock (&lock);
  if (res < 0) {
    errno = -res;
    return -1;
  }
  return res;
}

EXPORT void *
mmap (void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  REAL (void *, mmap, (void *, size_t, int, int, int, off_t));
  uint32_t index;
  Dev *d;
  void *p;
  int i;

  if (!maybe_device (fd))
    return real_mmap (addr, len, prot, flags, fd, off);
  pthread_mutex_lock (&lock);
  d = dev_of (fd);
  if (d == NULL) {
    pthread_mutex_unlock (&lock);
    return real_mmap (addr, len, prot, flags, fd, off);
  }
  index = (uint32_t) (off / 4096);
  if (d->memory != V4L2_MEMORY_MMAP || off % 4096 != 0 || index >= d->n_bufs
      || len == 0 || len > d->bufs[index].length || !(flags & MAP_SHARED)) {
    stats.refused++;
    pthread_mutex_unlock (&lock);
    errno = EINVAL;
    return MAP_FAILED;
  }
  p = real_mmap (addr, len, prot, flags, d->bufs[index].memfd, 0);
  if (p != MAP_FAILED) {
    for (i = 0; i < MAX_MAPS && maps[i].addr; i++);
    if (i < MAX_MAPS) {
      maps[i].addr = p;
      maps[i].len = len;
      maps[i].dev = d;
      maps[i].index = index;
      d->bufs[index].n_maps++;
      __atomic_add_fetch (&n_maps, 1, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock (&lock);
  return p;
}

EXPORT void *
mmap64 (void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
  return mmap (addr, len, prot, flags, fd, off);
}

EXPORT int
munmap (void *addr, size_t len)
{
  REAL (int, munmap, (void *, size_t));
  int i;

  if (__atomic_load_n (&n_maps, __ATOMIC_ACQUIRE) == 0)
    return real_munmap (addr, len);
  pthread_mutex_lock (&lock);
  for (i = 0; i < MAX_MAPS; i++) {
    if (maps[i].addr == addr && maps[i].addr != NULL) {
      Dev *d = maps[i].dev;
      int j, alive = 0;

      /* the device may have gone (closed with the mapping kept) */
      for (j = 0; j < MAX_FDS && !alive; j++)
        alive = fds[j] == d;
      if (alive && maps[i].index < d->n_bufs)
        d->bufs[maps[i].index].n_maps--;
      maps[i].addr = NULL;
      __atomic_sub_fetch (&n_maps, 1, __ATOMIC_RELEASE);
      break;
    }
  }
  pthread_mutex_unlock (&lock);
  return real_munmap (addr, len);
}

/* ---- for tests in the same process ---- */

EXPORT void
pfemu_v4l2_get_stats (PfemuV4l2Stats * out)
{
  pthread_mutex_lock (&lock);
  *out = stats;
  pthread_mutex_unlock (&lock);
}

EXPORT void
pfemu_v4l2_hold (const void *addr, size_t len)
{
  int i;

  pthread_mutex_lock (&lock);
  for (i = 0; i < MAX_HOLDS; i++) {
    if (holds[i].addr == NULL) {
      holds[i].addr = addr;
      holds[i].len = len;
      break;
    }
  }
  pthread_mutex_unlock (&lock);
}

EXPORT void
pfemu_v4l2_unhold (const void *addr)
{
  int i;

  pthread_mutex_lock (&lock);
  for (i = 0; i < MAX_HOLDS; i++) {
    if (holds[i].addr == addr) {
      holds[i].addr = NULL;
      break;
    }
  }
  pthread_mutex_unlock (&lock);
}
