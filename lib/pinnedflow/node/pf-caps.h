/* pinnedflow: the caps-string text helpers of the node API, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Reads the few fields a node needs out of the text gst_caps_to_string()
 * writes, and writes the raw-video caps string a node publishes. Not a
 * general caps parser: unknown fields are skipped.
 *
 * Pure functions on caller-owned buffers: no state, any thread.
 * Part of the node API; included by <pinnedflow/pf-node.h>.
 */
#ifndef __PF_CAPS_H__
#define __PF_CAPS_H__

#include <stddef.h>
#include <stdint.h>

#include <pinnedflow/pf-api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PF_NODE_FORMAT_LEN 16

/* What a raw-video caps string says (pf_node_caps_parse()); a plain value
 * type.
 * Since: 0.1
 */
typedef struct {
  char media_type[32];          /* "video/x-raw", or whatever the caps say */
  char format[PF_NODE_FORMAT_LEN];      /* "RGBA", "I420", ... or "" */
  uint32_t width, height;       /* 0 when absent */
  int32_t fps_n, fps_d;         /* 0/1 when absent */
} pf_node_caps_info;

/**
 * pf_node_caps_parse:
 *
 * Parses "video/x-raw, format=(string)RGBA, width=(int)64, ..." (the text
 * gst_caps_to_string() writes; typed or untyped fields). Returns 0 or
 * -EINVAL (empty or unparsable media type). Missing fields stay 0.
 *
 * Since: 0.1
 */
PF_API int pf_node_caps_parse (const char *caps, pf_node_caps_info * info);

/**
 * pf_node_video_caps:
 *
 * Writes "video/x-raw, format=(string)F, width=(int)W, height=(int)H,
 * framerate=(fraction)N/D" into @buf. Returns the length, or -ENOSPC.
 *
 * Since: 0.1
 */
PF_API int pf_node_video_caps (char *buf, size_t len, const char *format,
    uint32_t width, uint32_t height, int32_t fps_n, int32_t fps_d);

#ifdef __cplusplus
}
#endif
#endif /* __PF_CAPS_H__ */
