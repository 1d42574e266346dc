/* pinnedflow: the upload engine, host frames to CUDA device memory
 * (plain C, no GLib)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * One engine for every user: the pinnedcudaupload element and the node API
 * (pf-node-cuda.h) both queue their copies here. Per frame it
 *   1. makes sure the segments the planes lie in are registered (once per
 *      segment per process, pf-cuda-registration.h);
 *   2. queues one cudaMemcpy2DAsync per plane on its stream: straight from
 *      the registered segment (DMA), or, where the planes are not in
 *      registered memory, after one CPU copy into a registered bounce slot
 *      of the engine ("staged");
 *   3. records an event after the copies;
 *   4. gives the host frame back (the source's release callback) only once
 *      that event has completed: on the engine's release thread, or in
 *      pf_uploader_poll() for an engine made with PF_UPLOADER_NO_THREAD.
 * At most max_inflight frames have copies outstanding: a submit waits for
 * the oldest when full. A failed wait for an event is sticky: every later
 * submit fails with it (-EIO, pf_uploader_get_error()).
 *
 * Destinations: the engine's own bounded pool of pitched device buffers
 * (pf_uploader_upload() returns a pf_device_frame), or device memory the
 * caller owns (pf_uploader_submit() with a pf_upload_dest: the element's
 * GstCudaMemory).
 *
 * Threading: pf_uploader_* may be called from any thread; submits are
 * serialised by the engine's lock (the caller's own order is the stream's).
 * Release callbacks run on the release thread (or in the thread calling
 * pf_uploader_poll()/pf_uploader_flush()/pf_uploader_free()), never with
 * the engine's lock held; they must not call pf_uploader_submit().
 * Every CUDA call is made with the engine's device current (the caller's
 * context is restored).
 *
 * Lifecycle: pf_uploader_new/_free. The engine's memory lives on while
 * device frames from its pool are out: pf_uploader_free() waits for every
 * copy, releases every host frame, and the device pool goes when the last
 * pf_device_frame is released.
 */
#ifndef __PF_UPLOAD_H__
#define __PF_UPLOAD_H__

#include <stddef.h>
#include <stdint.h>

#include <pinnedflow/pf-api.h>
#include <pinnedflow/pf-cuda.h>
#include <pinnedflow/pf-frame.h>
#include <pinnedflow/pf-segment.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Since: 0.1 */
typedef struct pf_uploader pf_uploader;

/* Since: 0.1 */
enum pf_uploader_flags {
  /* No release thread: host frames go back in pf_uploader_poll(). */
  PF_UPLOADER_NO_THREAD = 1u << 0,
  /* Never stage: a frame not in registered memory is copied pageable
   * (cudaMemcpy2DAsync from it, which the runtime stages itself and which
   * returns only when it has read the source). */
  PF_UPLOADER_NO_BOUNCE = 1u << 1,
};

/* Zero-initialise, then set what you need.
 * Since: 0.1
 */
typedef struct {
  int device_id;
  /* cudaStream_t to queue on (the caller keeps it alive longer than the
   * engine), or NULL: the engine creates its own cudaStreamNonBlocking. */
  pf_cuda_stream stream;
  /* Frames whose copies may be outstanding at once; 0 means 3. */
  unsigned int max_inflight;
  /* Device buffers in the engine's pool (pf_uploader_upload()); 0 means
   * max_inflight + 1. Frames out count against it. */
  unsigned int pool_size;
  unsigned int flags;           /* pf_uploader_flags */
  unsigned int reserved[4];
} pf_uploader_config;

/* Called once per submitted frame when no copy reads the host memory any
 * more (its event completed, or a copy failed and the stream was
 * synchronised): the host frame may go back to its producer. @status is 0,
 * or the negative errno of a failed wait (the bytes may be incomplete).
 * Since: 0.1
 */
typedef void (*pf_upload_release_func) (void *user_data, int status);

/* A host frame: up to PF_MAX_PLANES planes of rows.
 * Since: 0.1
 */
typedef struct {
  uint32_t n_planes;
  uint32_t reserved0;
  const void *plane_data[PF_MAX_PLANES];        /* first byte of the plane */
  size_t plane_stride[PF_MAX_PLANES];   /* bytes from row to row */
  uint32_t plane_rows[PF_MAX_PLANES];
  uint32_t plane_row_bytes[PF_MAX_PLANES];      /* bytes copied per row */
  /* The segments the planes lie in (registered here once each), or none:
   * planes outside registered segments are staged. */
  pf_segment *segments[PF_MAX_CHUNKS];
  uint32_t n_segments;
  uint32_t reserved1;
  pf_upload_release_func release;       /* may be NULL */
  void *release_data;
  /* Optional: called once per submitted frame when its copy's event
   * completed (or failed: status -EIO), after @release; for a staged frame
   * @release ran at submit time already. Same thread rules as @release. */
  pf_upload_release_func done;
  void *done_data;
} pf_upload_source;

