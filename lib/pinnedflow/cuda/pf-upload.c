/* pinnedflow: the upload engine, host frames to CUDA device memory
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Threading and lifetime:
 * - `submit_lock` serialises submits (the stream's order is the callers'
 *   order) and guards the bounce segment. It is taken before `lock`.
 * - `lock` guards the in-flight ring (head, count, entries, completing),
 *   the device pool (bufs[].out, pool_out), the sticky error, the stats
 *   and `refs`; `cond` is broadcast whenever one of them changes.
 * - The ring holds max_inflight entries, each with its own event and its
 *   own bounce slot (slot i belongs to entry i): an entry is reused only
 *   after it was popped, so its event and slot are idle then.
 * - Completing the oldest entry (waiting for its event, then calling the
 *   release callback) is done by one thread at a time (`completing`): the
 *   release thread, or whoever calls pf_uploader_poll()/flush() or a
 *   submit that found the ring full, for PF_UPLOADER_NO_THREAD. The wait
 *   and the callback run without `lock`; the entry is popped after its
 *   callback returned, so "nothing in flight" means every source went
 *   back.
 * - `refs`: one for the application (dropped by pf_uploader_free()), one
 *   per device frame out. The last one frees the device memory, the
 *   events, the stream (when ours) and the bounce segment (its
 *   registration goes with it, before its unmap).
 * - Every CUDA call runs with the engine's device current: the release
 *   thread sets it once; other threads enter/leave around their calls.
 * - The device frame pool (pf_uploader_upload(), the frames' release)
 *   is in pf-upload-frames.c; the consumers' streams of a frame in
 *   pf-upload-readers.c. Both use this file through pf-upload-private.h;
 *   this file calls neither, except pf_upload_readers_destroy() when the
 *   engine goes.
 * - The structs are in pf-upload-private.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "pf-upload.h"
#include "pf-upload-private.h"
#include "pf-cuda-registration.h"
#include "pf-msg-private.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_MAX_INFLIGHT 3
#define MAX_INFLIGHT_LIMIT 64
#define MAX_POOL_SIZE 256

/* ------------------------------------------------------------ lifetime */

static void
uploader_destroy (pf_uploader * up)
{
  const pf_cuda_runtime *rt = up->rt;
  unsigned int i;
  int prev = up_enter (up);
  /* teardown goes on whatever fails; a failure (already reported, or a
   * sticky error every call repeats) is not left in the caller's
   * last-error slot */
  int failed = 0;

  if (up->stream)
    failed |= rt->StreamSynchronize (up->stream) != PF_CUDA_SUCCESS;
  for (i = 0; up->bufs && i < up->pool_size; i++) {
    pool_buf *b = &up->bufs[i];
    /* Nothing may still write it when it is freed. */
    if (b->ready)
      failed |= rt->EventSynchronize (b->ready) != PF_CUDA_SUCCESS;
    /* ... nor read it: the consumers' streams of its last release */
    pf_upload_readers_destroy (up, b);
    if (b->base)
      failed |= rt->Free (b->base) != PF_CUDA_SUCCESS;
    if (b->ready)
      failed |= rt->EventDestroy (b->ready) != PF_CUDA_SUCCESS;
  }
  for (i = 0; up->ring && i < up->max_inflight; i++)
    if (up->ring[i].event)
      failed |= rt->EventDestroy (up->ring[i].event) != PF_CUDA_SUCCESS;
  if (up->own_stream && up->stream)
    failed |= rt->StreamDestroy (up->stream) != PF_CUDA_SUCCESS;
  if (failed)
    pf_cuda_take_last_error (rt);
  up_leave (up, prev);
  /* The last reference: unregistered, then unmapped. */
  if (up->bounce)
    pf_segment_unref (up->bounce);
  free (up->bufs);
  free (up->ring);
  pthread_cond_destroy (&up->cond);
  pthread_mutex_destroy (&up->lock);
  pthread_mutex_destroy (&up->submit_lock);
  free (up);
}

void
pf_upload_unref (pf_uploader * up)
{
  int last;

  pthread_mutex_lock (&up->lock);
  last = --up->refs == 0;
  pthread_mutex_unlock (&up->lock);
  if (last)
    uploader_destroy (up);
}

/* ------------------------------------------------------------ completion */

/* lock held. Completes the oldest entry: waits for its event (@blocking)
 * or only checks it, calls its release and done callbacks, then pops it
 * (lock dropped around the wait and the callbacks). Returns 1 when an
 * entry was completed, 0 when none was (empty ring, or not ready). */
