/* A consumer of the Arrow C (Device) Data Interface written from the
 * specification alone (arrow-consumer.c): what it is told to expect.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __ARROW_CONSUMER_H__
#define __ARROW_CONSUMER_H__

#include <stddef.h>
#include <stdint.h>

struct arrow_expect
{
  int32_t device_type;          /* ARROW_DEVICE_* */
  uint32_t width, height;
  uint32_t n_planes;
  const char *format;
  /* Every plane's rows, packed (row bytes each), one plane after another. */
  const uint8_t *bytes;
  uint64_t size;
  /* For ARROW_DEVICE_CUDA: cudaMemcpy2D (dst, dpitch, src, spitch, width,
   * height, kind 2) and cudaEventSynchronize (event) of the runtime the
   * producer used; event_sync NULL: the array must have no sync_event
   * (a received device frame, complete when published). */
  int (*d2h) (void *dst, size_t dpitch, const void *src, size_t spitch,
      size_t width, size_t height, int kind);
  int (*event_sync) (void *event);
  /* Out: release callbacks called, the array's length and data pointer,
   * the pts in the metadata (untouched when absent). */
  int releases;
  int64_t length_seen;
  uint64_t data_seen;
  uint64_t pts_seen;
};

/* Moves the schema and the array (an ArrowDeviceArray when @is_device,
 * else an ArrowArray) out of the producer's structs, checks them against
 * @expect, releases both. Returns 0, or -1 with the reason in @err. */
int arrow_consumer_import (void *schema, void *array, int is_device,
    struct arrow_expect *expect, char *err, size_t err_len);

#endif