/* Device memory the caller owns, one pointer and pitch per plane.
 * Since: 0.1
 */
typedef struct {
  void *plane_ptr[PF_MAX_PLANES];
  size_t plane_pitch[PF_MAX_PLANES];
  /* Optional: an event of the caller's, recorded on the engine's stream
   * after the copies (the output's "ready" event), or NULL. */
  pf_cuda_event record_event;
  /* Optional: a stream made to wait for the copies (cudaStreamWaitEvent
   * on the engine's event after them: the consumer's stream orders its
   * reads after the copy on the GPU, no host wait), or NULL. */
  pf_cuda_stream wait_stream;
  void *reserved[2];
} pf_upload_dest;

/* What one submit did.
 * Since: 0.1
 */
typedef struct {
  int staged;                   /* copied through a bounce slot first */
  int registered_now;           /* a segment was registered by this submit */
  unsigned int inflight;        /* frames in flight after it */
  int waited_full;              /* waited for a free in-flight slot */
  /* On -EIO: the CUDA call that failed and its error (else NULL, 0), and
   * whether the failure was an earlier asynchronous one (sticky). */
  const char *failed_call;
  pf_cuda_error cuda_error;
  int sticky;
} pf_upload_result;

/**
 * pf_device_frame:
 *
 * A frame in device memory from the engine's pool. Read-only for the
 * application; valid until pf_device_frame_release(). Before reading
 * data[] on another stream, make it wait for @event
 * (cudaStreamWaitEvent(your_stream, event, 0)) or wait on the host
 * (cudaEventSynchronize(event)); pf_device_frame_read_on() does the
 * first and also keeps the buffer from being rewritten under your reads.
 * @stream is the stream the copies were queued on. The host frame it came
 * from was released by the engine once @event completed.
 *
 * The one rule of reuse: the buffer is written again (by a later upload)
 * only after the work queued before pf_device_frame_release() on the
 * engine's stream and on every stream named with
 * pf_device_frame_read_on(). Work on any other stream must have completed
 * before the release.
 *
 * Since: 0.1
 */
typedef struct {
  int device_id;
  uint32_t n_planes;
  void *data[PF_MAX_PLANES];    /* device pointer of each plane */
  size_t pitch;                 /* bytes from row to row, every plane */
  uint32_t plane_rows[PF_MAX_PLANES];
  uint32_t plane_row_bytes[PF_MAX_PLANES];
  uint64_t plane_offset[PF_MAX_PLANES]; /* of data[p] from base */
  void *base;                   /* the allocation (cudaMallocPitch) */
  size_t alloc_size;            /* pitch * rows of the allocation */
  /* What the source said it was (set by the caller of the engine, e.g.
   * pf_node_frame_upload()); width/height 0 and format "" when unknown. */
  uint32_t width, height;
  char format[16];
  uint32_t pixel_stride;        /* bytes per pixel of plane 0, or 0 */
  uint32_t reserved0;
  uint64_t seq, pts;
  pf_cuda_event event;          /* cudaEvent_t: completed = bytes valid */
  pf_cuda_stream stream;        /* cudaStream_t the copies ran on */
  uint64_t reserved[4];
} pf_device_frame;

/**
 * pf_uploader_new:
 * @msg: (nullable): deprecated, pass NULL (and @msg_len 0): a copy of
 *   pf_cuda_runtime_error()'s text on failure
 *
 * Loads the runtime, opens the device (pf_cuda_runtime_open_device()),
 * creates the stream (unless given), the events and the release thread.
 *
 * Returns: 0, -EINVAL, -ENOMEM, or the errors of
 * pf_cuda_runtime_open_device(): -ENOENT "no CUDA runtime", -ENOSYS,
 * -ENODEV "no CUDA device", -EIO. There is no uploader to ask then:
 * pf_cuda_runtime_error() says why (once made, pf_uploader_get_error()).
 *
 * Since: 0.1
 */
PF_API int pf_uploader_new (const pf_uploader_config * config,
    pf_uploader ** out, char *msg, size_t msg_len);

/* How to make the engine's device (or context) current on a thread: the
 * GStreamer element pushes its shared CUcontext. @enter returns what
 * @leave needs. Without hooks: pf_cuda_device_enter/leave. The release
 * thread enters once for its life. @data must stay valid until the engine
 * is gone (pf_uploader_free() and every device frame released).
 * Since: 0.1
 */
