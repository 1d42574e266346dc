/* pf-producer: to be implemented (see pf-producer.h) */
#include "pf-producer.h"
