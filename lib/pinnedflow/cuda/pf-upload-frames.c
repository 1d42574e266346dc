/* pinnedflow: the upload engine's device frame pool
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pf_uploader_upload(): a pool buffer (device memory, pitched, one event)
 * is taken, (re)allocated to fit the frame, made to wait for the readers
 * of its last frame (pf-upload-readers.c), then filled by
 * pf_uploader_submit() (pf-upload.c) and handed out as a pf_device_frame.
 * pf_device_frame_release() records the readers' events and puts the
 * buffer back; pf_device_frame_download() copies one back to the host.
 *
 * Locking: `bufs[].out`, `pool_out` and the pool statistics change under
 * the engine's `lock`; a buffer that is out belongs to its holder alone.
 * Each frame out holds one engine reference (pf_upload_unref() at put).
 * Calls go one way: this file -> pf-upload.c / pf-upload-readers.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "pf-upload.h"
#include "pf-upload-private.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

/* lock held: a free buffer, or NULL. */
static pool_buf *
take_buf_locked (pf_uploader * up)
{
  unsigned int i;

  for (i = 0; i < up->pool_size; i++)
    if (!up->bufs[i].out) {
      up->bufs[i].out = 1;
      up->pool_out++;
      if (up->pool_out > up->stats.pool_out_max)
        up->stats.pool_out_max = up->pool_out;
      up->refs++;
      return &up->bufs[i];
    }
  return NULL;
}

static int
wait_buf (pf_uploader * up, int timeout_ms, pool_buf ** out)
{
  struct timespec deadline;
  int res = 0, counted = 0;

  if (timeout_ms > 0) {
    clock_gettime (CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long) (timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
      deadline.tv_sec++;
      deadline.tv_nsec -= 1000000000L;
    }
  }
  pthread_mutex_lock (&up->lock);
  while ((*out = take_buf_locked (up)) == NULL) {
    if (timeout_ms == 0) {
      res = -ETIMEDOUT;
      break;
    }
    if (!counted) {
      up->stats.pool_waits++;
      counted = 1;
    }
    if (timeout_ms < 0)
      pthread_cond_wait (&up->cond, &up->lock);
    else if (pthread_cond_timedwait (&up->cond, &up->lock, &deadline)
        == ETIMEDOUT && (*out = take_buf_locked (up)) == NULL) {
      res = -ETIMEDOUT;
      break;
    }
  }
  pthread_mutex_unlock (&up->lock);
  return res;
}

static void
put_buf (pool_buf * b)
{
  pf_uploader *up = b->owner;

  /* before it is free: the next upload waits for these */
  pf_upload_readers_record (up, b);
  pthread_mutex_lock (&up->lock);
  b->out = 0;
  up->pool_out--;
  pthread_cond_broadcast (&up->cond);
  pthread_mutex_unlock (&up->lock);
  pf_upload_unref (up);
}

/* Device current. (Re)allocates @b for @width bytes x @rows. */
static int
ensure_buf_memory (pf_uploader * up, pool_buf * b, size_t width, size_t rows,
    pf_upload_result * result)
{
  const pf_cuda_runtime *rt = up->rt;
  pf_cuda_error err;

  b->owner = up;
  if (b->ready == NULL) {
    err = rt->EventCreateWithFlags (&b->ready,
        PF_CUDA_EVENT_BLOCKING_SYNC | PF_CUDA_EVENT_DISABLE_TIMING);
    if (err != PF_CUDA_SUCCESS) {
      b->ready = NULL;
      result->failed_call = "cudaEventCreateWithFlags";
      goto failed;
    }
  }
  if (b->base && b->width >= width && b->rows >= rows)
    return 0;
  if (b->base) {
    /* copies into it were queued earlier, and reads on the consumers'
     * streams: they complete first */
    if (rt->EventSynchronize (b->ready) != PF_CUDA_SUCCESS)
      pf_cuda_take_last_error (rt);     /* the next call reports a sticky one */
    pf_upload_readers_sync (up, b);
    if (rt->Free (b->base) != PF_CUDA_SUCCESS)
      pf_cuda_take_last_error (rt);
    b->base = NULL;
  }
  err = rt->MallocPitch (&b->base, &b->pitch, width, rows);
  if (err != PF_CUDA_SUCCESS) {
    b->base = NULL;
    result->failed_call = "cudaMallocPitch";
    goto failed;
  }
  b->width = width;
  b->rows = rows;
  return 0;

failed:
  result->cuda_error = err;
  pf_cuda_take_last_error (rt);
  return -EIO;
}