static int
complete_oldest_locked (pf_uploader * up, int blocking, int enter)
{
  const pf_cuda_runtime *rt = up->rt;
  inflight_entry *e;
  pf_cuda_error err;
  int prev = -1, status = 0;

  while (up->completing)
    pthread_cond_wait (&up->cond, &up->lock);
  if (up->count == 0)
    return 0;
  e = &up->ring[up->head];
  up->completing = 1;
  pthread_mutex_unlock (&up->lock);

  if (enter)
    prev = up_enter (up);
  err = blocking ? rt->EventSynchronize (e->event) : rt->EventQuery (e->event);
  if (!blocking && err == PF_CUDA_ERROR_NOT_READY) {
    /* not an error: leave nothing in the thread's last-error slot */
    if (rt->PeekAtLastError () == PF_CUDA_ERROR_NOT_READY)
      rt->GetLastError ();
    if (enter)
      up_leave (up, prev);
    pthread_mutex_lock (&up->lock);
    up->completing = 0;
    pthread_cond_broadcast (&up->cond);
    return 0;
  }
  if (err != PF_CUDA_SUCCESS) {
    char desc[256];
    /* taken from this thread's last-error slot; a sticky one says so */
    int sticky = pf_cuda_take_last_error (rt);

    pf_cuda_error_describe (rt, err, desc, sizeof (desc));
    pthread_mutex_lock (&up->lock);
    if (up->async_err == 0) {
      up->async_err = -EIO;
      up->async_cuda_err = err;
      snprintf (up->error, sizeof (up->error), "%s: %s%s",
          blocking ? "cudaEventSynchronize" : "cudaEventQuery", desc,
          sticky ? " (sticky: the device's CUDA context is unusable until "
          "the process exits)" : "");
    }
    pthread_mutex_unlock (&up->lock);
    /* Nothing may read the source any more when it is released. */
    if (rt->StreamSynchronize (up->stream) != PF_CUDA_SUCCESS)
      pf_cuda_take_last_error (rt);
    status = -EIO;
  }
  if (enter)
    up_leave (up, prev);

  /* The entry stays in flight until its source went back: a flush or a
   * submit that waits for a free entry waits for the release too. */
  if (e->release)
    e->release (e->release_data, status);
  if (e->done)
    e->done (e->done_data, status);

  pthread_mutex_lock (&up->lock);
  e->release = NULL;
  e->release_data = NULL;
  e->done = NULL;
  e->done_data = NULL;
  up->head = (up->head + 1) % up->max_inflight;
  up->count--;
  up->completing = 0;
  pthread_cond_broadcast (&up->cond);
  return 1;
}

/* Waits for the oldest event, then releases its source: the producer's
 * slot goes back only after the DMA from it has completed. */
static void *
release_thread_func (void *data)
{
  pf_uploader *up = data;
  int prev;

  /* Our own thread: the device (context) stays current on it. */
  if (up->hooks.enter)
    prev = up->hooks.enter (up->hooks.data);
  else
    prev = up->rt->SetDevice (up->device_id);
  pthread_mutex_lock (&up->lock);
  for (;;) {
    while (up->count == 0 && !up->stopping)
      pthread_cond_wait (&up->cond, &up->lock);
    if (up->count == 0)
      break;
    complete_oldest_locked (up, 1, 0);
  }
  pthread_mutex_unlock (&up->lock);
  if (up->hooks.enter)
    up->hooks.leave (up->hooks.data, prev);
  return NULL;
}

/* lock held: waits until at most @max entries are in flight (completing
 * them itself without a release thread). Returns 1 when it waited. */
static int
wait_inflight_locked (pf_uploader * up, unsigned int max)
{
  int waited = 0;

  while (up->count > max) {
    waited = 1;
    if (up->have_thread)
      pthread_cond_wait (&up->cond, &up->lock);
    else
      complete_oldest_locked (up, 1, 1);
  }
  return waited;
}

/* ------------------------------------------------------------ new/free */

int
pf_uploader_new (const pf_uploader_config * config, pf_uploader ** out,
    char *msg, size_t msg_len)
{
  return pf_uploader_new_with_hooks (config, NULL, out, msg, msg_len);
}

