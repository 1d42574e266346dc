/* pf-protocol: to be implemented (see pf-protocol.h) */
#include "pf-protocol.h"
