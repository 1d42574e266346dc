/* pfemu: a CPU emulator of the part of the CUDA runtime pinnedflow uses
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built as libpfemu-cudart.so; the plugin loads it in place of libcudart
 * when GST_PINNEDFLOW_CUDART is its path. Besides the cuda* functions it
 * exports the query functions below (tests dlopen() the same path and
 * dlsym() them). Environment (read at load and by pfemu_reset()):
 *
 *   PFEMU_COPY_DELAY_US=N       each async copy runs N us after it is
 *                               queued, on the stream's worker (default 2000)
 *   PFEMU_DEVICE_COUNT=N        devices (default 1; 0: cudaErrorNoDevice)
 *   PFEMU_INSUFFICIENT_DRIVER=1 every call fails with error 35, like a
 *                               runtime without a (recent enough) driver
 *   PFEMU_NO_READONLY_REGISTER=1  cudaDevAttrHostRegisterReadOnlySupported
 *                               is 0 and cudaHostRegisterReadOnly is refused
 *   PFEMU_NO_HOST_REGISTER=1    cudaDevAttrHostRegisterSupported (99) is
 *                               0 and every cudaHostRegister is refused
 *                               (cudaErrorNotSupported)
 *   PFEMU_FAIL=name:N:err[:mode][,...] the Nth call (from 1) of
 *                               cuda<name> returns error err (e.g.
 *                               Memcpy2DAsync:3:700); mode "async" (for
 *                               Memcpy2DAsync): the call succeeds, the copy
 *                               faults when it runs and its stream reports
 *                               err at its next sync point; "sticky": the
 *                               same, and from then on every call needing a
 *                               context returns err, as a corrupted context
 *                               does (cleared by pfemu_reset())
 * Every cudart call returning an error (cudaErrorNotReady from
 * cudaEventQuery / cudaStreamQuery included) sets the calling thread's last
 * error, the latest replacing an earlier one (cudaGetLastError returns and
 * clears it, cudaPeekAtLastError returns it; a sticky error stays).
 * Process rule: a process forked after CUDA was initialised in its parent
 * (cuInit, or any cudart call: cudart initialises the driver at its first)
 * gets 3 (cudaErrorInitializationError / CUDA_ERROR_NOT_INITIALIZED) from
 * every runtime and driver call (cuInit included), except
 * cudaRuntimeGetVersion, cudaDriverGetVersion, cuDriverGetVersion, the
 * error names and strings and cudaGetLastError / cudaPeekAtLastError; its
 * exit writes no leak report (what is alive is its parent's). A fork
 * before initialisation leaves the child free to initialise its own.
 * Besides the cuda* functions pinnedflow loads, it exports cudaStreamQuery
 * and cudaLaunchHostFunc (the host function runs on the stream's worker in
 * stream order: one that sleeps delays what is queued after it).
 * PFEMU_FAIL names a driver call in full (cuMemcpy2DAsync_v2:1:700); its
 * modes work the same.
 *   PFEMU_COMPUTE_MODE=exclusive-process  the device is in
 *                               EXCLUSIVE_PROCESS compute mode (attribute
 *                               20 reads 3): a second context on it
 *                               (cuCtxCreate, the primary context's
 *                               initialisation by cudart or
 *                               cuDevicePrimaryCtxRetain) fails with 46
 *                               (CUDA_ERROR_DEVICES_UNAVAILABLE)
 *   PFEMU_VMM=1                 the driver stand-in's virtual memory
 *                               management (pfemu-cuda-vmm.c): attributes
 *                               102 and 103 read 1 and cuMemCreate & co.
 *                               work (otherwise 0, and they return 801)
 *   PFEMU_IPC=1                 the driver stand-in's legacy IPC
 *                               (pfemu-cuda-ipc.c): cuIpcGetMemHandle,
 *                               cuIpcOpenMemHandle, cuIpcCloseMemHandle
 *                               work (otherwise 801); device allocations
 *                               made with it keep their memfd open
 *   PFEMU_STATS=path            at exit, append one line of counters
 *                               (copies by direction, device bytes held
 *                               at most, IPC and export calls, CPU ms)
 *                               to path: for benchmarks
 *   PFEMU_LEAK_REPORT=path      at exit, append a leak report to path
 *   PFEMU_LEAK_ABORT=1          at exit, _exit(3) when something is alive
 */
#ifndef __PFEMU_H__
#define __PFEMU_H__

#include <stddef.h>

