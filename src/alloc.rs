//! The binary's allocator: mimalloc, asked the plain way whenever the layout lets it.
//!
//! Written here rather than taken from the `mimalloc` crate: that crate's `GlobalAlloc` passes
//! every request to `mi_malloc_aligned`, and mimalloc v3 serves an aligned request whose block
//! size is not a power of two (every `Vec` or buffer over 1 KiB of most lengths) by
//! over-allocating and aligning inside the block, and pays its generic path for the rest: about
//! a twentieth of `genai serve`'s instructions per gateway request (docs/BENCHMARKS.md). A layout
//! whose alignment every plain block already has (at most 16, the size a multiple of it:
//! mimalloc's size classes are multiples of 8, of 16 above 16, and a page's first block is
//! 16-aligned) goes to `mi_malloc`; any other keeps the aligned calls. It must never hand out a
//! block less aligned than its layout asks, and owns nothing else.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys as mi;

/// The alignment every plain mimalloc block of a size that is a multiple of it has
/// (`MI_MAX_ALIGN_SIZE`).
const PLAIN_ALIGN: usize = 16;

/// mimalloc, plain where the layout allows and aligned otherwise.
pub struct Mimalloc;

/// Whether a plain block of `size` bytes is aligned enough for `align`.
fn plain(size: usize, align: usize) -> bool {
    align <= PLAIN_ALIGN && size.is_multiple_of(align)
}

// SAFETY: every block comes from mimalloc, which returns null when it cannot allocate, and is
// aligned as its layout asks (plain only where `plain` holds); mimalloc frees and reallocates
// blocks of either kind (`mi_free` and `mi_realloc` find an aligned block's start themselves).
unsafe impl GlobalAlloc for Mimalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        // SAFETY: mimalloc takes any size; the aligned call takes any power of two.
        unsafe {
            if plain(size, align) {
                mi::mi_malloc(size).cast()
            } else {
                mi::mi_malloc_aligned(size, align).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let (size, align) = (layout.size(), layout.align());
        // SAFETY: as in `alloc`.
        unsafe {
            if plain(size, align) {
                mi::mi_zalloc(size).cast()
            } else {
                mi::mi_zalloc_aligned(size, align).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller gives back a block this allocator handed out.
        unsafe { mi::mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let align = layout.align();
        // SAFETY: the caller gives back a block this allocator handed out; a plain block is
        // enough for the new size only where `plain` holds for it.
        unsafe {
            if plain(new_size, align) {
                mi::mi_realloc(ptr.cast(), new_size).cast()
            } else {
                mi::mi_realloc_aligned(ptr.cast(), new_size, align).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every layout from 1 byte to past a large block, at every alignment up to a page, comes
    /// back aligned and writable to its end and, grown and shrunk in turn, keeps its bytes and
    /// its alignment; zeroed blocks read zero.
    #[test]
    fn every_layout_is_aligned_writable_and_reallocated_with_its_bytes() {
        let a = Mimalloc;
        let sizes = (1..=300).chain([1000, 1024, 1025, 1500, 4096, 5000, 70_000, 300_000]);
        for size in sizes {
            for align in [1, 2, 4, 8, 16, 32, 64, 128, 4096] {
                let layout = Layout::from_size_align(size, align).expect("a valid layout");
                // SAFETY: non-zero layouts; each block is written within its current size,
                // reallocated with the layout it has, and freed once.
                unsafe {
                    let mut p = a.alloc(layout);
                    assert!(
                        !p.is_null() && (p as usize).is_multiple_of(align),
                        "alloc {size}/{align}"
                    );
                    std::ptr::write_bytes(p, 0xA5, size);
                    let mut now = size;
                    for next in [size / 2 + 1, size * 3 + 7, 2048 + size, size] {
                        let was = Layout::from_size_align_unchecked(now, align);
                        p = a.realloc(p, was, next);
                        assert!(
                            !p.is_null() && (p as usize).is_multiple_of(align),
                            "{now}->{next}/{align}"
                        );
                        let kept = now.min(next);
                        assert!(
                            (0..kept).all(|i| *p.add(i) == 0xA5),
                            "{now}->{next}/{align}"
                        );
                        std::ptr::write_bytes(p, 0xA5, next);
                        now = next;
                    }
                    a.dealloc(p, layout);
                    let z = a.alloc_zeroed(layout);
                    assert!(
                        !z.is_null() && (z as usize).is_multiple_of(align),
                        "zeroed {size}/{align}"
                    );
                    assert!((0..size).all(|i| *z.add(i) == 0), "zeroed {size}/{align}");
                    a.dealloc(z, layout);
                }
            }
        }
    }
}
