/* pf-cuda-node: consume frames and put each on a CUDA device
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Usage: pf-cuda-node SOCKET [MAX_FRAMES [CHECK]]
 *
 * The C side of docs/bridge.md, "Frames onto the GPU": every received
 * frame goes to device memory through the upload engine pinnedcudaupload
 * uses (pf-node-cuda.h): the producer's segment is registered once, each
 * frame is one DMA per plane on the engine's stream, the host frame goes
 * back to the producer when the copy's event completed. A real node would
 * name its stream with pf_device_frame_read_on (d, stream, 0) (the stream
 * waits for d->event, and the buffer is not rewritten before the kernels
 * it then queues there ran) and launch them on d->data[0] (pitch
 * d->pitch); this one, with CHECK = 1, reads every frame
 * back and compares it with pf-camera-node's pattern (x + 2y + 3c + 5n),
 * which is how tests/bridge runs it on the cudart emulator.
 *
 * Without a CUDA runtime or device it says so and exits 1 (the runtime is
 * libcudart.so.13, .12, ... or what GST_PINNEDFLOW_CUDART names).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <pinnedflow/pf-node.h>
#include <pinnedflow/pf-node-cuda.h>    /* pf_uploader, pf_device_frame */

/* pf-camera-node's frame n, packed rows, compared with the device copy. */
static uint64_t
mismatches (const uint8_t * got, uint32_t w, uint32_t h, uint64_t n)
{
  uint64_t bad = 0;
  uint32_t x, y, c;

  for (y = 0; y < h; y++)
    for (x = 0; x < w; x++)
      for (c = 0; c < 4; c++)
        bad += got[((uint64_t) y * w + x) * 4 + c] !=
            (uint8_t) (x + 2 * y + 3 * c + 5 * n);
  return bad;
}

int
main (int argc, char **argv)
{
  pf_uploader_config ucfg = { 0 };      /* device 0, own stream, 3 in flight */
  pf_uploader *up = NULL;
  pf_node_consumer *cons = NULL;
  pf_node_frame *f;
  pf_device_frame *d;
  uint64_t count = 0, max = UINT64_MAX, bad = 0;
  uint8_t *host = NULL;
  int res, check = 0, rc = 1;

  if (argc < 2) {
    fprintf (stderr, "usage: %s SOCKET [MAX_FRAMES [CHECK]]\n", argv[0]);
    return 2;
  }
  if (argc > 2)
    max = strtoull (argv[2], NULL, 10);
  if (argc > 3)
    check = atoi (argv[3]);
  setvbuf (stdout, NULL, _IOLBF, 0);

  if ((res = pf_uploader_new (&ucfg, &up, NULL, 0)) < 0) {
    /* no runtime/device */
    fprintf (stderr, "no upload engine: %s\n", pf_cuda_runtime_error ());
    return 1;
  }
  if ((res = pf_node_consumer_new (argv[1], 10000, &cons)) < 0) {
    fprintf (stderr, "cannot connect to %s: %s\n", argv[1],
        pf_node_strerror (res));
    goto out;
  }
  while (count < max && (res = pf_node_consumer_next (cons, -1, &f)) == 1) {
    uint64_t seq = f->seq;

    if ((res = pf_node_frame_upload (up, f, -1, &d)) < 0) {
      fprintf (stderr, "upload: %s (%s)\n", pf_node_strerror (res),
          pf_uploader_get_error (up) ? pf_uploader_get_error (up) : "");
      pf_node_frame_release (f);        /* still ours on failure */
      goto out;
    }
    /* f belongs to the engine now: released once d->event completed.
     * Here a node calls pf_device_frame_read_on (d, its_stream, 0) and
     * queues work on d->data[0] (d->pitch bytes from row to row) there;
     * it may release d right after. */
    printf ("frame %" PRIu64 " on device %d: %ux%u %s pitch %zu\n", seq,
        d->device_id, d->width, d->height, d->format, d->pitch);
    if (check) {
      size_t size = (size_t) d->width * d->height * 4;

      host = realloc (host, size);
      if (pf_device_frame_download (d, host, size) < 0) {
        fprintf (stderr, "download failed\n");
        pf_device_frame_release (d);
        goto out;
      }
      bad += mismatches (host, d->width, d->height, count);     /* frame n */
    }
    pf_device_frame_release (d);        /* the buffer back to the pool */
    count++;
  }
  if (res < 0 && res != -EPIPE)
    fprintf (stderr, "next: %s\n", pf_node_consumer_get_error (cons));
  pf_uploader_flush (up);
  printf ("%" PRIu64 " frames on the device, %" PRIu64 " bytes differ\n",
      count, bad);
  rc = bad ? 1 : 0;

out:
  free (host);
  pf_uploader_free (up);
  pf_node_consumer_free (cons);
  return rc;
}
