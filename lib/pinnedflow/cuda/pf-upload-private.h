/* pinnedflow: the upload engine's internals, shared by pf-upload.c (the
 * engine, its ring and its device pool) and pf-upload-readers.c (the
 * consumers' streams of a device frame)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Not installed. The locking rules are those at the top of pf-upload.c.
 */
#ifndef __PF_UPLOAD_PRIVATE_H__
#define __PF_UPLOAD_PRIVATE_H__

#include "pf-upload.h"
#include "pf-cuda-registration.h"

#include <pthread.h>

typedef struct
{
  pf_cuda_event event;          /* recorded after the entry's copies */
  pf_upload_release_func release;       /* NULL once called */
  void *release_data;
  pf_upload_release_func done;
  void *done_data;
} inflight_entry;

typedef struct
{
  pf_device_frame frame;        /* first: pf_device_frame_release() */
  pf_uploader *owner;
  int out;                      /* handed to the application */
  pf_cuda_event ready;          /* the frame's event */
  void *base;                   /* cudaMallocPitch, or NULL */
  size_t pitch, width, rows;    /* of base */
  /* The consumers' streams (pf-upload-readers.c; lock): named while the
   * frame is out, an event recorded on each at release, and the engine's
   * stream made to wait on those before the buffer is written again. */
  pf_cuda_stream reader[PF_DEVICE_FRAME_MAX_READERS];
  pf_cuda_event reader_event[PF_DEVICE_FRAME_MAX_READERS];      /* lazily made */
  unsigned int n_readers;       /* named since the frame went out */
  unsigned int n_recorded;      /* events recorded at the last release,
                                 * not waited for yet */
} pool_buf;

struct pf_uploader
{
  pthread_mutex_t submit_lock;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int refs;

  const pf_cuda_runtime *rt;
  int device_id;
  pf_uploader_hooks hooks;      /* enter NULL: pf_cuda_device_enter */
  pf_cuda_stream stream;
  int own_stream;
  unsigned int flags, max_inflight, pool_size;

  /* the ring (lock) */
  inflight_entry *ring;
  unsigned int head, count;
  int completing;

  /* release thread */
  pthread_t thread;
  int have_thread, stopping;

  /* sticky asynchronous error (lock; never cleared) */
  int async_err;
  pf_cuda_error async_cuda_err;
  char error[512];

  /* bounce slots (submit_lock) */
  pf_segment *bounce;
  size_t bounce_slot;
  const pf_cuda_registration *bounce_reg;
  char bounce_warning[512];

  /* device pool (lock) */
  pool_buf *bufs;
  unsigned int pool_out;

  pf_uploader_stats stats;
};

/* The engine's device (or the caller's context) made current. */
static inline int
up_enter (pf_uploader * up)
{
  if (up->hooks.enter)
    return up->hooks.enter (up->hooks.data);
  return pf_cuda_device_enter (up->rt, up->device_id);
}

static inline void
up_leave (pf_uploader * up, int prev)
{
  if (up->hooks.enter)
    up->hooks.leave (up->hooks.data, prev);
  else
    pf_cuda_device_leave (up->rt, up->device_id, prev);
}

/* pf-upload.c, for pf-upload-frames.c. Drops one engine reference; the
 * last one destroys it (device current or not). */
void pf_upload_unref (pf_uploader * up);

/* 0, or -EINVAL where @src's planes or segments are not usable. */
int pf_upload_check_source (const pf_upload_source * src);

/* pf-upload-readers.c. @b is the caller's: out (taken by an upload, or
 * being released), so no other thread writes its buffer. */

/* At release (lock not held): an event recorded on each stream named by
 * pf_device_frame_read_on(); enters the device itself. */
void pf_upload_readers_record (pf_uploader * up, pool_buf * b);

/* Device current, before the next copy into @b is queued: the engine's
 * stream waits for the events of the last release. 0 or -EIO (@result
 * names the call). */
int pf_upload_readers_wait (pf_uploader * up, pool_buf * b,
    pf_upload_result * result);

/* Device current: the host waits for those events (before cudaFree). */
void pf_upload_readers_sync (pf_uploader * up, pool_buf * b);

/* Device current, the engine going away: synced, then destroyed. */
void pf_upload_readers_destroy (pf_uploader * up, pool_buf * b);

#endif /* __PF_UPLOAD_PRIVATE_H__ */
