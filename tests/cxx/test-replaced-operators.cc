/* A program that replaces some of C++'s operators and keeps the rest, run
   with the library preloaded (tests/CMakeLists.txt): correct C++, so it
   must exit 0 with no report. With MI_TEST_REPLACE_DELETE its delete calls
   free, and the library's new allocates; with MI_TEST_REPLACE_NEW its new
   calls malloc, and the library's delete frees. The secure build keeps each
   block's kind (new's, malloc's), and must not take these pairs for a
   mismatch: it checks whose operators the process calls before it reports
   one (src/base/secure-cxx-operators.c). */
#include <cstdio>
#include <cstdlib>
#include <map>
#include <new>
#include <string>
#include <vector>

/* the program's own pairs, which gcc would flag once new and delete are inlined */
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#if MI_TEST_REPLACE_DELETE
void operator delete(void* p) noexcept {
  std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept {
  std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  std::free(p);
}
#endif
#if MI_TEST_REPLACE_NEW
void* operator new(std::size_t n) {
  void* p = std::malloc(n != 0 ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
void* operator new[](std::size_t n) {
  void* p = std::malloc(n != 0 ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
#endif

static void escape(void* p) {
  __asm__ volatile("" : : "r"(p) : "memory");
}

int main() {
  std::vector<std::string> v;
  std::map<int, std::string> m;
  for (int i = 0; i < 2000; i++) {
    v.push_back(std::string((size_t)(i % 300), 'r'));
    m[i] = v.back();
  }
  const size_t sizes[] = {40, 20000, 300000};
  for (size_t n : sizes) {
    char* a = new char[n];
    escape(a);
    delete[] a;
    std::string* s = new std::string(n, 'x');
    escape(s);
    delete s;
  }
  std::puts("ok");
  return 0;
}
