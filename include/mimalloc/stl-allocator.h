/* C++11 allocators for the standard containers, included by mimalloc.h
   when compiled as C++ (not meant to be included on its own):

     std::vector<int, mi_stl_allocator<int>>               the default heap
     std::map<K, V, std::less<K>, mi_heap_stl_allocator<...>>  a heap of its own
     mi_heap_destroy_stl_allocator<T>                      same, released at once

   Allocation goes through mi_new_n / mi_heap_alloc_new_n, so a container
   that cannot grow gets std::bad_alloc, as with std::allocator. The heap
   allocators share their heap between copies (and rebound copies) by
   reference count; the last one deletes it (its live blocks move to the
   thread's backing heap) or, for the destroying kind, frees all its blocks
   at once, which is why that kind's deallocate does nothing. A heap belongs
   to the thread that made it: so does a container using one. */
#ifndef MIMALLOC_STL_ALLOCATOR_H
#define MIMALLOC_STL_ALLOCATOR_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

template <class T>
struct mi_stl_allocator_base {
  typedef T value_type;
  typedef std::size_t size_type;
  typedef std::ptrdiff_t difference_type;
  typedef T& reference;
  typedef const T& const_reference;
  typedef T* pointer;
  typedef const T* const_pointer;
  typedef std::true_type propagate_on_container_copy_assignment;
  typedef std::true_type propagate_on_container_move_assignment;
  typedef std::true_type propagate_on_container_swap;

  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  template <class U>
  void destroy(U* p) noexcept {
    p->~U();
  }
  size_type max_size() const noexcept {
    return static_cast<size_type>(PTRDIFF_MAX) / sizeof(T);
  }
  pointer address(reference x) const noexcept {
    return std::addressof(x);
  }
  const_pointer address(const_reference x) const noexcept {
    return std::addressof(x);
  }
};

/* Stateless: every instance allocates from the calling thread's default heap. */
template <class T>
struct mi_stl_allocator : public mi_stl_allocator_base<T> {
  typedef std::true_type is_always_equal;
  template <class U>
  struct rebind {
    typedef mi_stl_allocator<U> other;
  };

  mi_stl_allocator() noexcept = default;
  mi_stl_allocator(const mi_stl_allocator&) noexcept = default;
  template <class U>
  mi_stl_allocator(const mi_stl_allocator<U>&) noexcept {}
  mi_stl_allocator select_on_container_copy_construction() const {
    return *this;
  }

  T* allocate(std::size_t count, const void* hint = nullptr) {
    (void)hint;
    return static_cast<T*>(mi_new_n(count, sizeof(T)));
  }
  void deallocate(T* p, std::size_t count) noexcept {
    (void)count;
    mi_free(p);
  }
};

template <class T1, class T2>
bool operator==(const mi_stl_allocator<T1>&, const mi_stl_allocator<T2>&) noexcept {
  return true;
}
template <class T1, class T2>
bool operator!=(const mi_stl_allocator<T1>&, const mi_stl_allocator<T2>&) noexcept {
  return false;
}

#define MI_HAS_HEAP_STL_ALLOCATOR 1

/* What the two heap allocators share: the heap, held by a shared_ptr whose
   deleter is chosen by `Destroy`. A heap passed in by the program is never
   deleted or destroyed by the allocator (a no-op deleter). */
template <class T, bool Destroy>
struct mi_heap_stl_allocator_base : public mi_stl_allocator_base<T> {
  typedef std::false_type is_always_equal;

  T* allocate(std::size_t count, const void* hint = nullptr) {
    (void)hint;
    return static_cast<T*>(mi_heap_alloc_new_n(heap.get(), count, sizeof(T)));
  }
  void collect(bool force) {
    mi_heap_collect(heap.get(), force);
  }
  template <class U>
  bool is_equal(const mi_heap_stl_allocator_base<U, Destroy>& other) const noexcept {
    return heap == other.heap;
  }

 protected:
  std::shared_ptr<mi_heap_t> heap;
  template <class U, bool D>
  friend struct mi_heap_stl_allocator_base;

  mi_heap_stl_allocator_base() {
    mi_heap_t* h = mi_heap_new();
    if (h == nullptr) throw std::bad_alloc();
    heap.reset(h, Destroy ? &release_destroy : &release_delete);
  }
  explicit mi_heap_stl_allocator_base(mi_heap_t* h) : heap(h, [](mi_heap_t*) {}) {}
  template <class U>
  mi_heap_stl_allocator_base(const mi_heap_stl_allocator_base<U, Destroy>& other) noexcept : heap(other.heap) {}

 private:
  static void release_delete(mi_heap_t* h) {
    mi_heap_delete(h);
  }
  static void release_destroy(mi_heap_t* h) {
    mi_heap_destroy(h);
  }
};

/* Blocks in a heap of the allocator's own (made by the default constructor)
   or one the program passes. */
template <class T>
struct mi_heap_stl_allocator : public mi_heap_stl_allocator_base<T, false> {
  template <class U>
  struct rebind {
    typedef mi_heap_stl_allocator<U> other;
  };
  mi_heap_stl_allocator() : mi_heap_stl_allocator_base<T, false>() {}
  explicit mi_heap_stl_allocator(mi_heap_t* h) : mi_heap_stl_allocator_base<T, false>(h) {}
  template <class U>
  mi_heap_stl_allocator(const mi_heap_stl_allocator<U>& other) noexcept : mi_heap_stl_allocator_base<T, false>(other) {}
  mi_heap_stl_allocator select_on_container_copy_construction() const {
    return *this;
  }
  void deallocate(T* p, std::size_t count) noexcept {
    (void)count;
    mi_free(p);
  }
};

template <class T1, class T2>
bool operator==(const mi_heap_stl_allocator<T1>& x, const mi_heap_stl_allocator<T2>& y) noexcept {
  return x.is_equal(y);
}
template <class T1, class T2>
bool operator!=(const mi_heap_stl_allocator<T1>& x, const mi_heap_stl_allocator<T2>& y) noexcept {
  return !x.is_equal(y);
}

/* As mi_heap_stl_allocator, but nothing is freed one by one: the heap is
   destroyed, with every block in it, when the last copy goes. Only for
   containers that do not outlive it and hold no pointer out of it. */
template <class T>
struct mi_heap_destroy_stl_allocator : public mi_heap_stl_allocator_base<T, true> {
  template <class U>
  struct rebind {
    typedef mi_heap_destroy_stl_allocator<U> other;
  };
  mi_heap_destroy_stl_allocator() : mi_heap_stl_allocator_base<T, true>() {}
  explicit mi_heap_destroy_stl_allocator(mi_heap_t* h) : mi_heap_stl_allocator_base<T, true>(h) {}
  template <class U>
  mi_heap_destroy_stl_allocator(const mi_heap_destroy_stl_allocator<U>& other) noexcept
      : mi_heap_stl_allocator_base<T, true>(other) {}
  mi_heap_destroy_stl_allocator select_on_container_copy_construction() const {
    return *this;
  }
  void deallocate(T* p, std::size_t count) noexcept {
    (void)p;
    (void)count;
  }
};

template <class T1, class T2>
bool operator==(const mi_heap_destroy_stl_allocator<T1>& x, const mi_heap_destroy_stl_allocator<T2>& y) noexcept {
  return x.is_equal(y);
}
template <class T1, class T2>
bool operator!=(const mi_heap_destroy_stl_allocator<T1>& x, const mi_heap_destroy_stl_allocator<T2>& y) noexcept {
  return !x.is_equal(y);
}

#endif
