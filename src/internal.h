/* Every layer's header, for white-box tests (tests/, fuzz/) only: no file in
   src/ includes it (ci/lint.sh's layer check). */
#ifndef MI_INTERNAL_H
#define MI_INTERNAL_H

#include "api/api.h"
#include "secure/secure.h"
#include "dhat/hooks.h"

#endif
