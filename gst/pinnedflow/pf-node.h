/* pinnedflow: dataflow-node API (loaned frames, simple consume), plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * Written by the dataflow-bridge work (issue 5); placeholder until then.
 */
#ifndef __PF_NODE_H__
#define __PF_NODE_H__
#include "pf-producer.h"
#include "pf-consumer.h"
#endif
