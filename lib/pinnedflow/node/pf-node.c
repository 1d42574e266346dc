/* pinnedflow: what the node API's producer and consumer share, plain C
 * Copyright (C) 2026 gst-pinnedflow developers
 * SPDX-License-Identifier: LGPL-2.1-or-later
 *
 * See pf-node.h. The error texts of the node API and the sizes of its
 * public structs (for bindings that mirror them). The node API's other
 * parts: pf-video-layout.c (plane layout), pf-caps.c (caps text),
 * pf-node-producer.c, pf-node-consumer.c.
 *
 * No state: every function is reentrant.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <pinnedflow/pf-node.h>

#include <errno.h>
#include <string.h>

const char *
pf_node_strerror (int err)
{
  const char *d;

  switch (-err) {
    case 0:
      return "success";
    case EAGAIN:
      return "no free slot in the pool (every frame is loaned or held)";
    case ETIMEDOUT:
      return "timed out (or the producer stopped reading our releases)";
    case ETIME:
      return "the producer accepted the connection but sent no HELLO in time";
    case EPIPE:
      return "the peer is gone (connection closed; after EOS: a clean end)";
    case ECONNRESET:
      return "the producer went away without EOS (crashed, killed, or "
          "closed mid-stream)";
    case EDQUOT:
      return "the producer's shared memory exceeds this consumer's budget";
    case EUSERS:
      return "the producer serves its maximum of consumers already";
    case ECANCELED:
      return "cancelled (flushing or shutting down)";
    case EPROTO:
      return "protocol violation by the peer (see the error message)";
    case EPROTONOSUPPORT:
      return "the peer speaks another protocol version";
    case EMSGSIZE:
      return "a frame is larger than a slot, or caps text too long";
    case EADDRINUSE:
      return "another producer is live on that socket path";
    case ENOTSUP:
      return "not supported (an unknown video format, or a CUDA device that "
          "cannot share memory as an fd)";
    case ENOENT:
      return "no such socket or frame";
    case EINVAL:
      return "invalid argument";
    default:
      break;
  }
  d = strerrordesc_np (-err);
  return d ? d : "unknown error";
}

size_t
pf_node_abi_sizeof (const char *type_name)
{
  if (type_name == NULL)
    return 0;
  if (strcmp (type_name, "pf_node_frame") == 0)
    return sizeof (pf_node_frame);
  if (strcmp (type_name, "pf_node_loan") == 0)
    return sizeof (pf_node_loan);
  if (strcmp (type_name, "pf_node_video_layout") == 0)
    return sizeof (pf_node_video_layout);
  if (strcmp (type_name, "pf_node_caps_info") == 0)
    return sizeof (pf_node_caps_info);
  if (strcmp (type_name, "pf_node_device_info") == 0)
    return sizeof (pf_node_device_info);
  return 0;
}