typedef struct {
  int (*enter) (void *data);
  void (*leave) (void *data, int previous);
  void *data;
} pf_uploader_hooks;

/**
 * pf_uploader_new_with_hooks:
 * @hooks: (nullable): copied
 *
 * pf_uploader_new() with the caller's context switching. The caller has
 * opened the device (only the runtime's table is looked up here). Errors
 * as pf_uploader_new().
 *
 * Since: 0.1
 */
PF_API int pf_uploader_new_with_hooks (const pf_uploader_config * config,
    const pf_uploader_hooks * hooks, pf_uploader ** out, char *msg,
    size_t msg_len);

/**
 * pf_uploader_free:
 *
 * Waits for every copy, releases every host frame still held (release
 * callbacks run in this thread), stops the release thread. Device frames
 * still out stay valid; the pool goes with the last of them. NULL ignored.
 *
 * Since: 0.1
 */
PF_API void pf_uploader_free (pf_uploader * up);

/**
 * pf_uploader_submit:
 * @dest: device memory of the caller (each plane at least rows x pitch)
 * @result: (out) (optional)
 *
 * Queues the copy of @src into @dest. The source belongs to the engine
 * until its release callback ran, on success only; on failure nothing is
 * queued any more and the callback is not called (the caller still owns
 * the frame).
 *
 * Returns: 0, -EINVAL (bad plane description), -EIO (a CUDA call failed,
 * or a sticky earlier failure), -ENOMEM.
 *
 * Since: 0.1
 */
PF_API int pf_uploader_submit (pf_uploader * up, const pf_upload_source * src,
    const pf_upload_dest * dest, pf_upload_result * result);

/**
 * pf_uploader_upload:
 * @timeout_ms: how long to wait for a free device buffer (-1 forever,
 *   0 not at all)
 * @out: (out): a device frame from the pool
 *
 * pf_uploader_submit() into a buffer of the engine's pool. A pool
 * buffer is allocated (cudaMallocPitch, widest row x all rows) on its first
 * use; a later frame that does not fit the buffer it gets reallocates that
 * buffer (after the copies into it completed), a smaller one reuses it.
 *
 * Returns: 0, -ETIMEDOUT (every buffer is out), or pf_uploader_submit()'s
 * errors (-EIO with @result naming the CUDA call, also for cudaMallocPitch).
 *
 * Since: 0.1
 */
PF_API int pf_uploader_upload (pf_uploader * up, const pf_upload_source * src,
    int timeout_ms, pf_device_frame ** out, pf_upload_result * result);

/**
 * pf_device_frame_release:
 *
 * Gives the buffer back to its engine's pool. An event is recorded on each
 * stream named with pf_device_frame_read_on() (this thread enters the
 * engine's device), and the next upload into the buffer makes the
 * engine's stream wait for those events (cudaStreamWaitEvent: no host
 * wait) before its copy. Work reading the frame on the engine's stream or
 * on a named stream may still be queued; work on any other stream must
 * have completed. NULL ignored.
 *
 * Since: 0.1
 */
PF_API void pf_device_frame_release (pf_device_frame * frame);

/* cudart's handles of the default streams (cudaStreamLegacy,
 * cudaStreamPerThread), as DLPack's __dlpack__(stream=) numbers them. */
#define PF_CUDA_STREAM_LEGACY ((pf_cuda_stream) (uintptr_t) 1)
#define PF_CUDA_STREAM_PER_THREAD ((pf_cuda_stream) (uintptr_t) 2)

/* Streams one device frame can name (pf_device_frame_read_on()). */
#define PF_DEVICE_FRAME_MAX_READERS 8

/* Since: 0.1 */
enum pf_device_frame_read_flags {
  /* The consumer orders its reads after the copies itself (the CUDA array
   * interface: it synchronises with the frame's stream): the stream is
   * only remembered for the release, not made to wait. */
  PF_DEVICE_FRAME_READ_NO_WAIT = 1u << 0,
};