int
pf_uploader_new_with_hooks (const pf_uploader_config * config,
    const pf_uploader_hooks * hooks, pf_uploader ** out, char *msg,
    size_t msg_len)
{
  pf_uploader *up;
  const pf_cuda_runtime *rt;
  pf_cuda_error err = PF_CUDA_SUCCESS;
  const char *call = NULL;
  unsigned int i;
  int res, prev;
  char desc[256];

  if (config == NULL || out == NULL || config->max_inflight > MAX_INFLIGHT_LIMIT
      || (hooks && (hooks->enter == NULL || hooks->leave == NULL))
      || config->pool_size > MAX_POOL_SIZE
      || (config->flags & ~(PF_UPLOADER_NO_THREAD | PF_UPLOADER_NO_BOUNCE))) {
    pf_set_msg (msg, msg_len, "invalid uploader configuration");
    return -EINVAL;
  }
  *out = NULL;
  /* With hooks the caller has opened the device and makes its context
   * current: only the table is needed. */
  if (hooks)
    res = pf_cuda_runtime_get (&rt, msg, msg_len);
  else
    res = pf_cuda_runtime_open_device (config->device_id, &rt, msg, msg_len);
  if (res < 0)
    return res;

  up = calloc (1, sizeof (*up));
  if (up == NULL)
    goto nomem;
  pthread_mutex_init (&up->submit_lock, NULL);
  pthread_mutex_init (&up->lock, NULL);
  pthread_cond_init (&up->cond, NULL);
  up->refs = 1;
  up->rt = rt;
  up->device_id = config->device_id;
  if (hooks)
    up->hooks = *hooks;
  up->flags = config->flags;
  up->max_inflight = config->max_inflight ? config->max_inflight :
      DEFAULT_MAX_INFLIGHT;
  up->pool_size = config->pool_size ? config->pool_size : up->max_inflight + 1;
  up->ring = calloc (up->max_inflight, sizeof (*up->ring));
  up->bufs = calloc (up->pool_size, sizeof (*up->bufs));
  if (up->ring == NULL || up->bufs == NULL) {
    uploader_destroy (up);
    goto nomem;
  }

  prev = up_enter (up);
  if (config->stream) {
    up->stream = config->stream;
  } else {
    call = "cudaStreamCreateWithFlags";
    err = rt->StreamCreateWithFlags (&up->stream, PF_CUDA_STREAM_NON_BLOCKING);
    if (err == PF_CUDA_SUCCESS)
      up->own_stream = 1;
    else
      up->stream = NULL;
  }
  /* blocking: a wait on them sleeps instead of spinning a core */
  for (i = 0; err == PF_CUDA_SUCCESS && i < up->max_inflight; i++) {
    call = "cudaEventCreateWithFlags";
    err = rt->EventCreateWithFlags (&up->ring[i].event,
        PF_CUDA_EVENT_BLOCKING_SYNC | PF_CUDA_EVENT_DISABLE_TIMING);
    if (err != PF_CUDA_SUCCESS)
      up->ring[i].event = NULL;
  }
  if (err != PF_CUDA_SUCCESS)
    pf_cuda_take_last_error (rt);
  up_leave (up, prev);
  if (err != PF_CUDA_SUCCESS) {
    pf_set_msg (msg, msg_len, "CUDA error in %s: %s (runtime %s, device %d)",
        call, pf_cuda_error_describe (rt, err, desc, sizeof (desc)),
        rt->library, up->device_id);
    uploader_destroy (up);
    return -EIO;
  }

  if (!(up->flags & PF_UPLOADER_NO_THREAD)) {
    if (pthread_create (&up->thread, NULL, release_thread_func, up) != 0) {
      uploader_destroy (up);
      pf_set_msg (msg, msg_len, "could not start the release thread");
      return -EAGAIN;
    }
    up->have_thread = 1;
  }
  *out = up;
  return 0;

nomem:
  pf_set_msg (msg, msg_len, "out of memory");
  return -ENOMEM;
}

int
pf_uploader_flush (pf_uploader * up)
{
  int res;

  pthread_mutex_lock (&up->lock);
  wait_inflight_locked (up, 0);
  res = up->async_err;
  pthread_mutex_unlock (&up->lock);
  return res;
}

void
pf_uploader_free (pf_uploader * up)
{
  if (up == NULL)
    return;
  pf_uploader_flush (up);
  if (up->have_thread) {
    pthread_mutex_lock (&up->lock);
    up->stopping = 1;
    pthread_cond_broadcast (&up->cond);
    pthread_mutex_unlock (&up->lock);
    pthread_join (up->thread, NULL);
    up->have_thread = 0;
  }
  pf_upload_unref (up);
}

