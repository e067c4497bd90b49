// Included first in every file of an ASan build (cmake/PcSanitizers.cmake).
//
// LLVM's headers poison the free space of their allocators (BumpPtrAllocator,
// Recycler, json::Value) when the including file is built with ASan. pc
// inlines those headers while libMLIR and libLLVM (Debian's) run their own,
// uninstrumented copies, which never unpoison: an allocation made by ours
// and written by theirs reads as use-after-poison. So in pc's files the
// manual poisoning is off; ASan's own checks of every access stay on.
#include <sanitizer/asan_interface.h>
#undef __asan_poison_memory_region
#undef __asan_unpoison_memory_region
#define __asan_poison_memory_region(p, size) ((void)(p), (void)(size))
#define __asan_unpoison_memory_region(p, size) ((void)(p), (void)(size))
