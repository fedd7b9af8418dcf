/* The expected outcomes that child.h's expect() and expect_clean_exit()
   do not state: a report known by the start of its line, and a program that
   must print nothing at all. Include after child.h. */
#ifndef MI_HARDENED_EXPECT_H
#define MI_HARDENED_EXPECT_H

/* As expect() (child.h), for a report whose line is only known by its start. */
__attribute__((unused)) static void expect_report_start(mi_case_fn fn, int sig, const char* start) {
  char err[8192];
  int status = run_child(fn, false, err, sizeof(err));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) print_error("control: status %d, stderr: %s\n", status, err);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_null(strstr(err, "mimalloc: error:"));
  status = run_child(fn, true, err, sizeof(err));
  if (!WIFSIGNALED(status) || WTERMSIG(status) != sig) print_error("misuse: status %d, stderr: %s\n", status, err);
  assert_true(WIFSIGNALED(status));
  assert_int_equal(WTERMSIG(status), sig);
  char line[160];
  snprintf(line, sizeof(line), "mimalloc: error: %s", start);
  if (strstr(err, line) == NULL) print_error("expected '%s' in: %s\n", line, err);
  assert_non_null(strstr(err, line));
}

/* A program that must exit 0 and print nothing at all, run with and without
   its (harmless) misuse. */
__attribute__((unused)) static void expect_quiet_exit(mi_case_fn fn) {
  for (int misuse = 0; misuse <= 1; misuse++) {
    char err[8192];
    int status = run_child(fn, misuse != 0, err, sizeof(err));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || err[0] != 0)
      print_error("%s: status %d, stderr: %s\n", misuse ? "misuse" : "control", status, err);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_string_equal(err, "");
  }
}

#endif
