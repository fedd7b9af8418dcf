//! mimalloc-pprof as Rust's allocator: [`MiMalloc`] for `#[global_allocator]`,
//! a safe layer over the C API a Rust program needs (heaps, collection,
//! options, the version, the error callback), [`usable_size`] (an `unsafe
//! fn`: its pointer cannot be checked), and [`ffi`], the raw bindings of
//! everything in `mimalloc.h`.
//!
//! ```no_run
//! use mimalloc_pprof::MiMalloc;
//!
//! #[global_allocator]
//! static GLOBAL: MiMalloc = MiMalloc;
//! ```
//!
//! The library is compiled from the repository's C sources by `build.rs`
//! and linked statically; the `secure` feature links the hardened build.
//! Works with Rust 1.63 and later.

use std::alloc::{GlobalAlloc, Layout};
use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(feature = "dhat")]
pub mod dhat;
pub mod ffi;
mod option_names;
#[cfg(feature = "pprof")]
pub mod prof;
#[cfg(feature = "stats")]
pub mod stats;

/// Every block is at least this aligned (`MI_MAX_ALIGN_SIZE`): a smaller
/// alignment needs no aligned allocation.
const MIN_ALIGN: usize = 16;

/// Whether `layout` is served by the plain calls: its alignment is one
/// every block of its size has anyway.
#[inline]
fn plain(layout: &Layout) -> bool {
    layout.align() <= MIN_ALIGN && layout.align() <= layout.size()
}

/// The allocator, for `#[global_allocator]`: every alignment Rust can ask
/// for is honoured (the aligned calls past 16 bytes).
#[derive(Clone, Copy, Debug, Default)]
pub struct MiMalloc;

unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            ffi::mi_malloc(layout.size()) as *mut u8
        } else {
            ffi::mi_malloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if plain(&layout) {
            ffi::mi_zalloc(layout.size()) as *mut u8
        } else {
            ffi::mi_zalloc_aligned(layout.size(), layout.align()) as *mut u8
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        ffi::mi_free(ptr as *mut c_void);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if layout.align() <= MIN_ALIGN && layout.align() <= new_size {
            ffi::mi_realloc(ptr as *mut c_void, new_size) as *mut u8
        } else {
            ffi::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align()) as *mut u8
        }
    }
}

/// The version of the mimalloc API the library follows: 20401 for 2.4.1.
pub fn version() -> u32 {
    unsafe { ffi::mi_version() as u32 }
}

/// Free memory back to the OS where it can be: the calling thread's pages,
/// and with `force` everything that can be purged now.
pub fn collect(force: bool) {
    unsafe { ffi::mi_collect(force) }
}

/// The bytes usable in the block at `ptr` (at least what was asked for).
///
/// Not part of the safe layer: the default build reads the block's page
/// without checking that `ptr` is a block (the secure build checks and
/// aborts), so a caller must vouch for it:
///
/// ```
/// use mimalloc_pprof::{usable_size, Heap};
/// use std::alloc::Layout;
///
/// let heap = Heap::new().unwrap();
/// let p = heap.alloc(Layout::from_size_align(100, 8).unwrap()).unwrap();
/// // SAFETY: p is a live block of this allocator
/// assert!(unsafe { usable_size(p.as_ptr()) } >= 100);
/// unsafe { heap.free(p) };
/// ```
///
/// # Safety
/// `ptr` must be a live block of this allocator (or null: 0).
pub unsafe fn usable_size(ptr: *const u8) -> usize {
    ffi::mi_usable_size(ptr as *const c_void)
}

/// Whether `ptr` lies in memory this allocator manages.
pub fn is_in_heap_region<T: ?Sized>(ptr: *const T) -> bool {
    unsafe { ffi::mi_is_in_heap_region(ptr as *const u8 as *const c_void) }
}

/// A path for the C API (the profilers' dumps).
#[cfg(any(feature = "pprof", feature = "dhat"))]
fn c_path(path: &std::path::Path) -> std::io::Result<std::ffi::CString> {
    std::ffi::CString::new(path.to_string_lossy().into_owned().into_bytes())
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidInput, "a path with a NUL byte"))
}

/// An option (`MIMALLOC_<NAME>` in the environment): `MiOption::PURGE_DELAY`
/// and so on, one constant per option of `mimalloc.h`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MiOption(pub ffi::mi_option_t);

impl MiOption {
    pub fn get(self) -> i64 {
        unsafe { ffi::mi_option_get(self.0) as i64 }
    }
    /// The value clamped to `[min, max]`.
    pub fn get_clamp(self, min: i64, max: i64) -> i64 {
        self.get().max(min).min(max)
    }
    pub fn is_enabled(self) -> bool {
        unsafe { ffi::mi_option_is_enabled(self.0) }
    }
    pub fn set(self, value: i64) {
        unsafe { ffi::mi_option_set(self.0, value as std::os::raw::c_long) }
    }
    pub fn set_enabled(self, enable: bool) {
        unsafe { ffi::mi_option_set_enabled(self.0, enable) }
    }
    /// The value unless the environment or a `set` gave one.
    pub fn set_default(self, value: i64) {
        unsafe { ffi::mi_option_set_default(self.0, value as std::os::raw::c_long) }
    }
}

