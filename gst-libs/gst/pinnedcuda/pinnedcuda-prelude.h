/* GStreamer pinnedflow CUDA: export macro of libgstpinnedflowcuda-1.0
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Built with hidden default visibility: a symbol is exported only when its
 * declaration in an installed header says GST_PINNEDCUDA_API.
 */
#ifndef __GST_PINNEDCUDA_PRELUDE_H__
#define __GST_PINNEDCUDA_PRELUDE_H__

#include <gst/gst.h>

#ifdef BUILDING_GST_PINNEDCUDA
#define GST_PINNEDCUDA_API GST_API_EXPORT
#else
#define GST_PINNEDCUDA_API GST_API_IMPORT
#endif

#endif /* __GST_PINNEDCUDA_PRELUDE_H__ */