int
pf_uploader_upload (pf_uploader * up, const pf_upload_source * src,
    int timeout_ms, pf_device_frame ** out, pf_upload_result * result)
{
  pf_upload_result dummy;
  pf_upload_dest dest;
  pf_device_frame *f;
  pool_buf *b = NULL;
  size_t width = 0, rows = 0, row_off[PF_MAX_PLANES];
  unsigned int p;
  int res, prev;

  if (result == NULL)
    result = &dummy;
  memset (result, 0, sizeof (*result));
  if (up == NULL || out == NULL || (res = pf_upload_check_source (src)) < 0)
    return -EINVAL;
  *out = NULL;
  for (p = 0; p < src->n_planes; p++) {
    row_off[p] = rows;
    rows += src->plane_rows[p];
    if (src->plane_row_bytes[p] > width)
      width = src->plane_row_bytes[p];
  }
  if ((res = wait_buf (up, timeout_ms, &b)) < 0)
    return res;

  prev = up_enter (up);
  res = ensure_buf_memory (up, b, width, rows, result);
  /* the consumers of its last frame read before it is written again */
  if (res == 0)
    res = pf_upload_readers_wait (up, b, result);
  up_leave (up, prev);
  if (res < 0)
    goto failed;

  memset (&dest, 0, sizeof (dest));
  for (p = 0; p < src->n_planes; p++) {
    dest.plane_ptr[p] = (uint8_t *) b->base + b->pitch * row_off[p];
    dest.plane_pitch[p] = b->pitch;
  }
  dest.record_event = b->ready;
  res = pf_uploader_submit (up, src, &dest, result);
  if (res < 0)
    goto failed;

  f = &b->frame;
  memset (f, 0, sizeof (*f));
  f->device_id = up->device_id;
  f->n_planes = src->n_planes;
  f->pitch = b->pitch;
  for (p = 0; p < src->n_planes; p++) {
    f->data[p] = dest.plane_ptr[p];
    f->plane_rows[p] = src->plane_rows[p];
    f->plane_row_bytes[p] = src->plane_row_bytes[p];
    f->plane_offset[p] = (uint64_t) b->pitch * row_off[p];
  }
  f->base = b->base;
  f->alloc_size = b->pitch * b->rows;
  f->event = b->ready;
  f->stream = up->stream;
  *out = f;
  return 0;

failed:
  put_buf (b);
  return res;
}

void
pf_device_frame_release (pf_device_frame * frame)
{
  if (frame == NULL)
    return;
  put_buf ((pool_buf *) frame);
}

int
pf_device_frame_download (const pf_device_frame * frame, void *dst,
    size_t dst_size)
{
  const pool_buf *b = (const pool_buf *) frame;
  const pf_cuda_runtime *rt;
  pf_cuda_error err;
  size_t need = 0, off = 0;
  unsigned int p;
  int prev;

  if (frame == NULL || dst == NULL)
    return -EINVAL;
  rt = b->owner->rt;
  for (p = 0; p < frame->n_planes; p++)
    need += (size_t) frame->plane_row_bytes[p] * frame->plane_rows[p];
  if (dst_size < need)
    return -ENOSPC;
  prev = pf_cuda_device_enter (rt, frame->device_id);
  err = rt->EventSynchronize (frame->event);
  for (p = 0; err == PF_CUDA_SUCCESS && p < frame->n_planes; p++) {
    err = rt->Memcpy2D ((uint8_t *) dst + off, frame->plane_row_bytes[p],
        frame->data[p], frame->pitch, frame->plane_row_bytes[p],
        frame->plane_rows[p], PF_CUDA_MEMCPY_DEVICE_TO_HOST);
    off += (size_t) frame->plane_row_bytes[p] * frame->plane_rows[p];
  }
  if (err != PF_CUDA_SUCCESS)
    pf_cuda_take_last_error (rt);
  pf_cuda_device_leave (rt, frame->device_id, prev);
  return err == PF_CUDA_SUCCESS ? 0 : -EIO;
}