/* Counters by name: "live.registrations", "live.allocations",
 * "live.streams", "live.events", "registrations", "registrations.readonly",
 * "unregistrations", "allocations", "copies.pinned", "copies.pageable",
 * "copies.sync", "copies.d2d", "streams.blocking", "pending.max",
 * "unregister.pending", "injected", "events.recorded", "stream.waits",
 * "calls.device0", "calls.device1" (calls that use a device's context,
 * made by a thread whose current device was 0 / 1), "contexts.device0",
 * "contexts.device1" (primary contexts initialised on device 0 / 1: by
 * cudaSetDevice, or by the first call needing a context on a thread that
 * has none, which gets device 0's), "setdevice.device0",
 * "setdevice.device1" (cudaSetDevice calls), "thread.context" (the device
 * whose context is current on the calling thread, -1: none).
 * "events.sync" (cudaEventSynchronize calls), "events.sync.spinning"
 * (those on an event created without cudaEventBlockingSync, which spin a
 * core on a GPU), "events.sync.spun" (those of them that found the event
 * pending).
 * "unregister.pending" / "free.pending" (cudaHostUnregister / cudaFree
 * while copies using the memory were queued: those copies are dropped and
 * their stream reports cudaErrorIllegalAddress at every later sync).
 * "sticky" (the sticky error, 0: none), "sticky.calls" (calls failed by it;
 * releases still release, and return it), "lasterror.set" (threads whose
 * last-error slot holds an error no cudaGetLastError has taken).
 * "copies.sync.late" (cudaMemcpy2D from pageable memory to the device:
 * staged at once, then queued on the legacy stream, which runs an op only
 * when something waits for it: an event recorded after it being waited
 * for or queried, a synchronous call on the legacy stream, a stream sync
 * of it; non-blocking streams never wait for it).
 * Besides cudart's calls the emulator exports the driver's cuCtxGetCurrent
 * and cuCtxSetCurrent (a NULL context = none current).
 *
 * The driver API (tests/cuda/emu/libcuda.so.1, pfemu-cuda.c) uses the same
 * device: its allocations, registrations, copies, streams and events are
 * counted in the counters above, and:
 * "contexts.created" / "contexts.destroyed" (cuCtxCreate / cuCtxDestroy),
 * "live.contexts" (created, not destroyed), "primary.retains" /
 * "primary.releases" (cuDevicePrimaryCtxRetain / Release; the primary
 * context is cudart's: "contexts.deviceN" counts its initialisation by
 * either API), "primary.refs.device0", "primary.refs.device1" (the
 * driver's references held now), "driver.inits" (cuInit calls), "driver.initialized" (1 once cuInit
 * or any cudart call ran; pfemu_reset() keeps it), "forked" (1 in a child
 * forked after initialisation), "fork.refused" (calls refused there),
 * "stream.syncs" (cudaStreamSynchronize + cuStreamSynchronize calls on a
 * valid stream), "stream.syncs.legacy" (those on the legacy stream),
 * "host.allocations" / "live.host.allocations" (cuMemAllocHost /
 * cuMemHostAlloc: page-locked, counted as pinned in copies),
 * "copies.h2h" (driver copies between two host buffers),
 * "stream.syncs.spinning" (cudaStreamSynchronize / cuStreamSynchronize
 * calls made while the calling thread's current context, or the primary
 * context it gets, was not made with CU_CTX_SCHED_BLOCKING_SYNC: each
 * spins a core on a GPU), "syncs.spinning" (every host wait that would
 * spin: those, the cuCtxSynchronize calls made the same way, and
 * events.sync.spinning).
 * "calls.<function>" (e.g. "calls.cuStreamSynchronize",
 * "calls.cudaStreamSynchronize", "calls.cuMemcpy2DAsync_v2"): calls made to
 * that function since the last reset, 0 if none.
 * Returns -1 for an unknown name.
 *
 * Contexts: every allocation, registration, stream and event carries the
 * context current when it was made. cudaEventRecord/cuEventRecord of an
 * event on a stream of another context fails with 400
 * (cudaErrorInvalidResourceHandle / CUDA_ERROR_INVALID_HANDLE), counted in
 * "events.cross_context"; a stream wait on an event of another context is
 * allowed (documented for both APIs). A registration pins its pages for
 * its own context, or for all with cudaHostRegisterPortable; destroying
 * its context (cuCtxDestroy, the primary context's last release) drops it
 * ("registrations.dropped"): later copies from those pages are staged
 * (copies.pageable) and cudaHostUnregister answers 713. "contexts.refused":
 * contexts EXCLUSIVE_PROCESS refused.
 * Virtual memory (PFEMU_VMM=1): "live.vmm.handles", "live.vmm.reservations",
 * "live.vmm.mappings" (in pfemu_live_total() and the leak report; kept by
 * pfemu_reset()), "vmm.faults" (copies and memsets refused by a
 * mapping's access flags: 700, sticky). Legacy IPC (PFEMU_IPC=1):
 * "live.ipc.mappings" (handles opened and not closed; in the live total).
 * Copies by direction, each plane a copy, sync and async, either API:
 * "copies.htod", "copies.dtoh", "copies.dtod", their bytes "bytes.htod",
 * "bytes.dtoh", "bytes.dtod"; device memory this process holds
 * (allocations and cuMemCreate handles, not imported or IPC-opened ones):
 * "live.device.bytes", "device.bytes.peak". Stream handles 1 (cudaStreamLegacy)
 * and 2 (cudaStreamPerThread) are the legacy stream, as NULL is. */
long pfemu_query (const char *counter);

/* cudaStreamSynchronize / cuStreamSynchronize calls on @stream (a live
 * stream handle of either API; NULL: the legacy stream) since it was
 * created or the last reset; -1 for a handle that is not a live stream. */
long pfemu_stream_syncs (void *stream);

/* A consumer's kernel that reads late, for the rule "a device buffer is
 * written again only after the reads queued before its release": queues
 * on @stream (a live stream handle, NULL: the legacy stream) a reader of
 * @height rows of @width bytes at device pointer @dev, @pitch bytes apart.
 * When its turn comes (after the waits queued before it) it runs for
 * @late_us, then leaves the rows as it read them at the end in @dst
 * (packed, valid after a sync of @stream). Counters: "reads" (readers
 * run), "reads.overwritten" (readers whose memory changed while they ran:
 * written by work not ordered after them), "reads.faulted" (the memory
 * was freed before the reader ran: the stream reports
 * cudaErrorIllegalAddress). Returns a cudaError_t (0, 1 bad arguments or
 * memory that is not a device allocation, 400 not a stream). */
int pfemu_stream_read (void *stream, const void *dev, size_t pitch,
    size_t width, size_t height, void *dst, long late_us);

/* Re-reads the environment and zeroes every counter except live.*. */
void pfemu_reset (void);

/* Number of live registrations + allocations + streams + events, and a
 * human-readable report of them (static buffer). */
long pfemu_live_total (void);
const char *pfemu_leak_report (void);

#endif
