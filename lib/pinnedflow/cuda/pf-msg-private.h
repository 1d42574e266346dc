/* pinnedflow: the error text of the CUDA layer's constructors
 * (private, not installed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The error text of the CUDA layer's calls that fail before there is an
 * object to keep it (pf_cuda_runtime_get(), _open_device(),
 * _find_device(), pf_uploader_new(), _with_hooks()): kept in the calling
 * thread, read with pf_cuda_runtime_error() (docs/design.md, "Error
 * text"). Their @msg, @msg_len (deprecated; NULL, 0) get a copy.
 */
#ifndef __PF_MSG_PRIVATE_H__
#define __PF_MSG_PRIVATE_H__

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* The calling thread's text (pf-cuda.c; pf_cuda_runtime_error()). */
#define PF_CUDA_THREAD_ERROR_LEN 1536
extern __thread char pf_cuda_thread_error[PF_CUDA_THREAD_ERROR_LEN];

/* printf into the calling thread's text, and a copy into @msg (always
 * terminated, truncated to @msg_len) unless @msg is NULL or @msg_len 0. */
static inline void pf_set_msg (char *msg, size_t msg_len, const char *fmt, ...)
    __attribute__((format (printf, 3, 4)));

static inline void
pf_set_msg (char *msg, size_t msg_len, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  vsnprintf (pf_cuda_thread_error, sizeof (pf_cuda_thread_error), fmt, ap);
  va_end (ap);
  if (msg != NULL && msg_len > 0)
    snprintf (msg, msg_len, "%s", pf_cuda_thread_error);
}

#endif /* __PF_MSG_PRIVATE_H__ */
