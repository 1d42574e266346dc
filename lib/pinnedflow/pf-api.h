/* pinnedflow: export macro of libpinnedflow
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * The library is built with hidden default visibility: a function is part
 * of the ABI only when its declaration in an installed header says PF_API.
 */
#ifndef __PF_API_H__
#define __PF_API_H__

#if defined(__GNUC__) || defined(__clang__)
#define PF_API extern __attribute__ ((visibility ("default")))
#else
#define PF_API extern
#endif

#endif /* __PF_API_H__ */