/**
 * pf_device_frame_read_on:
 * @frame: a device frame out of its pool (not released)
 * @stream: the consumer's stream: a cudaStream_t, NULL or
 *   PF_CUDA_STREAM_LEGACY (the legacy default stream), or
 *   PF_CUDA_STREAM_PER_THREAD (the calling thread's per-thread default
 *   stream); it must stay valid until the frame is released
 * @flags: #pf_device_frame_read_flags
 *
 * Names a stream that reads the frame, both ways: @stream is made to wait
 * for the frame's event (cudaStreamWaitEvent: work queued on it later
 * reads complete bytes, the host does not wait; not with
 * PF_DEVICE_FRAME_READ_NO_WAIT), and at
 * pf_device_frame_release() an event is recorded on it that the next
 * upload into the buffer waits for on the engine's stream. So the reads
 * queued on @stream before the release complete before the buffer is
 * rewritten, however late they run. The per-thread stream is recorded as
 * the legacy default stream at release (which orders after every blocking
 * stream's earlier work, that thread's per-thread stream included: the
 * release may come from another thread). Naming a stream twice is one
 * reader. __dlpack__(stream=) and the Python binding call it
 * (pf_dlpack_sync_device_frame()).
 *
 * Returns: 0, -EINVAL (no frame, or one already released), -ENOSPC
 * (PF_DEVICE_FRAME_MAX_READERS other streams are named already), -EIO (a
 * CUDA call failed, e.g. a stream of another device: not named).
 *
 * Since: 0.1
 */
PF_API int pf_device_frame_read_on (pf_device_frame * frame,
    pf_cuda_stream stream, unsigned int flags);

/**
 * pf_device_frame_download:
 *
 * Copies the frame back into host memory (cudaMemcpy2D, synchronous, after
 * waiting for its event): plane p to @dst + the sum of the sizes of the
 * planes before it, rows packed (plane_row_bytes each). For tests and
 * checks. Returns 0, -ENOSPC (@dst_size too small), -EIO.
 *
 * Since: 0.1
 */
PF_API int pf_device_frame_download (const pf_device_frame * frame,
    void *dst, size_t dst_size);

/**
 * pf_uploader_poll:
 * @timeout_ms: 0 releases what completed; -1 waits for every frame in
 *   flight
 *
 * Releases the host frames whose copies completed (PF_UPLOADER_NO_THREAD;
 * with a release thread it only waits). Returns how many frames are still
 * in flight, or -EIO after a failed wait.
 *
 * Since: 0.1
 */
PF_API int pf_uploader_poll (pf_uploader * up, int timeout_ms);

/**
 * pf_uploader_flush:
 *
 * Waits until no copy is in flight and every host frame went back. Returns
 * 0, or the sticky error (-EIO).
 *
 * Since: 0.1
 */
PF_API int pf_uploader_flush (pf_uploader * up);

/* The stream copies are queued on.
 * Since: 0.1
 */
PF_API pf_cuda_stream pf_uploader_get_stream (pf_uploader * up);
/* The runtime and device of the engine.
 * Since: 0.1
 */
PF_API const pf_cuda_runtime *pf_uploader_get_runtime (pf_uploader * up);
/* Since: 0.1 */
PF_API int pf_uploader_get_device (pf_uploader * up);
/* Frames with copies outstanding now.
 * Since: 0.1
 */
PF_API unsigned int pf_uploader_get_inflight (pf_uploader * up);
/* The sticky error's message, or NULL (valid until pf_uploader_free()).
 * Since: 0.1
 */
PF_API const char *pf_uploader_get_error (pf_uploader * up);

/* Since: 0.1 */
typedef struct {
  uint64_t frames, bytes;
  uint64_t pinned_copies;       /* frames copied by DMA from a segment */
  uint64_t staged_copies;       /* frames copied through a bounce slot */
  uint64_t pageable_copies;     /* frames copied pageable (NO_BOUNCE, or
                                 * the bounce could not be registered) */
  uint64_t registrations;       /* segments registered by this engine */
  uint64_t waits_full;          /* submits that waited for a slot */
  uint64_t inflight_max;
  uint64_t pool_waits;          /* uploads that waited for a device buffer */
  uint64_t pool_out_max;        /* device frames out at once, at most */
  /* uploads into a buffer whose readers (pf_device_frame_read_on())
   * were waited for on the engine's stream */
  uint64_t reader_waits;
  /* events that could not be recorded on a reader's stream at release (a
   * stream gone already): the next write does not wait for that one */
  uint64_t reader_errors;
  uint64_t reserved[4];
} pf_uploader_stats;

/* Since: 0.1 */
PF_API void pf_uploader_get_stats (pf_uploader * up, pf_uploader_stats * stats);

/* The bounce slots' registration failed (then staged copies are pageable):
 * the reason, or NULL.
 * Since: 0.1
 */
PF_API const char *pf_uploader_get_bounce_warning (pf_uploader * up);

/* The registration (a const pf_cuda_registration *, pf-cuda-registration.h)
 * of the current bounce segment, NULL before the first staged frame: to
 * count it, or to say why staged copies are pageable. Valid until the next
 * submit.
 * Since: 0.1
 */
PF_API const void *pf_uploader_get_bounce_registration (pf_uploader * up);

#ifdef __cplusplus
}
#endif
#endif /* __PF_UPLOAD_H__ */
