// phobos_ptx.cuh: the inline PTX the runtime (phobos_gpu.cuh) and the printed kernels call.
//
// Everything that is one hardware instruction lives here, behind a small function with
// the instruction's own semantics (the PTX ISA's), so that the rest of the runtime and
// the printed C++ are plain C++.  A host check of the printed code (the compiler's
// tests) puts its own emulation of this file first on the include path.
#pragma once

namespace phobos {

PHOBOS_INLINE unsigned shared_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// 16 bytes from global to shared memory, bypassing registers (and L1).
PHOBOS_INLINE void copy_async_16(void* shared, const void* global) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(shared)),
                 "l"(global)
                 : "memory");
}

// Every cp.async of this thread has landed.
PHOBOS_INLINE void copy_async_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

// Close this thread's group of cp.async issued since the last commit (an empty group counts).
PHOBOS_INLINE void copy_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }

// Every committed group of this thread but the newest PENDING has landed.
template <int PENDING> PHOBOS_INLINE void copy_async_wait_pending() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

// Two 8x8 matrices of 16-bit values into a warp's fragments; lanes 0-15 give the rows'
// addresses (matrix j: lanes 8j to 8j + 7).
PHOBOS_INLINE void load_matrix_x2(unsigned (&r)[2], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared_address(row)));
}

// Two 8x8 matrices of 16-bit values, transposed into a warp's fragments; lanes 0-15
// give the rows' addresses.
PHOBOS_INLINE void load_matrix_x2_trans(unsigned (&r)[2], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
                 : "=r"(r[0]), "=r"(r[1])
                 : "r"(shared_address(row)));
}

// Four 8x8 matrices of 16-bit values into a warp's fragments: lanes 8j to 8j + 7 give the
// rows' addresses of matrix j, and r[j] is its fragment (one m16n8k16 `a` operand when the
// matrices are its four 8x8 quarters).
PHOBOS_INLINE void load_matrix_x4(unsigned (&r)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}

// The same, transposed: two m16n8k16 `b` operands from a row-major [k, n] tile.
PHOBOS_INLINE void load_matrix_x4_trans(unsigned (&r)[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(shared_address(row)));
}

// d += a * b on the tensor cores, with the fragments as 32-bit registers.
template <class T>
PHOBOS_INLINE void mma_16816(float* d, const unsigned (&a)[4], const unsigned (&b)[2]);
template <>
PHOBOS_INLINE void mma_16816<f16>(float* d, const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}
template <>
PHOBOS_INLINE void mma_16816<bf16>(float* d, const unsigned (&a)[4], const unsigned (&b)[2]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
        "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// A TMA descriptor (the driver's CUtensorMap: 128 opaque bytes, made by the launcher with
// cuTensorMapEncodeTiled), passed as a __grid_constant__ parameter.
struct alignas(64) TensorMap {
    unsigned long long opaque[16];
};

// COUNT mbarriers at BARS, each expecting ARRIVALS arrivals a phase; then the
// initialisation is made visible to the async proxy (the TMA units that complete them).
PHOBOS_INLINE void mbarrier_init(unsigned long long* bars, int count, unsigned arrivals) {
    for (int i = 0; i < count; ++i) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bars + i)),
                     "r"(arrivals)
                     : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// Arrive on BAR, which this phase's copies will owe BYTES more bytes.
PHOBOS_INLINE void mbarrier_arrive_expect(unsigned long long* bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(
                     shared_address(bar)),
                 "r"(bytes)
                 : "memory");
}

// Arrive once on BAR (a consumer handing a ring's stage back).
PHOBOS_INLINE void mbarrier_arrive(unsigned long long* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(shared_address(bar)) : "memory");
}

