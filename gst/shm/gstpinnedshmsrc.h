/* GStreamer pinnedflow: receive frames from another process
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNED_SHM_SRC_H__
#define __GST_PINNED_SHM_SRC_H__

#include <gst/gst.h>
#include <gst/base/gstpushsrc.h>

G_BEGIN_DECLS

/**
 * GstPinnedShmSrcOnDisconnect:
 * @GST_PINNED_SHM_SRC_ON_DISCONNECT_EOS: post a warning and push EOS
 *   downstream
 * @GST_PINNED_SHM_SRC_ON_DISCONNECT_ERROR: post an element error (the
 *   default)
 * @GST_PINNED_SHM_SRC_ON_DISCONNECT_RECONNECT: wait for a new producer on
 *   the same socket path and go on streaming
 *
 * What pinnedshmsrc does when the producer goes away without sending EOS.
 */
typedef enum
{
  GST_PINNED_SHM_SRC_ON_DISCONNECT_EOS,
  GST_PINNED_SHM_SRC_ON_DISCONNECT_ERROR,
  GST_PINNED_SHM_SRC_ON_DISCONNECT_RECONNECT,
} GstPinnedShmSrcOnDisconnect;

/**
 * GstPinnedShmSrcDelivery:
 * @GST_PINNED_SHM_SRC_DELIVERY_AUTO: what the producer's liveness gives:
 *   every frame from a non-live producer, the newest frame from a live one
 * @GST_PINNED_SHM_SRC_DELIVERY_EVERY_FRAME: reliable: the producer never
 *   skips this consumer (it waits for its releases, up to its
 *   reliable-timeout)
 * @GST_PINNED_SHM_SRC_DELIVERY_NEWEST_FRAME: leaky: the producer skips this
 *   consumer at its limit, and stale queued frames are dropped for the
 *   newest one
 *
 * The delivery pinnedshmsrc asks for. The values are the library's
 * enum pf_delivery.
 */
typedef enum
{
  GST_PINNED_SHM_SRC_DELIVERY_AUTO = 0,
  GST_PINNED_SHM_SRC_DELIVERY_EVERY_FRAME = 1,
  GST_PINNED_SHM_SRC_DELIVERY_NEWEST_FRAME = 2,
} GstPinnedShmSrcDelivery;

/**
 * GstPinnedShmSrcIsLive:
 * @GST_PINNED_SHM_SRC_IS_LIVE_AUTO: the producer's liveness when it is up
 *   going to PAUSED; live otherwise (a non-live stream then keeps its
 *   timestamps)
 * @GST_PINNED_SHM_SRC_IS_LIVE_TRUE: always a live source
 * @GST_PINNED_SHM_SRC_IS_LIVE_FALSE: never a live source
 *
 * Whether pinnedshmsrc is a live source.
 */
typedef enum
{
  GST_PINNED_SHM_SRC_IS_LIVE_AUTO = 0,
  GST_PINNED_SHM_SRC_IS_LIVE_TRUE = 1,
  GST_PINNED_SHM_SRC_IS_LIVE_FALSE = 2,
} GstPinnedShmSrcIsLive;

/* device-frames: whether to ask the producer for device segments */
typedef enum
{
  GST_PINNED_SHM_SRC_DEVICE_FRAMES_AUTO = 0,
  GST_PINNED_SHM_SRC_DEVICE_FRAMES_ON = 1,
  GST_PINNED_SHM_SRC_DEVICE_FRAMES_OFF = 2,
} GstPinnedShmSrcDeviceFrames;

#define GST_TYPE_PINNED_SHM_SRC_DEVICE_FRAMES \
  (gst_pinned_shm_src_device_frames_get_type ())
GType gst_pinned_shm_src_device_frames_get_type (void);

#define GST_TYPE_PINNED_SHM_SRC_IS_LIVE \
  (gst_pinned_shm_src_is_live_get_type ())
GType gst_pinned_shm_src_is_live_get_type (void);

#define GST_TYPE_PINNED_SHM_SRC_DELIVERY \
  (gst_pinned_shm_src_delivery_get_type ())
GType gst_pinned_shm_src_delivery_get_type (void);

#define GST_TYPE_PINNED_SHM_SRC_ON_DISCONNECT \
  (gst_pinned_shm_src_on_disconnect_get_type ())
GType gst_pinned_shm_src_on_disconnect_get_type (void);

#define GST_TYPE_PINNED_SHM_SRC (gst_pinned_shm_src_get_type ())
G_DECLARE_FINAL_TYPE (GstPinnedShmSrc, gst_pinned_shm_src, GST,
    PINNED_SHM_SRC, GstPushSrc)

GST_ELEMENT_REGISTER_DECLARE (pinnedshmsrc);

G_END_DECLS
#endif /* __GST_PINNED_SHM_SRC_H__ */
