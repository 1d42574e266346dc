/* pinnedflow: the consumers' streams of a device frame, so that a pool
 * buffer is written again only after the reads queued on them
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The rule (pf-upload.h, pf_device_frame): the next upload into a buffer
 * waits, on the engine's stream, for the work queued before the release
 * on every stream that named itself a reader (pf_device_frame_read_on(),
 * which __dlpack__(stream=) reaches through pf_dlpack_sync_device_frame()).
 * Per buffer:
 *   read_on    the reader's stream waits for the frame's event; the stream
 *              is added to reader[] (at most PF_DEVICE_FRAME_MAX_READERS);
 *   release    an event (reader_event[i], made on first use, blocking sync
 *              for the rare host wait) is recorded on each reader's stream;
 *              n_recorded of them are pending;
 *   next write the engine's stream waits for the pending events
 *              (cudaStreamWaitEvent), before the copies are queued;
 *   cudaFree   (a reallocation, the engine's end) the host waits for them.
 *
 * Threading: reader[] and n_readers change under the engine's `lock` (two
 * threads may export one frame at once); the CUDA calls of read_on run
 * with it held (none of them blocks). At release the list is taken under
 * the lock and the records run without it, before the buffer is put back;
 * n_recorded and the events are then touched only by the thread that owns
 * the buffer (the one releasing it, then the upload that took it).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "pf-upload.h"
#include "pf-upload-private.h"

#include <errno.h>
#include <string.h>

/* What the runtime is given for a stream named by the caller: the legacy
 * default stream is NULL for the (non-per-thread) runtime API; the
 * per-thread one keeps its handle. */
static pf_cuda_stream
wait_handle (pf_cuda_stream s)
{
  return s == PF_CUDA_STREAM_LEGACY ? NULL : s;
}

/* What is recorded on at release, maybe on another thread: the per-thread
 * default stream of the releasing thread would be the wrong stream, the
 * legacy one orders after all of them. */
static pf_cuda_stream
record_handle (pf_cuda_stream s)
{
  return s == PF_CUDA_STREAM_LEGACY || s == PF_CUDA_STREAM_PER_THREAD ?
      NULL : s;
}

int
pf_device_frame_read_on (pf_device_frame * frame, pf_cuda_stream stream,
    unsigned int flags)
{
  pool_buf *b = (pool_buf *) frame;
  pf_uploader *up;
  const pf_cuda_runtime *rt;
  pf_cuda_error err = PF_CUDA_SUCCESS;
  pf_cuda_stream rec = record_handle (stream);
  unsigned int i;
  int res = 0, prev;

  if (frame == NULL || b->owner == NULL
      || (flags & ~PF_DEVICE_FRAME_READ_NO_WAIT))
    return -EINVAL;
  up = b->owner;
  rt = up->rt;
  pthread_mutex_lock (&up->lock);
  if (!b->out) {
    pthread_mutex_unlock (&up->lock);
    return -EINVAL;
  }
  for (i = 0; i < b->n_readers && b->reader[i] != rec; i++);
  if (i == PF_DEVICE_FRAME_MAX_READERS) {
    pthread_mutex_unlock (&up->lock);
    return -ENOSPC;
  }
  prev = up_enter (up);
  if (b->reader_event[i] == NULL) {
    err = rt->EventCreateWithFlags (&b->reader_event[i],
        PF_CUDA_EVENT_BLOCKING_SYNC | PF_CUDA_EVENT_DISABLE_TIMING);
    if (err != PF_CUDA_SUCCESS)
      b->reader_event[i] = NULL;
  }
  if (err == PF_CUDA_SUCCESS && frame->event
      && !(flags & PF_DEVICE_FRAME_READ_NO_WAIT))
    err = rt->StreamWaitEvent (wait_handle (stream), frame->event, 0);
  if (err != PF_CUDA_SUCCESS) {
    pf_cuda_take_last_error (rt);       /* reported here */
    res = -EIO;
  } else if (i == b->n_readers) {
    b->reader[b->n_readers++] = rec;
  }
  up_leave (up, prev);
  pthread_mutex_unlock (&up->lock);
  return res;
}

void
pf_upload_readers_record (pf_uploader * up, pool_buf * b)
{
  const pf_cuda_runtime *rt = up->rt;
  pf_cuda_stream streams[PF_DEVICE_FRAME_MAX_READERS];
  unsigned int i, n, ok = 0, failed = 0;
  int prev;

  pthread_mutex_lock (&up->lock);
  n = b->n_readers;
  memcpy (streams, b->reader, n * sizeof (streams[0]));
  b->n_readers = 0;
  pthread_mutex_unlock (&up->lock);
  if (n == 0)
    return;

  prev = up_enter (up);
  for (i = 0; i < n; i++) {
    /* packed: the events of the streams recorded on come first */
    pf_cuda_event ev = b->reader_event[i];

    if (rt->EventRecord (ev, streams[i]) == PF_CUDA_SUCCESS) {
      b->reader_event[i] = b->reader_event[ok];
      b->reader_event[ok++] = ev;
    } else {
      /* a stream gone before the release (the caller broke the rule):
       * nothing to wait for on it */
      pf_cuda_take_last_error (rt);
      failed++;
    }
  }
  up_leave (up, prev);
  b->n_recorded = ok;
  if (failed) {
    pthread_mutex_lock (&up->lock);
    up->stats.reader_errors += failed;
    pthread_mutex_unlock (&up->lock);
  }
}

int
pf_upload_readers_wait (pf_uploader * up, pool_buf * b,
    pf_upload_result * result)
{
  const pf_cuda_runtime *rt = up->rt;
  pf_cuda_error err = PF_CUDA_SUCCESS;
  unsigned int i;

  if (b->n_recorded == 0)
    return 0;
  for (i = 0; i < b->n_recorded && err == PF_CUDA_SUCCESS; i++)
    err = rt->StreamWaitEvent (up->stream, b->reader_event[i], 0);
  if (err != PF_CUDA_SUCCESS) {
    result->failed_call = "cudaStreamWaitEvent";
    result->cuda_error = err;
    pf_cuda_take_last_error (rt);
    /* the buffer is not written: the events stay pending */
    return -EIO;
  }
  b->n_recorded = 0;
  pthread_mutex_lock (&up->lock);
  up->stats.reader_waits++;
  pthread_mutex_unlock (&up->lock);
  return 0;
}

void
pf_upload_readers_sync (pf_uploader * up, pool_buf * b)
{
  unsigned int i;

  for (i = 0; i < b->n_recorded; i++)
    if (up->rt->EventSynchronize (b->reader_event[i]) != PF_CUDA_SUCCESS)
      pf_cuda_take_last_error (up->rt);
  b->n_recorded = 0;
}

void
pf_upload_readers_destroy (pf_uploader * up, pool_buf * b)
{
  unsigned int i;

  pf_upload_readers_sync (up, b);
  for (i = 0; i < PF_DEVICE_FRAME_MAX_READERS; i++)
    if (b->reader_event[i]) {
      up->rt->EventDestroy (b->reader_event[i]);
      b->reader_event[i] = NULL;
    }
}
