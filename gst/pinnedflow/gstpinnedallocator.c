/* gstpinnedallocator: to be implemented */
#include "gstpinnedallocator.h"
