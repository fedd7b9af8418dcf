/* Windows stand-in for the tests' fork-a-child pattern: run this same
   executable again with arguments that name the case, an environment
   change for that child only, and its output captured. Include after
   <cmocka.h>. */
#ifndef MI_TEST_WIN_SPAWN_H
#define MI_TEST_WIN_SPAWN_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <windows.h>

#define MI_SPAWN_TIMEOUT (-2)     /* killed by the watchdog */
#define MI_SPAWN_NOT_STARTED (-3) /* CreatePipe or CreateProcess failed every time */

/* Run "<this exe> <args>" with `env` ("NAME=VALUE" strings, NULL-terminated;
   NAME= unsets) added to our environment for the child; its stdout
   (`capture_stdout`) and/or stderr go to `out` (NUL-terminated), the rest
   to NUL. Returns the exit code, MI_SPAWN_NOT_STARTED (with the Windows
   error in `out`) if it could not be started, MI_SPAWN_TIMEOUT if it ran
   longer than `timeout_ms`. A start that fails is tried again a few times:
   under a loaded Wine, CreateProcess now and then fails transiently, and
   that is not the test's failure. */
__attribute__((unused)) static int mi_spawn_self(const char* args, const char* const* env, bool capture_stdout,
                                                 bool capture_stderr, char* out, size_t out_size, DWORD timeout_ms) {
  if (out_size > 0) out[0] = 0; /* never a previous child's output */
  char exe[MAX_PATH];
  DWORD n = GetModuleFileNameA(NULL, exe, sizeof(exe));
  if (n == 0 || n >= sizeof(exe)) {
    snprintf(out, out_size, "spawn: GetModuleFileName failed (error %lu)", (unsigned long)GetLastError());
    return MI_SPAWN_NOT_STARTED;
  }
  char cmd[2 * MAX_PATH];
  snprintf(cmd, sizeof(cmd), "\"%s\" %s", exe, args);
  /* the environment: set for the child, put back after (the child inherits ours) */
  char saved[16][1024];
  bool had[16];
  int envc = 0;
  for (; env != NULL && env[envc] != NULL && envc < 16; envc++) {
    char name[256];
    const char* eq = strchr(env[envc], '=');
    size_t len = (size_t)(eq - env[envc]);
    memcpy(name, env[envc], len);
    name[len] = 0;
    DWORD got = GetEnvironmentVariableA(name, saved[envc], sizeof(saved[envc]));
    had[envc] = (got > 0 && got < sizeof(saved[envc]));
    SetEnvironmentVariableA(name, eq[1] != 0 ? eq + 1 : NULL);
  }
  SECURITY_ATTRIBUTES sa = {sizeof(sa), NULL, TRUE};
  HANDLE rd = NULL, wr = NULL;
  HANDLE nul = CreateFileA("NUL", GENERIC_WRITE, FILE_SHARE_READ | FILE_SHARE_WRITE, &sa, OPEN_EXISTING, 0, NULL);
  int result = MI_SPAWN_NOT_STARTED;
  DWORD start_error = 0;
  for (int attempt = 0; attempt < 5 && result == MI_SPAWN_NOT_STARTED; attempt++) {
    if (attempt > 0) Sleep(100u << attempt);
    if (!CreatePipe(&rd, &wr, &sa, 0)) {
      start_error = GetLastError();
      continue;
    }
    SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);
    STARTUPINFOA si;
    memset(&si, 0, sizeof(si));
    si.cb = sizeof(si);
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdInput = nul;
    si.hStdOutput = (capture_stdout ? wr : nul);
    si.hStdError = (capture_stderr ? wr : nul);
    PROCESS_INFORMATION pi;
    fflush(NULL);
    if (!CreateProcessA(exe, cmd, NULL, NULL, TRUE, 0, NULL, NULL, &si, &pi)) {
      start_error = GetLastError();
    } else {
      CloseHandle(wr);
      wr = NULL;
      size_t got = 0;
      DWORD r;
      char sink[4096];
      /* read to the end (all of it, keeping what fits) so the child never blocks on a full pipe */
      while (ReadFile(rd, (got + 1 < out_size ? out + got : sink),
                      (DWORD)(got + 1 < out_size ? out_size - 1 - got : sizeof(sink)), &r, NULL) &&
             r > 0) {
        if (got + 1 < out_size) got += r;
      }
      if (out_size > 0) out[got] = 0;
      if (WaitForSingleObject(pi.hProcess, timeout_ms) == WAIT_TIMEOUT) {
        TerminateProcess(pi.hProcess, 99);
        WaitForSingleObject(pi.hProcess, INFINITE);
        result = MI_SPAWN_TIMEOUT;
      } else {
        DWORD code = 0;
        GetExitCodeProcess(pi.hProcess, &code);
        result = (int)code;
      }
      CloseHandle(pi.hThread);
      CloseHandle(pi.hProcess);
    }
    if (wr != NULL) CloseHandle(wr);
    CloseHandle(rd);
    rd = wr = NULL;
  }
  if (result == MI_SPAWN_NOT_STARTED) {
    snprintf(out, out_size, "spawn: the child could not be started (error %lu)", (unsigned long)start_error);
  }
  if (nul != INVALID_HANDLE_VALUE) CloseHandle(nul);
  for (int i = 0; i < envc; i++) {
    char name[256];
    const char* eq = strchr(env[i], '=');
    size_t len = (size_t)(eq - env[i]);
    memcpy(name, env[i], len);
    name[len] = 0;
    SetEnvironmentVariableA(name, had[i] ? saved[i] : NULL);
  }
  return result;
}

#endif