/* ------------------------------------------------------------ submit */

static size_t
plane_span (const pf_upload_source * src, unsigned int p)
{
  return src->plane_stride[p] * (src->plane_rows[p] - 1) +
      src->plane_row_bytes[p];
}

int
pf_upload_check_source (const pf_upload_source * src)
{
  unsigned int p;

  if (src == NULL || src->n_planes == 0 || src->n_planes > PF_MAX_PLANES
      || src->n_segments > PF_MAX_CHUNKS)
    return -EINVAL;
  for (p = 0; p < src->n_planes; p++) {
    if (src->plane_data[p] == NULL || src->plane_rows[p] == 0
        || src->plane_row_bytes[p] == 0
        || src->plane_stride[p] < src->plane_row_bytes[p])
      return -EINVAL;
    /* overflow of stride * rows */
    if (src->plane_rows[p] > 1
        && src->plane_stride[p] > SIZE_MAX / (src->plane_rows[p] - 1))
      return -EINVAL;
  }
  for (p = 0; p < src->n_segments; p++)
    if (src->segments[p] == NULL)
      return -EINVAL;
  return 0;
}

static size_t
packed_size (const pf_upload_source * src)
{
  size_t size = 0;
  unsigned int p;

  for (p = 0; p < src->n_planes; p++)
    size += (size_t) src->plane_row_bytes[p] * src->plane_rows[p];
  return size;
}

/* Registers the source's segments (once per process) and tells whether
 * every plane lies in registered memory. */
static int
source_is_registered (pf_uploader * up, const pf_upload_source * src,
    int *registered_now)
{
  const pf_cuda_registration *regs[PF_MAX_CHUNKS];
  unsigned int i, p, n = 0;
  int created, all = 1;

  *registered_now = 0;
  for (i = 0; i < src->n_segments; i++) {
    created = 0;
    regs[n] = pf_cuda_segment_register (up->rt, up->device_id,
        src->segments[i], &created);
    if (created)
      *registered_now = 1;
    if (regs[n] != NULL)
      n++;
  }
  for (p = 0; p < src->n_planes && all; p++) {
    int covered = 0;
    for (i = 0; i < n && !covered; i++)
      covered = pf_cuda_registration_covers (regs[i], up->rt,
          src->plane_data[p], plane_span (src, p));
    all = covered;
  }
  return all;
}

/* submit_lock held, nothing in flight when it (re)creates: bounce slots of
 * at least @bytes each, one per ring entry, registered once. */
static int
ensure_bounce (pf_uploader * up, size_t bytes, int *registered_now)
{
  size_t page = pf_page_size ();
  size_t slot = (bytes + page - 1) / page * page;
  pf_segment *seg = NULL;
  int res, created = 0;

  if (up->bounce && up->bounce_slot >= bytes)
    return 0;
  pthread_mutex_lock (&up->lock);
  wait_inflight_locked (up, 0);
  pthread_mutex_unlock (&up->lock);
  if (up->bounce) {
    pf_segment_unref (up->bounce);
    up->bounce = NULL;
    up->bounce_reg = NULL;
  }
  if (slot == 0 || slot > SIZE_MAX / up->max_inflight)
    return -EINVAL;
  res = pf_segment_new ("pf-upload-bounce", (uint64_t) slot * up->max_inflight,
      PF_SEGMENT_FLAG_LOCK, &seg);
  if (res < 0)
    return res;
  up->bounce = seg;
  up->bounce_slot = slot;
  up->bounce_reg = pf_cuda_segment_register (up->rt, up->device_id, seg,
      &created);
  if (created)
    *registered_now = 1;
  if (up->bounce_reg == NULL || !up->bounce_reg->registered) {
    char desc[256] = "out of memory";
    int supported = -1;

    if (up->bounce_reg)
      pf_cuda_error_describe (up->rt, up->bounce_reg->error, desc,
          sizeof (desc));
    up->rt->DeviceGetAttribute (&supported,
        PF_CUDA_DEV_ATTR_HOST_REGISTER_SUPPORTED, up->device_id);
    /* The fallback (a device that cannot register host memory): the
     * bounce slots are used unregistered, so each copy from them is a
     * pageable cudaMemcpy2DAsync, which the runtime stages through its own
     * pinned buffer (synchronous with the host, slower). */
    snprintf (up->bounce_warning, sizeof (up->bounce_warning),
        "cudaHostRegister failed: %s (cudaDevAttrHostRegisterSupported %d)",
        desc, supported);
  }
  return 0;
}

