"""Run the C++ that the GPU back end prints on the host, under an emulation of CUDA.

The printed kernel is compiled with the host's C++ compiler.  ``cuda_runtime`` below
emulates the execution model: one ``std::thread`` per CUDA thread of a block,
``__syncthreads`` a ``std::barrier``, warp shuffles an exchange through memory,
``__half`` a ``_Float16``; blocks run one after another.  ``ptx`` replaces the
runtime's ``phobos_ptx.cuh`` (it comes first on the include path), one function per
instruction, written from the PTX ISA's definitions and not from the compiler's
layout code: ``ldmatrix`` and ``mma.sync`` pool the warp's addresses or fragments
and hand each lane its share; a ``wgmma`` descriptor is an index into the thread's
table of what it described, and each thread computes its own accumulators reading
shared memory where the ISA's canonical layouts put each element (K-major or
MN-major, with the 128-, 64- or 32-byte swizzle), the register A operand pooled from
the warpgroup's fragments.  The printed ``wgmma`` helpers are defined here too,
under the include guards the printer gives them, so the kernel's own are skipped.

So this checks what the printed code computes (coordinates, vector and boundary
paths, masks, shuffles, shared-memory exchanges, fragment and descriptor
arithmetic) against the CPU interpreter, with no GPU.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from phobos.compile.gpu import RUNTIME_DIR, GeneratedKernel
from phobos.compile.gpu.cdtypes import ctype

COMPILER = shutil.which("g++")

CUDA_RUNTIME = r"""
#pragma once
#include <barrier>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <map>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include <math.h>
#include <mutex>
#include <stdio.h>
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
#define __grid_constant__
struct uint3 { unsigned x = 0, y = 0, z = 0; };
thread_local uint3 threadIdx, blockIdx;
uint3 gridDim, blockDim;
std::barrier<>* emulated_barrier;
alignas(16) unsigned char emulated_exchange[1024][8];
inline void __syncthreads() { emulated_barrier->arrive_and_wait(); }
std::barrier<>* emulated_warp_barriers[32];
std::barrier<>* emulated_group_barriers[8];
std::barrier<>* emulated_consumer_barrier;  // a warp-specialised CTA's consumers (bar.sync 1)
template <class T> T __shfl_xor_sync(unsigned, T v, int lane_mask) {
    std::memcpy(emulated_exchange[threadIdx.x], &v, sizeof(T));
    emulated_warp_barriers[threadIdx.x / 32]->arrive_and_wait();
    unsigned partner = (threadIdx.x & ~31u) | ((threadIdx.x & 31u) ^ lane_mask);
    T out;
    std::memcpy(&out, emulated_exchange[partner], sizeof(T));
    emulated_warp_barriers[threadIdx.x / 32]->arrive_and_wait();
    return out;
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
// The _rn float intrinsics: -O0 on x86-64 rounds each SSE operation once, as they do.
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __uint2float_rn(unsigned u) { return static_cast<float>(u); }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (1ull * a * b) >> 32; }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
    return static_cast<unsigned long long>((static_cast<unsigned __int128>(a) * b) >> 64);
}
std::mutex emulated_atomics;
template <class T> T atomicAdd(T* p, T v) {
    std::lock_guard<std::mutex> hold(emulated_atomics);
    T old = *p;
    *p = old + v;
    return old;
}
template <class T> T atomicMax(T* p, T v) {
    std::lock_guard<std::mutex> hold(emulated_atomics);
    T old = *p;
    if (v > old) *p = v;
    return old;
}
template <class T> T atomicExch(T* p, T v) {
    std::lock_guard<std::mutex> hold(emulated_atomics);
    T old = *p;
    *p = v;
    return old;
}
template <class T> T atomicCAS(T* p, T compare, T v) {
    std::lock_guard<std::mutex> hold(emulated_atomics);
    T old = *p;
    if (old == compare) *p = v;
    return old;
}
[[noreturn]] inline void __assertfail(const char* message, const char* file, unsigned line,
                                      const char*, unsigned long) {
    fprintf(stderr, "%s:%u: assertion failed: %s\n", file, line, message);
    std::abort();
}
"""

PTX = r"""
#pragma once
namespace phobos {
inline unsigned shared_address(const void* p) {
    return static_cast<unsigned>(reinterpret_cast<std::uintptr_t>(p));
}
template <int ALIGN> inline unsigned char* align_shared(unsigned char* p) {
    const std::uintptr_t at = reinterpret_cast<std::uintptr_t>(p);
    return p + ((ALIGN - at % ALIGN) % ALIGN);
}
inline void copy_async_16(void* shared, const void* global) { std::memcpy(shared, global, 16); }
// A TMA descriptor as the host launcher below fills it (the driver's is opaque): the
// tensor's bytes, extents and strides (elements), the box, innermost axis first.
struct TensorMap {
    const unsigned char* base;
    long long dims[5], strides[5];
    int box[5], rank, element;
};
// An mbarrier: its phase completes when the arrivals it was made for came and the copies
// they announced delivered every byte.  A wait that would never return aborts the run.
struct EmulatedMbarrier { unsigned expected = 0, arrived = 0, completed = 0; long long bytes = 0; };
std::mutex emulated_mbarrier_lock;
std::condition_variable emulated_mbarrier_changed;
std::map<const unsigned long long*, EmulatedMbarrier> emulated_mbarriers;
inline void emulated_settle(EmulatedMbarrier& b) {
    if (b.arrived == b.expected && b.bytes == 0) {
        b.arrived = 0;
        ++b.completed;
        emulated_mbarrier_changed.notify_all();
    }
}
inline void mbarrier_init(unsigned long long* bars, int count, unsigned arrivals) {
    std::lock_guard<std::mutex> hold(emulated_mbarrier_lock);
    for (int i = 0; i < count; ++i) emulated_mbarriers[bars + i] = {arrivals, 0, 0, 0};
}
inline void mbarrier_arrive_expect(unsigned long long* bar, unsigned bytes) {
    std::lock_guard<std::mutex> hold(emulated_mbarrier_lock);
    EmulatedMbarrier& b = emulated_mbarriers.at(bar);
    b.bytes += bytes;
    ++b.arrived;
    emulated_settle(b);
}
inline void mbarrier_arrive_warp(unsigned long long* bar, int lane) {
    emulated_warp_barriers[threadIdx.x / 32]->arrive_and_wait();  // __syncwarp
    if (lane != 0) return;
    std::lock_guard<std::mutex> hold(emulated_mbarrier_lock);
    EmulatedMbarrier& b = emulated_mbarriers.at(bar);
    ++b.arrived;
    emulated_settle(b);
}
inline void emulated_delivered(unsigned long long* bar, long long bytes) {
    std::lock_guard<std::mutex> hold(emulated_mbarrier_lock);
    EmulatedMbarrier& b = emulated_mbarriers.at(bar);
    b.bytes -= bytes;
    emulated_settle(b);
}
inline void mbarrier_wait(unsigned long long* bar, int parity) {
    std::unique_lock<std::mutex> hold(emulated_mbarrier_lock);
    const EmulatedMbarrier& b = emulated_mbarriers.at(bar);
    if (!emulated_mbarrier_changed.wait_for(hold, std::chrono::seconds(60), [&] {
            return int(b.completed % 2) != parity;
        })) {
        std::fprintf(stderr, "emulation: an mbarrier wait never returned (a deadlock)\n");
        std::abort();
    }
}
// The box at (c0, c1, ...) into SHARED: rows of box[0] elements, zeros outside the
// tensor, each row's 16-byte chunks swizzled by the row's bytes (the swizzle width), as
// the PTX ISA's SWIZZLE_32B/64B/128B modes place them from a 1024-byte-aligned atom.
template <int RANK>
inline void tma_load(void* shared, const TensorMap* map, unsigned long long* bar, int c0, int c1,
                     int c2 = 0, int c3 = 0, int c4 = 0) {
    const long long at[5] = {c0, c1, c2, c3, c4};
    const int e = map->element, width = map->box[0] * e, chunks = width / 16;
    unsigned char* out = static_cast<unsigned char*>(shared);
    for (int r = 0; r < map->box[1]; ++r) {
        for (int c = 0; c < map->box[0]; ++c) {
            long long index[5] = {at[0] + c, at[1] + r, at[2], at[3], at[4]};
            bool inside = true;
            long long offset = 0;
            for (int a = 0; a < RANK; ++a) {
                inside = inside && index[a] >= 0 && index[a] < map->dims[a];
                offset += index[a] * map->strides[a];
            }
            const unsigned linear = r * width + c * e;
            const unsigned placed = linear ^ (((linear >> 7) & (chunks - 1)) << 4);
            for (int b = 0; b < e; ++b) out[placed + b] = inside ? map->base[offset * e + b] : 0;
        }
    }
    emulated_delivered(bar, (long long)map->box[0] * map->box[1] * e);
}
// The register pool is not emulated; the consumers' named barrier is.
template <int N> inline void registers_down() {}
template <int N> inline void registers_up() {}
template <int THREADS> inline void consumer_barrier() {
    emulated_consumer_barrier->arrive_and_wait();
}
inline void copy_async_commit() {}
template <int PENDING> inline void copy_async_wait_pending() {}
inline void fence_async_shared() {}
inline int thread_index() { return threadIdx.x; }
inline int pinned(int value) { return value; }
inline void wgmma_fence() {}
inline void wgmma_commit() {}
template <int PENDING> inline void wgmma_wait() {}
template <int N> inline void fence_registers(float*) {}
template <int N, class T> inline void fence_registers_16(T*) {}

// ldmatrix: lanes 8j .. 8j + 7 give the rows of matrix j; lane l takes row l / 4,
// elements 2 (l % 4) and + 1 (transposed: column l / 4 of rows 2 (l % 4) and + 1).
unsigned short emulated_rows[1024][8];
template <int N, bool TRANS> void emulated_load_matrix(unsigned (&r)[N], const void* row) {
    unsigned t = threadIdx.x, base = t & ~31u, lane = t & 31u;
    if (lane < 8 * N) std::memcpy(emulated_rows[t], row, 16);
    emulated_warp_barriers[t / 32]->arrive_and_wait();
    for (int j = 0; j < N; ++j) {
        const unsigned short (*rows)[8] = emulated_rows + base + j * 8;
        unsigned low = TRANS ? rows[(lane % 4) * 2][lane / 4] : rows[lane / 4][(lane % 4) * 2];
        unsigned high = TRANS ? rows[(lane % 4) * 2 + 1][lane / 4] : rows[lane / 4][(lane % 4) * 2 + 1];
        r[j] = low | (high << 16);
    }
    emulated_warp_barriers[t / 32]->arrive_and_wait();
}
inline void load_matrix_x2(unsigned (&r)[2], const void* row) { emulated_load_matrix<2, false>(r, row); }
inline void load_matrix_x2_trans(unsigned (&r)[2], const void* row) { emulated_load_matrix<2, true>(r, row); }
inline void load_matrix_x4(unsigned (&r)[4], const void* row) { emulated_load_matrix<4, false>(r, row); }
inline void load_matrix_x4_trans(unsigned (&r)[4], const void* row) { emulated_load_matrix<4, true>(r, row); }

template <class T> float emulated_half(unsigned word, int high) {
    unsigned short bits = high ? (word >> 16) : (word & 0xffff);
    T value;
    std::memcpy(&value, &bits, 2);
    return float(value);
}

// mma.sync.m16n8k16: a0..a7 are rows g (g + 8 for a2, a3, a6, a7) at columns 2 (l % 4)
// + {0, 1} (+ 8 for a4..a7); b0, b1 rows 2 (l % 4) + {0, 1} (+ 8 for b2, b3) at column g;
// d0, d1 row g, d2, d3 row g + 8, columns 2 (l % 4) + {0, 1}  (g = l / 4).
unsigned emulated_fragments[1024][6];
template <class T> void emulated_mma(float* d, const unsigned (&a)[4], const unsigned (&b)[2]) {
    unsigned t = threadIdx.x, base = t & ~31u, lane = t & 31u;
    for (int j = 0; j < 4; ++j) emulated_fragments[t][j] = a[j];
    emulated_fragments[t][4] = b[0];
    emulated_fragments[t][5] = b[1];
    emulated_warp_barriers[t / 32]->arrive_and_wait();
    float A[16][16], B[16][8];
    for (unsigned q = 0; q < 32; ++q) {
        unsigned g = q / 4, c = (q % 4) * 2;
        const unsigned* f = emulated_fragments[base + q];
        for (int h = 0; h < 2; ++h) {
            A[g][c + h] = emulated_half<T>(f[0], h);
            A[g + 8][c + h] = emulated_half<T>(f[1], h);
            A[g][c + 8 + h] = emulated_half<T>(f[2], h);
            A[g + 8][c + 8 + h] = emulated_half<T>(f[3], h);
            B[c + h][g] = emulated_half<T>(f[4], h);
            B[c + 8 + h][g] = emulated_half<T>(f[5], h);
        }
    }
    for (int j = 0; j < 4; ++j) {
        unsigned row = lane / 4 + (j / 2) * 8, col = (lane % 4) * 2 + j % 2;
        float sum = 0;
        for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
        d[j] += sum;
    }
    emulated_warp_barriers[t / 32]->arrive_and_wait();
}
template <class T> void mma_16816(float* d, const unsigned (&a)[4], const unsigned (&b)[2]) {
    emulated_mma<T>(d, a, b);
}

// wgmma: a descriptor is an index into this thread's table of what it described.
struct EmulatedDescriptor { const unsigned char* start; unsigned lbo, sbo, mode; };
thread_local EmulatedDescriptor emulated_descriptors[256];
thread_local unsigned emulated_descriptor_count;
inline u64 wgmma_descriptor(const void* start, unsigned lbo, unsigned sbo, unsigned mode) {
    unsigned i = emulated_descriptor_count++ % 256;
    emulated_descriptors[i] = {static_cast<const unsigned char*>(start), lbo, sbo, mode};
    return i;
}
// The element a canonical layout puts at byte `linear` from the descriptor's start, with
// the swizzle: address bits 7.. XORed into the 16-byte chunk bits 4.. (128-byte mode:
// three bits, 64: two, 32: one).
template <class T> float emulated_element(const EmulatedDescriptor& e, unsigned long long linear) {
    const unsigned width = e.mode == 1 ? 128 : e.mode == 2 ? 64 : 32;
    unsigned long long at = reinterpret_cast<unsigned long long>(e.start) + linear;
    at ^= ((at >> 7) & (width / 16 - 1)) << 4;
    T value;
    std::memcpy(&value, reinterpret_cast<const void*>(at), 2);
    return float(value);
}
// Element (mn, k) of a k-step of 16 of an operand: K-major, each of its rows (m or n) has
// its 16 k's contiguous, 8-row core matrices SBO apart; MN-major, each k has its m's or n's
// contiguous in swizzle-width atoms LBO apart, 8-k groups SBO apart.
template <class T> float emulated_operand(const EmulatedDescriptor& e, unsigned mn, unsigned k, bool mn_major) {
    const unsigned width = e.mode == 1 ? 128 : e.mode == 2 ? 64 : 32;
    if (!mn_major) return emulated_element<T>(e, (mn % 8) * width + (mn / 8) * e.sbo + k * 2);
    return emulated_element<T>(e, (k % 8) * width + (k / 8) * e.sbo + mn * 2 % width + mn * 2 / width * e.lbo);
}
// The accumulators of m64nNk16: warp w of the warpgroup, lane l, register i is row
// 16 w + l / 4 + 8 ((i / 2) % 2), column 2 (l % 4) + i % 2 + 8 (i / 4).
template <int N, class T, bool TRANS_A, bool TRANS_B>
void emulated_wgmma_ss(float (&d)[N / 2], u64 a, u64 b) {
    const EmulatedDescriptor& da = emulated_descriptors[a];
    const EmulatedDescriptor& db = emulated_descriptors[b];
    const unsigned t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    for (int i = 0; i < N / 2; ++i) {
        const unsigned row = warp * 16 + lane / 4 + ((i / 2) % 2) * 8;
        const unsigned col = (i / 4) * 8 + (lane % 4) * 2 + i % 2;
        float sum = 0;
        for (unsigned k = 0; k < 16; ++k) {
            sum += emulated_operand<T>(da, row, k, TRANS_A) * emulated_operand<T>(db, col, k, TRANS_B);
        }
        d[i] += sum;
    }
}
// The register A operand of a 64x16 step: warp w, lane l holds a0, a1 at row 16 w + l / 4,
// columns 2 (l % 4) + {0, 1}; a2, a3 at row + 8; a4, a5 at columns + 8; a6, a7 both.
unsigned emulated_a_fragments[1024][4];
template <int N, class T, bool TRANS_B>
void emulated_wgmma_rs(float (&d)[N / 2], unsigned a0, unsigned a1, unsigned a2, unsigned a3, u64 b) {
    const unsigned t = threadIdx.x, group = t / 128, base = group * 128;
    emulated_a_fragments[t][0] = a0;
    emulated_a_fragments[t][1] = a1;
    emulated_a_fragments[t][2] = a2;
    emulated_a_fragments[t][3] = a3;
    emulated_group_barriers[group]->arrive_and_wait();
    float A[64][16];
    for (unsigned q = 0; q < 128; ++q) {
        const unsigned w = q / 32, l = q % 32, row = 16 * w + l / 4, col = (l % 4) * 2;
        const unsigned* f = emulated_a_fragments[base + q];
        for (int h = 0; h < 2; ++h) {
            A[row][col + h] = emulated_half<T>(f[0], h);
            A[row + 8][col + h] = emulated_half<T>(f[1], h);
            A[row][col + 8 + h] = emulated_half<T>(f[2], h);
            A[row + 8][col + 8 + h] = emulated_half<T>(f[3], h);
        }
    }
    const EmulatedDescriptor& db = emulated_descriptors[b];
    const unsigned warp = (t % 128) / 32, lane = t % 32;
    for (int i = 0; i < N / 2; ++i) {
        const unsigned row = warp * 16 + lane / 4 + ((i / 2) % 2) * 8;
        const unsigned col = (i / 4) * 8 + (lane % 4) * 2 + i % 2;
        float sum = 0;
        for (unsigned k = 0; k < 16; ++k) sum += A[row][k] * emulated_operand<T>(db, col, k, TRANS_B);
        d[i] += sum;
    }
    emulated_group_barriers[group]->arrive_and_wait();
}
}  // namespace phobos
"""

FP16 = r"""
#pragma once
struct uint4 { unsigned x, y, z, w; };
struct uint2 { unsigned x, y; };
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
struct __half {
    _Float16 v;
    __half() = default;
    __half(float f) : v((_Float16)f) {}
    operator float() const { return (float)v; }
    __half operator-() const { return __half(-(float)v); }
};
// Arithmetic on halves rounds each result, as the device's __half operators do.
inline __half operator+(__half a, __half b) { return __half(float(a) + float(b)); }
inline __half operator-(__half a, __half b) { return __half(float(a) - float(b)); }
inline __half operator*(__half a, __half b) { return __half(float(a) * float(b)); }
inline __half operator/(__half a, __half b) { return __half(float(a) / float(b)); }
"""

BF16 = r"""
#pragma once
#include <cstdint>
#include <cstring>
struct __nv_bfloat16 {
    uint16_t bits;
    __nv_bfloat16() = default;
    __nv_bfloat16(float f) {
        uint32_t u;
        std::memcpy(&u, &f, 4);
        if ((u & 0x7fffffff) > 0x7f800000) { bits = 0x7fc0; return; }
        u += 0x7fff + ((u >> 16) & 1);
        bits = (uint16_t)(u >> 16);
    }
    operator float() const {
        uint32_t u = (uint32_t)bits << 16;
        float f;
        std::memcpy(&f, &u, 4);
        return f;
    }
    __nv_bfloat16 operator-() const { return __nv_bfloat16(-float(*this)); }
};
inline __nv_bfloat16 operator+(__nv_bfloat16 a, __nv_bfloat16 b) { return float(a) + float(b); }
inline __nv_bfloat16 operator-(__nv_bfloat16 a, __nv_bfloat16 b) { return float(a) - float(b); }
inline __nv_bfloat16 operator*(__nv_bfloat16 a, __nv_bfloat16 b) { return float(a) * float(b); }
inline __nv_bfloat16 operator/(__nv_bfloat16 a, __nv_bfloat16 b) { return float(a) / float(b); }
"""

_HELPER = re.compile(r"#ifndef (PHOBOS_WGMMA_(SS|RS)_M64N(\d+)K16_(F16|BF16)_T(\d)(\d))")


def _wgmma_helpers(source: str) -> str:
    """Definitions of the printed kernel's wgmma helpers in terms of the emulation."""
    out = []
    for guard, kind, n, dtype, trans_a, trans_b in sorted(set(_HELPER.findall(source))):
        name = guard.lower()
        t = f"phobos::{dtype.lower()}"
        if kind == "SS":
            signature = f"float (&d)[{int(n) // 2}], phobos::u64 a, phobos::u64 b"
            flags = f"{_cpp(trans_a)}, {_cpp(trans_b)}"
            body = f"phobos::emulated_wgmma_ss<{n}, {t}, {flags}>(d, a, b);"
        else:
            signature = (
                f"float (&d)[{int(n) // 2}], unsigned a0, unsigned a1, unsigned a2, unsigned a3, "
                "phobos::u64 b"
            )
            body = f"phobos::emulated_wgmma_rs<{n}, {t}, {_cpp(trans_b)}>(d, a0, a1, a2, a3, b);"
        out += [
            f"#ifndef {guard}",
            f"#define {guard}",
            f"inline void {name}({signature}) {{ {body} }}",
            "#endif",
        ]
    return "\n".join(out)


