/* gstpinnedbufferpool: to be implemented */
#include "gstpinnedbufferpool.h"
