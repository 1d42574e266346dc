/* pf-node: see pf-node.h */
#include "pf-node.h"