/// A first-class heap: blocks allocated in it can be freed together with
/// [`Heap::destroy`]. A heap belongs to the thread that made it (not `Send`).
#[derive(Debug)]
pub struct Heap {
    raw: NonNull<ffi::mi_heap_t>,
}

impl Heap {
    /// A new heap; None when out of memory.
    pub fn new() -> Option<Heap> {
        NonNull::new(unsafe { ffi::mi_heap_new() }).map(|raw| Heap { raw })
    }

    pub fn as_raw(&self) -> *mut ffi::mi_heap_t {
        self.raw.as_ptr()
    }

    /// A block for `layout` in this heap; None when out of memory.
    pub fn alloc(&self, layout: Layout) -> Option<NonNull<u8>> {
        let p = unsafe {
            if plain(&layout) {
                ffi::mi_heap_malloc(self.as_raw(), layout.size())
            } else {
                ffi::mi_heap_malloc_aligned(self.as_raw(), layout.size(), layout.align())
            }
        };
        NonNull::new(p as *mut u8)
    }

    /// The same, zeroed.
    pub fn alloc_zeroed(&self, layout: Layout) -> Option<NonNull<u8>> {
        let p = unsafe {
            if plain(&layout) {
                ffi::mi_heap_zalloc(self.as_raw(), layout.size())
            } else {
                ffi::mi_heap_zalloc_aligned(self.as_raw(), layout.size(), layout.align())
            }
        };
        NonNull::new(p as *mut u8)
    }

    /// A block of this heap resized; None (the block kept) when out of memory.
    ///
    /// # Safety
    /// `ptr` must be a live block of this heap allocated with `layout`.
    pub unsafe fn realloc(&self, ptr: NonNull<u8>, layout: Layout, new_size: usize) -> Option<NonNull<u8>> {
        let p = if layout.align() <= MIN_ALIGN && layout.align() <= new_size {
            ffi::mi_heap_realloc(self.as_raw(), ptr.as_ptr() as *mut c_void, new_size)
        } else {
            ffi::mi_heap_realloc_aligned(self.as_raw(), ptr.as_ptr() as *mut c_void, new_size, layout.align())
        };
        NonNull::new(p as *mut u8)
    }

    /// Free a block (of any heap of this allocator).
    ///
    /// # Safety
    /// `ptr` must be a live block of this allocator, not used afterwards.
    pub unsafe fn free(&self, ptr: NonNull<u8>) {
        ffi::mi_free(ptr.as_ptr() as *mut c_void)
    }

    /// Whether `ptr` is a block of this heap.
    pub fn contains<T: ?Sized>(&self, ptr: *const T) -> bool {
        unsafe { ffi::mi_heap_contains_block(self.as_raw(), ptr as *const u8 as *const c_void) }
    }

    pub fn collect(&self, force: bool) {
        unsafe { ffi::mi_heap_collect(self.as_raw(), force) }
    }

    /// The heap and every block still in it freed at once.
    ///
    /// # Safety
    /// No block of the heap may be used afterwards.
    pub unsafe fn destroy(self) {
        let raw = self.as_raw();
        std::mem::forget(self);
        ffi::mi_heap_destroy(raw);
    }
}

impl Drop for Heap {
    /// The heap goes; the blocks still in it stay valid (they move to the
    /// thread's default heap).
    fn drop(&mut self) {
        unsafe { ffi::mi_heap_delete(self.as_raw()) }
    }
}

static ERROR_CALLBACK: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn error_trampoline(err: c_int, _arg: *mut c_void) {
    let f = ERROR_CALLBACK.load(Ordering::Acquire);
    if f != 0 {
        let f: fn(i32) = std::mem::transmute::<usize, fn(i32)>(f);
        f(err as i32);
    }
}

/// Called with the error number (EFAULT for a corrupted heap or a bad free,
/// ENOMEM when out of memory, ...) instead of the library's default action;
/// None puts the default back. It must not allocate with this allocator.
pub fn set_error_callback(callback: Option<fn(i32)>) {
    match callback {
        Some(f) => {
            ERROR_CALLBACK.store(f as usize, Ordering::Release);
            unsafe { ffi::mi_register_error(Some(error_trampoline), std::ptr::null_mut()) }
        }
        None => {
            unsafe { ffi::mi_register_error(None, std::ptr::null_mut()) }
            ERROR_CALLBACK.store(0, Ordering::Release);
        }
    }
}
