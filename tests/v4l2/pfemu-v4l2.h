/* pfemu-v4l2: what a test reads from the V4L2 capture stand-in
 * (libpfemu-v4l2.so, LD_PRELOADed). The functions are looked up with
 * dlsym (RTLD_DEFAULT) so that a test runs (and skips) without it.
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __PFEMU_V4L2_H__
#define __PFEMU_V4L2_H__

#include <stddef.h>
#include <stdint.h>

/* The device node the stand-in plays (PFEMU_V4L2_DEVICE overrides it). */
#define PFEMU_V4L2_DEFAULT_DEVICE "/dev/video-pfemu0"

/* Every frame starts with this magic and its sequence number (LE u32);
 * the rest of row r (of every plane's rows, counted from the first row of
 * plane 0) holds bytes (x + r + seq) & 0xff at byte x. */
#define PFEMU_V4L2_MAGIC "PFV4"
#define PFEMU_V4L2_HEADER 8

typedef struct
{
  uint64_t frames;              /* frames written into queued buffers */
  uint64_t starved;             /* ticks with no buffer queued */
  uint64_t held_writes;         /* frames written over a held range */
  uint64_t refused;             /* ioctls refused (EINVAL/EBUSY/EFAULT) */
  uint64_t userptr_frames;
  uint64_t mmap_frames;
  uint64_t dmabuf_frames;
  uint64_t qbuf;
  uint64_t dqbuf;
  uint64_t opens;               /* opens of the device node */
  uint64_t closes;              /* last closes of an opened device */
  uint64_t udmabuf_created;     /* UDMABUF_CREATE answered */
} PfemuV4l2Stats;

typedef void (*PfemuV4l2GetStats) (PfemuV4l2Stats * stats);
/* A range the application reads: the stand-in counts every frame it
 * writes over it (held_writes). */
typedef void (*PfemuV4l2Hold) (const void *addr, size_t len);
typedef void (*PfemuV4l2Unhold) (const void *addr);

/* What the stand-in exports (these names, for dlsym). */
void pfemu_v4l2_get_stats (PfemuV4l2Stats * stats);
void pfemu_v4l2_hold (const void *addr, size_t len);
void pfemu_v4l2_unhold (const void *addr);

/* The expected byte at @x of row @row of frame @seq (outside the header). */
static inline uint8_t
pfemu_v4l2_pattern (uint32_t seq, uint32_t row, uint32_t x)
{
  return (uint8_t) (x + row + seq);
}

#endif