/* One CPU copy of @src's planes, packed, into bounce slot @index. */
static const uint8_t *
stage (pf_uploader * up, const pf_upload_source * src, unsigned int index,
    size_t *plane_off)
{
  uint8_t *slot = (uint8_t *) pf_segment_get_base (up->bounce) +
      (size_t) index * up->bounce_slot;
  size_t off = 0;
  unsigned int p, r;

  for (p = 0; p < src->n_planes; p++) {
    const uint8_t *s = src->plane_data[p];
    size_t w = src->plane_row_bytes[p];

    plane_off[p] = off;
    if (src->plane_stride[p] == w) {
      memcpy (slot + off, s, w * src->plane_rows[p]);
    } else {
      for (r = 0; r < src->plane_rows[p]; r++)
        memcpy (slot + off + r * w, s + r * src->plane_stride[p], w);
    }
    off += w * src->plane_rows[p];
  }
  return slot;
}

/* submit_lock held, device current. Queues the copies of every plane and
 * records the events. */
static int
queue_copies (pf_uploader * up, const pf_upload_source * src,
    const pf_upload_dest * dest, const uint8_t * staged,
    const size_t *staged_off, inflight_entry * e, pf_upload_result * result)
{
  const pf_cuda_runtime *rt = up->rt;
  pf_cuda_error err = PF_CUDA_SUCCESS;
  int queued = 0;
  unsigned int p;

  result->failed_call = "cudaMemcpy2DAsync";
  for (p = 0; p < src->n_planes && err == PF_CUDA_SUCCESS; p++) {
    const void *s = staged ? staged + staged_off[p] : src->plane_data[p];
    size_t spitch = staged ? src->plane_row_bytes[p] : src->plane_stride[p];

    err = rt->Memcpy2DAsync (dest->plane_ptr[p], dest->plane_pitch[p], s,
        spitch, src->plane_row_bytes[p], src->plane_rows[p],
        PF_CUDA_MEMCPY_HOST_TO_DEVICE, up->stream);
    if (err == PF_CUDA_SUCCESS)
      queued = 1;
  }
  if (err == PF_CUDA_SUCCESS) {
    result->failed_call = "cudaEventRecord";
    if (dest->record_event)
      err = rt->EventRecord (dest->record_event, up->stream);
    if (err == PF_CUDA_SUCCESS)
      err = rt->EventRecord (e->event, up->stream);
    if (err == PF_CUDA_SUCCESS && dest->wait_stream) {
      result->failed_call = "cudaStreamWaitEvent";
      err = rt->StreamWaitEvent (dest->wait_stream, e->event, 0);
    }
  }
  if (err == PF_CUDA_SUCCESS) {
    result->failed_call = NULL;
    return 0;
  }
  result->cuda_error = err;
  pf_cuda_take_last_error (rt);
  /* Nothing may still read the source or the slot when they go back. */
  if (queued && rt->StreamSynchronize (up->stream) != PF_CUDA_SUCCESS)
    pf_cuda_take_last_error (rt);
  return -EIO;
}

