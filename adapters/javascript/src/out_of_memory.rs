//! When the sandbox refuses memory, a program gets one plain line on stderr and the run
//! ends, instead of Rust's "memory allocation of N bytes failed" and a note about
//! `RUST_BACKTRACE` (the host's result then says which cap was reached).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::Write;

struct Guarded;

#[global_allocator]
static GLOBAL: Guarded = Guarded;

fn out_of_memory() -> ! {
    let _ = std::io::stderr().write_all(
        b"out of memory: the program reached the sandbox's memory cap; use less memory \
          (smaller arrays and strings), or ask for a higher cap\n",
    );
    std::process::abort()
}

fn checked(ptr: *mut u8) -> *mut u8 {
    if ptr.is_null() {
        out_of_memory()
    }
    ptr
}

// SAFETY: every call is passed on to the system allocator unchanged; only a failed
// allocation is turned into an abort.
unsafe impl GlobalAlloc for Guarded {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        checked(unsafe { System.alloc(layout) })
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        checked(unsafe { System.alloc_zeroed(layout) })
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        checked(unsafe { System.realloc(ptr, layout, new_size) })
    }
}
