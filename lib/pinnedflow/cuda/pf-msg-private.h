/* pinnedflow: the optional message buffer of the CUDA layer's calls
 * (private, not installed)
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * pf_cuda_runtime_get(), pf_uploader_new() and their kin take a caller's
 * buffer (@msg, @msg_len; NULL or 0 when the caller wants no reason) for a
 * human-readable reason besides the negative errno.
 */
#ifndef __PF_MSG_PRIVATE_H__
#define __PF_MSG_PRIVATE_H__

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

/* printf into @msg (always terminated, truncated to @msg_len); nothing when
 * @msg is NULL or @msg_len is 0. */
static inline void pf_set_msg (char *msg, size_t msg_len, const char *fmt, ...)
    __attribute__((format (printf, 3, 4)));

static inline void
pf_set_msg (char *msg, size_t msg_len, const char *fmt, ...)
{
  va_list ap;

  if (msg == NULL || msg_len == 0)
    return;
  va_start (ap, fmt);
  vsnprintf (msg, msg_len, fmt, ap);
  va_end (ap);
}

#endif /* __PF_MSG_PRIVATE_H__ */