def _cpp(flag: str) -> str:
    return "true" if int(flag) else "false"


def _static_shared(generated: GeneratedKernel) -> str:
    """The source with its dynamic shared memory made static (the emulation has no extern)."""
    size = generated.contract.dynamic_smem
    dynamic = "extern __shared__ __align__(16) unsigned char phobos_smem_raw[];"
    static = f"__shared__ __align__(16) unsigned char phobos_smem_raw[{size}];"
    return generated.source.replace(dynamic, static) if size else generated.source


def _launcher(generated: GeneratedKernel, grid: tuple[int, int, int], args: list) -> str:
    """A function that loads the tensors, runs every block and writes the tensors back."""
    contract = generated.contract
    params = dict(zip(contract.params, args))
    names = [t.name for t in contract.tensors]
    extents = {
        dim: size
        for t in contract.tensors
        for dim, size in zip(t.dims, params[t.name].shape)
        if isinstance(dim, str)
    }
    call = []
    for slot in contract.slots:
        if slot.kind == "pointer":
            dtype = contract.tensors[names.index(slot.param)].dtype
            call.append(f"({ctype(dtype)}*)data[{names.index(slot.param)}].data()")
        elif slot.kind == "stride":
            array = params[slot.param]
            call.append(str(array.strides[slot.axis] // array.itemsize))
        elif slot.kind == "extent":
            call.append(str(extents[slot.param]))
        elif slot.kind == "tensormap":
            array = params[slot.param]
            k = names.index(slot.param)
            dims = ", ".join(map(str, reversed(array.shape)))
            strides = ", ".join(str(s // array.itemsize) for s in reversed(array.strides))
            box = ", ".join(map(str, reversed(slot.box)))
            call.append(
                f"phobos::TensorMap{{data[{k}].data(), {{{dims}}}, {{{strides}}}, {{{box}}}, "
                f"{array.ndim}, {array.itemsize}}}"
            )
        else:
            value = params[slot.param].item()
            call.append(f"({ctype(slot.type)})({value!r})")
    threads, (gx, gy, gz) = contract.block[0], grid
    return f"""
void run_{generated.entry}(const std::string& prefix) {{
    std::vector<std::vector<unsigned char>> data({len(names)});
    for (int k = 0; k < {len(names)}; ++k) {{
        std::ifstream in(prefix + std::to_string(k), std::ios::binary);
        data[k].assign(std::istreambuf_iterator<char>(in), {{}});
    }}
    gridDim = {{{gx}, {gy}, {gz}}};
    blockDim = {{{threads}, 1, 1}};
    std::barrier<> barrier({threads});
    emulated_barrier = &barrier;
    for (int w = 0; w < {threads // 32}; ++w) emulated_warp_barriers[w] = new std::barrier<>(32);
    for (int g = 0; g < {max(1, threads // 128)}; ++g) emulated_group_barriers[g] = new std::barrier<>({min(threads, 128)});
    emulated_consumer_barrier = new std::barrier<>({generated.gpu_ir.threads});
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < {threads}; ++t) threads.emplace_back([&, t] {{
        threadIdx.x = t;
        for (unsigned z = 0; z < {gz}; ++z) for (unsigned y = 0; y < {gy}; ++y)
        for (unsigned x = 0; x < {gx}; ++x) {{
            blockIdx = {{x, y, z}};
            {generated.entry}({", ".join(call)});
            barrier.arrive_and_wait();
        }}
    }});
    for (auto& t : threads) t.join();
    for (int k = 0; k < {len(names)}; ++k) {{
        std::ofstream out(prefix + std::to_string(k), std::ios::binary);
        out.write((const char*)data[k].data(), data[k].size());
    }}
}}
"""


def run_on_host(launches: list[tuple[GeneratedKernel, tuple[int, ...], list]], work: Path) -> None:
    """Compile the kernels into one host program and run each launch (kernel, grid, args).

    Each launch's kernel must have its own entry name.  The arrays among the args are
    updated with what the kernel wrote.
    """
    include = work / "include"
    include.mkdir(parents=True, exist_ok=True)
    (include / "cuda_runtime_emulation.h").write_text(CUDA_RUNTIME)
    (include / "phobos_ptx.cuh").write_text(PTX)
    (include / "cuda_fp16.h").write_text(FP16)
    (include / "cuda_bf16.h").write_text(BF16)
    parts = ['#include "cuda_runtime_emulation.h"', '#include "phobos_gpu.cuh"']
    calls = []
    for generated, grid, args in launches:
        source = _static_shared(generated)
        parts += [_wgmma_helpers(source), source, _launcher(generated, (*grid, 1, 1)[:3], args)]
        calls.append(f'    run_{generated.entry}(std::string(argv[1]) + "{generated.entry}_");')
    parts.append("int main(int, char** argv) {\n" + "\n".join(calls) + "\n}\n")
    (work / "kernels.cpp").write_text("\n".join(parts))
    assert COMPILER is not None
    command = [COMPILER, "-std=c++20", "-O0", "-pthread", f"-I{include}", f"-I{RUNTIME_DIR}"]
    subprocess.run([*command, "kernels.cpp", "-o", "kernels"], cwd=work, check=True)
    for generated, _, args in launches:
        for k, array in enumerate(a for a in args if isinstance(a, np.ndarray)):
            array.tofile(work / f"{generated.entry}_{k}")
    subprocess.run([str(work / "kernels"), f"{work}/"], check=True)
    for generated, _, args in launches:
        for k, array in enumerate(a for a in args if isinstance(a, np.ndarray)):
            written = np.fromfile(work / f"{generated.entry}_{k}", dtype=array.dtype)
            array[...] = written.reshape(array.shape)