// The box of MAP at coordinates C0 (the innermost axis) to C4 into shared memory at
// SHARED, completing on BAR's transaction count; elements outside the tensor arrive as
// zeros.  RANK is the tensor's (2 to 5).
template <int RANK>
PHOBOS_INLINE void tma_load(void* shared, const TensorMap* map, unsigned long long* bar, int c0,
                            int c1, int c2 = 0, int c3 = 0, int c4 = 0) {
    const unsigned to = shared_address(shared), on = shared_address(bar);
    const unsigned long long from = reinterpret_cast<unsigned long long>(map);
    if constexpr (RANK == 2) {
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(to), "l"(from), "r"(c0), "r"(c1),
                     "r"(on)
                     : "memory");
    } else if constexpr (RANK == 3) {
        asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(to), "l"(from), "r"(c0),
                     "r"(c1), "r"(c2), "r"(on)
                     : "memory");
    } else if constexpr (RANK == 4) {
        asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(to), "l"(from), "r"(c0),
                     "r"(c1), "r"(c2), "r"(c3), "r"(on)
                     : "memory");
    } else {
        static_assert(RANK == 5, "TMA copies tensors of 2 to 5 axes");
        asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(to), "l"(from),
                     "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(c4), "r"(on)
                     : "memory");
    }
}

// Wait until BAR's phase of parity PARITY has completed.
PHOBOS_INLINE void mbarrier_wait(unsigned long long* bar, int parity) {
    unsigned done = 0;
    do {
        asm volatile(
            "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
            " selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(shared_address(bar)), "r"(parity)
            : "memory");
    } while (!done);
}

// Shared memory this thread wrote (its cp.async included, once landed) is visible to the
// async proxy, which wgmma reads it through.
PHOBOS_INLINE void fence_async_shared() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The thread's index, read once, and a value computed here and held in a register: the
// compiler may neither read %tid.x again nor compute the value again where it is used.
// ptxas serializes every wgmma of a kernel (C7514) when a loop's exit block computes
// anything before the wait for the products the loop left in flight, and the compiler
// sinks there whatever only the code after the loop uses (passes/mma_waits.py).
PHOBOS_INLINE int thread_index() {
    int tid;
    asm volatile("mov.u32 %0, %%tid.x;\n" : "=r"(tid));
    return tid;
}

PHOBOS_INLINE int pinned(int value) {
    asm volatile("" : "+r"(value));
    return value;
}

// Before a warpgroup's first wgmma on registers other instructions wrote.
PHOBOS_INLINE void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Close the warpgroup's wgmma issued since the last commit into one group.
PHOBOS_INLINE void wgmma_commit() {
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

// Every committed wgmma group of the warpgroup but the newest PENDING has completed.
template <int PENDING> PHOBOS_INLINE void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(PENDING) : "memory");
}

// A wgmma matrix descriptor (PTX ISA, "Matrix Descriptor Format"): the start address, the
// leading and stride byte offsets (16-byte units, 14 bits each) and the swizzle mode
// (1: 128-byte, 2: 64-byte, 3: 32-byte); base offset 0, so swizzled tiles start on 1024 bytes.
PHOBOS_INLINE u64 wgmma_descriptor(const void* start, unsigned lbo, unsigned sbo, unsigned mode) {
    return u64((shared_address(start) & 0x3FFFF) >> 4) | (u64((lbo >> 4) & 0x3FFF) << 16) |
           (u64((sbo >> 4) & 0x3FFF) << 32) | (u64(mode) << 62);
}

// p moved up to the next multiple of ALIGN bytes in the shared address space.
template <int ALIGN> PHOBOS_INLINE unsigned char* align_shared(unsigned char* p) {
    if constexpr (ALIGN <= 16) {
        return p;
    } else {
        const unsigned at = shared_address(p);
        return p + ((ALIGN - int(at % ALIGN)) % ALIGN);
    }
}

// A compiler barrier on registers that an asynchronous unit writes (wgmma's accumulators):
// their reads and writes stay on their side of the fence and wait.
template <int N> PHOBOS_INLINE void fence_registers(float* r) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// The same fence on 16-bit registers (a wgmma's register A operand).
template <int N, class T> PHOBOS_INLINE void fence_registers_16(T* r) {
#pragma unroll
    for (int i = 0; i < N; i += 2) {
        unsigned both = pack2(r[i], r[i + 1]);
        asm volatile("" : "+r"(both)::"memory");
        unpack2(both, r[i], r[i + 1]);
    }
}

}  // namespace phobos
