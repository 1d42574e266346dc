/* pf-consumer: to be implemented (see pf-consumer.h) */
#include "pf-consumer.h"
