/* gstpinnedsegment: to be implemented */
#include "gstpinnedsegment.h"
