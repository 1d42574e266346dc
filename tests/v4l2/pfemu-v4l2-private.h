/* pfemu-v4l2: the stand-in's shared state (private to tests/v4l2)
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pfemu-v4l2.c: the intercepted calls, the fd and mapping tables;
 * pfemu-v4l2-dev.c: the device (formats, buffers, the writer, the
 * ioctls); pfemu-udmabuf.c: /dev/udmabuf; pfemu-v4l2-real.c: the libc
 * calls behind ours. One mutex,
 * pfemu_lock, guards all of it (see pfemu-v4l2.c).
 */
#ifndef __PFEMU_V4L2_PRIVATE_H__
#define __PFEMU_V4L2_PRIVATE_H__

#include "pfemu-v4l2.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sys/types.h>
#include <sys/time.h>
#include <linux/videodev2.h>

#define EXPORT __attribute__ ((visibility ("default")))
#define MAX_FDS 4096
#define MAX_BUFS VIDEO_MAX_FRAME
#define MAX_MAPS 256
#define MAX_HOLDS 256
#define MAX_ROW 8192
#define MAX_ATTACH 64

enum
{ BUF_USER, BUF_QUEUED, BUF_WRITING, BUF_DONE };

typedef struct
{
  int state;
  int memfd;                    /* MMAP: its memory; else -1 */
  size_t length;
  unsigned long userptr;        /* USERPTR: while queued or done */
  int dmafd;                    /* DMABUF: the fd QBUF gave */
  void *dmamap;                 /* DMABUF: its attachment's mapping */
  uint32_t sequence;
  uint32_t bytesused;
  struct timeval ts;
  int n_maps;
} Buf;

typedef struct
{
  int refs;                     /* application fds */
  int wake_fd;                  /* our own fd of the eventfd */
  uint32_t pixfmt, width, height, bpl, sizeimage;
  uint32_t fps_num, fps_den;    /* timeperframe num/den */
  uint32_t memory, n_bufs;
  Buf bufs[MAX_BUFS];
  uint32_t queued[MAX_BUFS], q_head, q_len;
  uint32_t done[MAX_BUFS], d_head, d_len;
  int streaming, stop;
  pthread_t thread;
  pthread_cond_t cond;
  uint32_t seq;
  /* DMABUF: the dmabufs attached (mapped) so far, by identity
   * (pfemu_dmabuf_identity()), until REQBUFS frees the buffers */
  struct
  {
    uint64_t id[3];
    void *map;
    size_t len;
    int borrowed;               /* not ours to unmap */
  } att[MAX_ATTACH];
  uint32_t n_att;
} Dev;

extern pthread_mutex_t pfemu_lock;
extern PfemuV4l2Stats pfemu_stats;

/* pfemu-v4l2-dev.c */
void pfemu_dev_config (void);
Dev *pfemu_dev_new (void);
/* The last fd closed: streaming stopped, buffers freed, @d freed. Lock
 * held. */
void pfemu_dev_free (Dev * d);
/* 0 or a negative errno. Lock held. */
int pfemu_dev_ioctl (Dev * d, int fd, unsigned long req, void *arg);

/* pfemu-udmabuf.c: the /dev/udmabuf stand-in and dmabuf fds */
int pfemu_udmabuf_maybe (int fd);
int pfemu_udmabuf_is_device (const char *path);
int pfemu_udmabuf_open (void);
int pfemu_udmabuf_ioctl (int fd, unsigned long req, void *arg);
void pfemu_udmabuf_dup (int fd, int nfd);
void pfemu_udmabuf_forget (int fd);
void *pfemu_udmabuf_mmap (int fd, size_t len, int prot, off_t off);
int64_t pfemu_dmabuf_size (int fd);
void *pfemu_dmabuf_map (int fd, size_t len, int *borrowed);
void pfemu_udmabuf_lock (void);
void pfemu_udmabuf_unlock (void);
int pfemu_dmabuf_identity (int fd, uint64_t id[3]);

/* pfemu-v4l2-real.c: the calls without our interception */
int pfemu_real_close (int fd);
int pfemu_real_open (const char *path, int flags, mode_t mode);
void *pfemu_real_mmap (void *addr, size_t len, int prot, int flags, int fd,
    off_t off);
int pfemu_real_munmap (void *addr, size_t len);

/* Declares real_NAME, the libc function behind an intercepted NAME (the
 * next definition: RTLD_NEXT), looked up on the first call. No lock: a
 * racing first call stores the same pointer. */
#define REAL(ret, name, args) \
  static ret (*real_##name) args; \
  if (real_##name == NULL) \
    real_##name = (ret (*) args) dlsym (RTLD_NEXT, #name)

#endif
