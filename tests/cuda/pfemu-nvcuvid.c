/* pfemu-nvcuvid: a stand-in for NVIDIA's video decoder library
 * (libnvcuvid.so.1) whose every function fails
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * GStreamer 1.22's nvcodec registers nothing, not even cudaupload and
 * cudadownload, unless the decoder or the encoder library loads beside
 * libcuda.so.1 (plugin_init returns early). This one loads: it exports
 * every symbol gst_cuvid_load_library() resolves (1.22 and 1.28), and each
 * returns CUDA_ERROR_NOT_SUPPORTED (801), so nvcodec finds no decoder
 * capability and registers no decoder, while the CUDA memory elements
 * register against the driver stand-in (pfemu-cuda.c).
 */
#define EXPORT __attribute__ ((visibility ("default")))

#define FAILS(name)             \
EXPORT int name (void);         \
EXPORT int                      \
name (void)                     \
{                               \
  return 801;                   \
}

/* *INDENT-OFF* */
FAILS (cuvidCtxLockCreate)
FAILS (cuvidCtxLockDestroy)
FAILS (cuvidCtxLock)
FAILS (cuvidCtxUnlock)
FAILS (cuvidCreateDecoder)
FAILS (cuvidReconfigureDecoder)
FAILS (cuvidDestroyDecoder)
FAILS (cuvidDecodePicture)
FAILS (cuvidGetDecodeStatus)
FAILS (cuvidCreateVideoParser)
FAILS (cuvidParseVideoData)
FAILS (cuvidDestroyVideoParser)
FAILS (cuvidMapVideoFrame)
FAILS (cuvidUnmapVideoFrame)
FAILS (cuvidMapVideoFrame64)
FAILS (cuvidUnmapVideoFrame64)
FAILS (cuvidGetDecoderCaps)
/* *INDENT-ON* */
