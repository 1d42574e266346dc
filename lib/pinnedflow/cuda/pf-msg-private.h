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

/* vprintf into @text (a thread's own text, @text_len bytes), and a copy
 * into @msg (always terminated, truncated to @msg_len) unless @msg is NULL
 * or @msg_len 0; pf-device-segment.c keeps its own text with it. */
static inline void pf_vset_msg_in (char *text, size_t text_len, char *msg,
    size_t msg_len, const char *fmt, va_list ap)
    __attribute__((format (printf, 5, 0)));

static inline void
pf_vset_msg_in (char *text, size_t text_len, char *msg, size_t msg_len,
    const char *fmt, va_list ap)
{
  vsnprintf (text, text_len, fmt, ap);
  if (msg != NULL && msg_len > 0)
    snprintf (msg, msg_len, "%s", text);
}

/* printf into the calling thread's text, and a copy into @msg (always
 * terminated, truncated to @msg_len) unless @msg is NULL or @msg_len 0. */
static inline void pf_set_msg (char *msg, size_t msg_len, const char *fmt, ...)
    __attribute__((format (printf, 3, 4)));

static inline void
pf_set_msg (char *msg, size_t msg_len, const char *fmt, ...)
{
  va_list ap;

  va_start (ap, fmt);
  pf_vset_msg_in (pf_cuda_thread_error, sizeof (pf_cuda_thread_error), msg,
      msg_len, fmt, ap);
  va_end (ap);
}

#endif /* __PF_MSG_PRIVATE_H__ */
