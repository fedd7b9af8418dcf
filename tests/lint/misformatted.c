/* Positive control of the clang-format check (ci/lint.sh): this file breaks
   the style of .clang-format on purpose and must be reported. Not built. */
int   lint_misformatted( int x ){
    return x*2 ;}