int
pf_uploader_submit (pf_uploader * up, const pf_upload_source * src,
    const pf_upload_dest * dest, pf_upload_result * result)
{
  pf_upload_result dummy;
  const uint8_t *staged = NULL;
  size_t staged_off[PF_MAX_PLANES] = { 0 };
  inflight_entry *e;
  unsigned int index, p;
  int res, prev = -1, registered, registered_now = 0, waited, bounce_now = 0;

  if (result == NULL)
    result = &dummy;
  memset (result, 0, sizeof (*result));
  if (up == NULL || dest == NULL || (res = pf_upload_check_source (src)) < 0)
    return -EINVAL;
  for (p = 0; p < src->n_planes; p++)
    if (dest->plane_ptr[p] == NULL
        || dest->plane_pitch[p] < src->plane_row_bytes[p])
      return -EINVAL;

  pthread_mutex_lock (&up->submit_lock);
  pthread_mutex_lock (&up->lock);
  res = up->async_err;
  if (res < 0) {
    result->failed_call = "cudaEventSynchronize";
    result->cuda_error = up->async_cuda_err;
    result->sticky = 1;
  }
  pthread_mutex_unlock (&up->lock);
  if (res < 0)
    goto out;

  prev = up_enter (up);
  registered = source_is_registered (up, src, &registered_now);
  if (!registered && !(up->flags & PF_UPLOADER_NO_BOUNCE)) {
    res = ensure_bounce (up, packed_size (src), &bounce_now);
    if (res < 0)
      goto leave;
  }

  /* Bound the frames in flight: wait on the oldest when full. */
  pthread_mutex_lock (&up->lock);
  waited = wait_inflight_locked (up, up->max_inflight - 1);
  index = (up->head + up->count) % up->max_inflight;
  e = &up->ring[index];
  pthread_mutex_unlock (&up->lock);

  /* Pageable input: one CPU copy into a registered bounce slot, then the
   * same DMA. */
  if (!registered && up->bounce)
    staged = stage (up, src, index, staged_off);

  res = queue_copies (up, src, dest, staged, staged_off, e, result);
  if (res < 0)
    goto leave;
  /* The staging copy is done: the source can go back at once (before the
   * entry is published, so that its done callback comes after this). */
  if (staged && src->release)
    src->release (src->release_data, 0);

  pthread_mutex_lock (&up->lock);
  /* A staged source is not read by the copies: it goes back below. */
  e->release = staged ? NULL : src->release;
  e->release_data = staged ? NULL : src->release_data;
  e->done = src->done;
  e->done_data = src->done_data;
  up->count++;
  up->stats.frames++;
  up->stats.bytes += packed_size (src);
  if (registered)
    up->stats.pinned_copies++;
  else if (staged)
    up->stats.staged_copies++;
  if (!registered && (staged == NULL || !up->bounce_reg
          || !up->bounce_reg->registered))
    up->stats.pageable_copies++;
  up->stats.registrations += registered_now + bounce_now;
  if (waited)
    up->stats.waits_full++;
  if (up->count > up->stats.inflight_max)
    up->stats.inflight_max = up->count;
  result->inflight = up->count;
  pthread_cond_broadcast (&up->cond);
  pthread_mutex_unlock (&up->lock);

  result->staged = staged != NULL;
  result->registered_now = registered_now || bounce_now;
  result->waited_full = waited;

leave:
  up_leave (up, prev);
out:
  pthread_mutex_unlock (&up->submit_lock);
  return res;
}

/* ------------------------------------------------------------ queries */

int
pf_uploader_poll (pf_uploader * up, int timeout_ms)
{
  int res;

  pthread_mutex_lock (&up->lock);
  if (timeout_ms < 0) {
    wait_inflight_locked (up, 0);
  } else if (!up->have_thread) {
    while (complete_oldest_locked (up, 0, 1));
  }
  res = up->async_err < 0 ? up->async_err : (int) up->count;
  pthread_mutex_unlock (&up->lock);
  return res;
}

pf_cuda_stream
pf_uploader_get_stream (pf_uploader * up)
{
  return up->stream;
}

const pf_cuda_runtime *
pf_uploader_get_runtime (pf_uploader * up)
{
  return up->rt;
}

int
pf_uploader_get_device (pf_uploader * up)
{
  return up->device_id;
}

unsigned int
pf_uploader_get_inflight (pf_uploader * up)
{
  unsigned int n;

  pthread_mutex_lock (&up->lock);
  n = up->count;
  pthread_mutex_unlock (&up->lock);
  return n;
}

const char *
pf_uploader_get_error (pf_uploader * up)
{
  const char *msg;

  pthread_mutex_lock (&up->lock);
  msg = up->async_err < 0 ? up->error : NULL;
  pthread_mutex_unlock (&up->lock);
  return msg;
}

void
pf_uploader_get_stats (pf_uploader * up, pf_uploader_stats * stats)
{
  pthread_mutex_lock (&up->lock);
  *stats = up->stats;
  pthread_mutex_unlock (&up->lock);
}

const void *
pf_uploader_get_bounce_registration (pf_uploader * up)
{
  const void *reg;

  pthread_mutex_lock (&up->submit_lock);
  reg = up->bounce_reg;
  pthread_mutex_unlock (&up->submit_lock);
  return reg;
}

const char *
pf_uploader_get_bounce_warning (pf_uploader * up)
{
  const char *w;

  pthread_mutex_lock (&up->submit_lock);
  w = up->bounce_warning[0] ? up->bounce_warning : NULL;
  pthread_mutex_unlock (&up->submit_lock);
  return w;
}
