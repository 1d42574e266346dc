/* GStreamer pinnedflow: everything in one include
 * SPDX-License-Identifier: LGPL-2.1-or-later
 */
#ifndef __GST_PINNEDFLOW_H__
#define __GST_PINNEDFLOW_H__
#include <gst/pinnedflow/gstpinnedsegment.h>
#include <gst/pinnedflow/gstpinnedallocator.h>
#include <gst/pinnedflow/gstpinnedbufferpool.h>
#endif
