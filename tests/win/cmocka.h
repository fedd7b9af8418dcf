/* The Windows build's <cmocka.h>: the self-made runner (cmocka-shim.h). */
#include "cmocka-shim.h"
