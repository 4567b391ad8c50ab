"""Generated kernels run on the host against the CPU interpreter (no GPU needed).

The CUDA C++ the code generator writes is compiled with the host C++ compiler
under a small emulation of the CUDA execution model: one ``std::thread`` per
CUDA thread of a block, ``__syncthreads`` a ``std::barrier``, warp shuffles an
exchange through memory, ``__half`` a ``_Float16``.  Blocks run one after
another.  This checks what the generated code computes (layouts, masks, vector
and boundary paths, shared-memory conversions, shuffles) against the
interpreter, which is the reference semantics.  Skipped without ``g++``.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from phobos.compile.check import lower
from phobos.compile.codegen import RUNTIME_DIR, GeneratedKernel, Specialization, generate
from phobos.compile.codegen.dtypes import ctype
from phobos.compile.codegen.specialization import TensorSpecialization
from phobos.compile.interp import run
from phobos.compile.syntax import parse

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")

EMULATION = r"""
#pragma once
#include <barrier>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>
#include <math.h>
#include <mutex>
#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)
struct uint3 { unsigned x = 0, y = 0, z = 0; };
thread_local uint3 threadIdx, blockIdx;
uint3 gridDim, blockDim;
std::barrier<>* emulated_barrier;
alignas(16) unsigned char emulated_exchange[1024][8];
inline void __syncthreads() { emulated_barrier->arrive_and_wait(); }
template <class T> T __shfl_xor_sync(unsigned, T v, int lane_mask) {
    std::memcpy(emulated_exchange[threadIdx.x], &v, sizeof(T));
    __syncthreads();
    unsigned partner = (threadIdx.x & ~31u) | ((threadIdx.x & 31u) ^ lane_mask);
    T out;
    std::memcpy(&out, emulated_exchange[partner], sizeof(T));
    __syncthreads();
    return out;
}
inline unsigned __ballot_sync(unsigned, bool p) {
    unsigned mine = p ? 1u : 0u;
    std::memcpy(emulated_exchange[threadIdx.x], &mine, sizeof(mine));
    __syncthreads();
    unsigned votes = 0, base = threadIdx.x & ~31u;
    for (unsigned lane = 0; lane < 32; ++lane) {
        unsigned vote;
        std::memcpy(&vote, emulated_exchange[base + lane], sizeof(vote));
        votes |= vote << lane;
    }
    __syncthreads();
    return votes;
}
inline int __syncthreads_and(int p) {
    unsigned mine = p ? 1u : 0u;
    std::memcpy(emulated_exchange[threadIdx.x], &mine, sizeof(mine));
    __syncthreads();
    unsigned all = 1u;
    for (unsigned t = 0; t < blockDim.x; ++t) {
        unsigned vote;
        std::memcpy(&vote, emulated_exchange[t], sizeof(vote));
        all &= vote;
    }
    __syncthreads();
    return int(all);
}
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline double __longlong_as_double(long long i) { double f; std::memcpy(&f, &i, 8); return f; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
inline unsigned long long atomicOr(unsigned long long* p, unsigned long long v) {
    return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);
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

// The runtime's inline PTX, emulated: cp.async is a copy; ldmatrix and mma.sync pool
// the warp's addresses or fragments (PTX ISA layouts) and each lane takes its share.
#define PHOBOS_HOST_EMULATION
#include "phobos_tile.cuh"
std::barrier<>* emulated_warp_barriers[32];
unsigned emulated_fragments[1024][6];
template <class T> float emulated_half(unsigned word, int high) {
    unsigned short bits = high ? (word >> 16) : (word & 0xffff);
    T value;
    std::memcpy(&value, &bits, 2);
    return float(value);
}
template <class T> void emulated_mma(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
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
unsigned short emulated_rows[1024][8];
namespace phobos {
void copy_async_16(void* shared, const void* global) { std::memcpy(shared, global, 16); }
void copy_async_wait() {}
void copy_async_commit() {}
template <int PENDING> void copy_async_wait_pending() {}
template <int N, bool TRANS> void emulated_load_matrix(unsigned (&r)[N], const void* row) {
    unsigned t = threadIdx.x, base = t & ~31u, lane = t & 31u;
    std::memcpy(emulated_rows[t], row, 16);
    emulated_warp_barriers[t / 32]->arrive_and_wait();
    for (int j = 0; j < N; ++j) {
        const unsigned short (*rows)[8] = emulated_rows + base + j * 8;
        unsigned low = TRANS ? rows[(lane % 4) * 2][lane / 4] : rows[lane / 4][(lane % 4) * 2];
        unsigned high = TRANS ? rows[(lane % 4) * 2 + 1][lane / 4] : rows[lane / 4][(lane % 4) * 2 + 1];
        r[j] = low | (high << 16);
    }
    emulated_warp_barriers[t / 32]->arrive_and_wait();
}
void load_matrix_x2_trans(unsigned (&r)[2], const void* row) { emulated_load_matrix<2, true>(r, row); }
void load_matrix_x4(unsigned (&r)[4], const void* row) { emulated_load_matrix<4, false>(r, row); }
void load_matrix_x4_trans(unsigned (&r)[4], const void* row) { emulated_load_matrix<4, true>(r, row); }
template <> void mma_16816<f16>(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    emulated_mma<f16>(d, a, b);
}
template <> void mma_16816<bf16>(float (&d)[4], const unsigned (&a)[4], const unsigned (&b)[2]) {
    emulated_mma<bf16>(d, a, b);
}
// wgmma: a descriptor is an index into the thread's table of what it described; each
// thread computes its own accumulators from shared memory, reading the operands where the
// PTX ISA's canonical layouts (K-major a, MN-major b) and swizzle modes put them.
void fence_async_shared() {}
void wgmma_fence() {}
void wgmma_commit() {}
template <int PENDING> void wgmma_wait() {}
struct EmulatedDescriptor { const unsigned char* start; unsigned lbo, sbo, mode; };
thread_local EmulatedDescriptor emulated_descriptors[64];
thread_local unsigned emulated_descriptor_count;
u64 wgmma_descriptor(const void* start, unsigned lbo, unsigned sbo, unsigned mode) {
    unsigned i = emulated_descriptor_count++ % 64;
    emulated_descriptors[i] = {static_cast<const unsigned char*>(start), lbo, sbo, mode};
    return i;
}
template <class T> float emulated_element(const EmulatedDescriptor& e, unsigned long long linear) {
    const unsigned width = e.mode == 1 ? 128 : e.mode == 2 ? 64 : 32;
    unsigned long long at = reinterpret_cast<unsigned long long>(e.start) + linear;
    at ^= ((at >> 7) & (width / 16 - 1)) << 4;
    T value;
    std::memcpy(&value, reinterpret_cast<const void*>(at), 2);
    return float(value);
}
template <int N, class T> void wgmma_emulated(float (&d)[N / 8][4], u64 a, u64 b) {
    const EmulatedDescriptor& da = emulated_descriptors[a];
    const EmulatedDescriptor& db = emulated_descriptors[b];
    const unsigned wa = da.mode == 1 ? 128 : da.mode == 2 ? 64 : 32;
    const unsigned wb = db.mode == 1 ? 128 : db.mode == 2 ? 64 : 32;
    const unsigned t = threadIdx.x % 128, warp = t / 32, lane = t % 32;
    for (int j = 0; j < N / 8; ++j) for (int i = 0; i < 4; ++i) {
        const unsigned row = warp * 16 + lane / 4 + (i / 2) * 8;
        const unsigned col = j * 8 + (lane % 4) * 2 + i % 2;
        float sum = 0;
        for (unsigned k = 0; k < 16; ++k) {
            const float x = emulated_element<T>(da, (row % 8) * wa + (row / 8) * da.sbo + k * 2);
            const float y = emulated_element<T>(
                db, (k % 8) * wb + (k / 8) * db.sbo + col * 2 % wb + col * 2 / wb * db.lbo);
            sum += x * y;
        }
        d[j][i] += sum;
    }
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


def _static_scratch(generated: GeneratedKernel) -> str:
    """The source with its dynamic shared buffer made static (the emulation has no extern)."""
    size = generated.contract.dynamic_smem
    dynamic = "extern __shared__ __align__(16) unsigned char phobos_scratch[];"
    static = f"__shared__ __align__(16) unsigned char phobos_scratch[{size}];"
    return generated.source.replace(dynamic, static) if size else generated.source


def run_on_host(launches: list[tuple[GeneratedKernel, tuple[int, ...], list]], work: Path) -> None:
    """Compile the kernels into one host program and run each launch (kernel, grid, args).

    The arrays among the args are updated with what the kernel wrote.
    """
    (work / "include").mkdir(parents=True, exist_ok=True)
    (work / "include" / "emulation.h").write_text(EMULATION)
    (work / "include" / "cuda_fp16.h").write_text(FP16)
    (work / "include" / "cuda_bf16.h").write_text(BF16)
    parts = ['#include "emulation.h"']
    calls = []
    for generated, grid, args in launches:
        parts += [_static_scratch(generated), _launcher(generated, (*grid, 1, 1)[:3], args)]
        calls.append(f'    run_{generated.entry}(std::string(argv[1]) + "{generated.entry}_");')
    parts.append("int main(int, char** argv) {\n" + "\n".join(calls) + "\n}\n")
    (work / "kernels.cpp").write_text("\n".join(parts))
    command = ["g++", "-std=c++20", "-O0", "-pthread", f"-I{work / 'include'}", f"-I{RUNTIME_DIR}"]
    subprocess.run([*command, "kernels.cpp", "-o", "kernels"], cwd=work, check=True)
    for generated, _, args in launches:
        for k, array in enumerate(a for a in args if isinstance(a, np.ndarray)):
            array.tofile(work / f"{generated.entry}_{k}")
    subprocess.run([str(work / "kernels"), f"{work}/"], check=True)
    for generated, _, args in launches:
        for k, array in enumerate(a for a in args if isinstance(a, np.ndarray)):
            written = np.fromfile(work / f"{generated.entry}_{k}", dtype=array.dtype)
            array[...] = written.reshape(array.shape)


CASES = {
    "attention": (
        """\
kernel attention(q: tensor<f16>[S, D], k: tensor<f16>[S, D], v: tensor<f16>[S, D],
                 o: tensor<f32>[S, D]) {
    let m = ctx.block.x * 16
    let qt = q[m :+ 16, 0 :+ 16]
    var acc = zeros<f32>[16, 16]
    var row_max = zeros<f32>[16] - 1000.0
    var row_sum = zeros<f32>[16]
    for s in 0 .. S step 16 {
        let scores = fill(dot(qt, trans(k[s :+ 16, 0 :+ 16]), zeros<f32>[16, 16]), -1000.0)
        let new_max = maximum(row_max, max(scores, axis=1))
        let p = exp(scores - new_max[:, newaxis])
        let scale = exp(row_max - new_max)
        row_sum = row_sum * scale + sum(p, axis=1)
        let pv = dot(f16(p), v[s :+ 16, 0 :+ 16], zeros<f32>[16, 16])
        acc = acc * scale[:, newaxis] + fill(pv, 0.0)
        row_max = new_max
    }
    o[m :+ 16, 0 :+ 16] = acc / row_sum[:, newaxis]
}
""",
        {},
        lambda rng: [
            rng.standard_normal((40, 16)).astype(np.float16),
            rng.standard_normal((40, 16)).astype(np.float16),
            rng.standard_normal((40, 16)).astype(np.float16),
            np.zeros((40, 16), np.float32),
        ],
        (3,),
    ),
    "attention_rescaled": (
        """\
kernel attention_rescaled(q: tensor<f16>[S, D], k: tensor<f16>[S, D], v: tensor<f16>[S, D],
                          o: tensor<f32>[S, D]) {
    let m = ctx.block.x * 16
    let qt = q[m :+ 16, 0 :+ 16]
    var acc = zeros<f32>[16, 16]
    var row_max = zeros<f32>[16] - 1000.0
    var row_sum = zeros<f32>[16]
    for s in 0 .. S step 16 {
        let scores = fill(dot(qt, trans(k[s :+ 16, 0 :+ 16]), zeros<f32>[16, 16]), -1000.0)
        let new_max = maximum(row_max, max(scores, axis=1))
        let p = exp(scores - new_max[:, newaxis])
        let scale = exp(row_max - new_max)
        row_sum = row_sum * scale + sum(p, axis=1)
        acc = dot(f16(p), v[s :+ 16, 0 :+ 16], acc * scale[:, newaxis])
        row_max = new_max
    }
    o[m :+ 16, 0 :+ 16] = acc / row_sum[:, newaxis]
}
""",
        {},
        lambda rng: [
            rng.standard_normal((40, 16)).astype(np.float16),
            rng.standard_normal((40, 16)).astype(np.float16),
            rng.standard_normal((40, 16)).astype(np.float16),
            np.zeros((40, 16), np.float32),
        ],
        (3,),
    ),
    "accumulate": (
        """\
kernel accumulate(x: tensor<f32>[N], total: tensor<f32>[64], big: tensor<f32>[1],
                  lock: tensor<i32>[1], counts: tensor<i32>[4], h: tensor<f16>[2]) {
    let b = ctx.block.x * 64
    atomic_add(total[0 :+ 64], fill(x[b :+ 64], 0.0))
    atomic_max(big[0], max(x[b :+ 64], axis=0))
    atomic_add(h[0 :+ 2], f16(x[b :+ 2]))
    var old = atomic_cas(lock[0], 0, 1)
    while old != 0 {
        old = atomic_cas(lock[0], 0, 1)
    }
    counts[0] = counts[0] + 1
    let prev = atomic_xchg(lock[0], 0)
    atomic_add(counts[1 :+ 2], zeros<i32>[2] + prev)
}
""",
        {},
        lambda rng: [
            rng.standard_normal(200).astype(np.float32),
            np.zeros(64, np.float32),
            np.full(1, -5.0, np.float32),
            np.zeros(1, np.int32),
            np.zeros(4, np.int32),
            np.zeros(2, np.float16),
        ],
        (4,),
    ),
    "scaled": (  # one warp: a and b fragments shared across its tiles
        """\
kernel scaled(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[M, N]) {
    let m = ctx.block.y * 32
    let n = ctx.block.x * 16
    var acc = zeros<f32>[32, 16]
    for k in 0 .. K step 16 {
        acc = dot(a[m :+ 32, k :+ 16] * 2.0f16, b[k :+ 16, n :+ 16], acc)
    }
    c[m :+ 32, n :+ 16] = fill(acc, -7.0)
}
""",
        {},
        lambda rng: [
            rng.standard_normal((50, 45)).astype(np.float16),
            rng.standard_normal((45, 40)).astype(np.float16),
            np.zeros((50, 40), np.float32),
        ],
        (3, 2),
    ),
    "mixed": (
        """\
kernel mixed(x: tensor<u32>[N], y: tensor<i16>[N], b: tensor<bool>[N], h: tensor<f16>[N],
             o: tensor<u32>[N], p: tensor<i16>[N], q: tensor<bool>[N], r: tensor<f16>[N]) {
    let s = ctx.block.x * 64
    o[s :+ 64] = abs(x[s :+ 64]) + maximum(x[s :+ 64], u32(3)) - x[s :+ 64] % u32(7)
    p[s :+ 64] = abs(y[s :+ 64]) / i16(3) + minimum(y[s :+ 64], i16(-2)) + (y[s :+ 64] << i16(1))
    q[s :+ 64] = !b[s :+ 64] || (h[s :+ 64] > 1.0f16)
    r[s :+ 64] = where(b[s :+ 64], maximum(h[s :+ 64], 0.5f16), -h[s :+ 64] % 2.0f16)
}
""",
        {},
        lambda rng: [
            rng.integers(0, 2**32, 300).astype(np.uint32),
            rng.integers(-3000, 3000, 300).astype(np.int16),
            rng.integers(0, 2, 300).astype(bool),
            rng.standard_normal(300).astype(np.float16),
            np.zeros(300, np.uint32),
            np.zeros(300, np.int16),
            np.zeros(300, bool),
            np.zeros(300, np.float16),
        ],
        (5,),
    ),
    "bias": (
        """\
kernel bias(x: tensor<f32>[M, N], bias: tensor<f32>[N], out: tensor<f32>[N, M],
            cols: tensor<f32>[N]) {
    let m = ctx.block.y * 32
    let n = ctx.block.x * 64
    let t = x[m :+ 32, n :+ 64] + bias[n :+ 64][newaxis, :]
    out[n :+ 64, m :+ 32] = trans(where(t > 0.0, t, 0.0))
    cols[n :+ 64] = sum(t, axis=0) + f32(arange(64))
}
""",
        {},
        lambda rng: [
            rng.standard_normal((37, 100)).astype(np.float32),
            rng.standard_normal(100).astype(np.float32),
            np.zeros((100, 37), np.float32),
            np.zeros(100, np.float32),
        ],
        (2, 2),
    ),
    "colsum": (
        """\
kernel colsum(a: tensor<f32>[M, N], s: tensor<f32>[N], m: tensor<f32>[N], h: tensor<f16>[N]) {
    let n = ctx.block.x * 64
    let t = a[0 :+ 32, n :+ 64]
    s[n :+ 64] = sum(fill(t, 0.0), axis=0)
    m[n :+ 64] = max(t, axis=0)
    h[n :+ 64] = f16(sum(fill(a[0 :+ 16, n :+ 64], 1.0), axis=0))
}
""",
        {},
        lambda rng: [
            rng.standard_normal((20, 100)).astype(np.float32),
            np.zeros(100, np.float32),
            np.zeros(100, np.float32),
            np.zeros(100, np.float16),
        ],
        (2,),
    ),
    "colwide": (
        """\
kernel colwide(a: tensor<f32>[M, N], s: tensor<f32>[N], t: tensor<f32>[N]) {
    let n = ctx.block.x * 256
    s[n :+ 256] = sum(fill(a[0 :+ 16, n :+ 256], 0.0), axis=0)
    t[n :+ 64] = max(fill(a[0 :+ 4, n :+ 64], -inf), axis=0)
}
""",
        {},
        lambda rng: [
            rng.standard_normal((13, 300)).astype(np.float32),
            np.zeros(300, np.float32),
            np.zeros(300, np.float32),
        ],
        (2,),
    ),
    "reload": (
        """\
kernel reload(x: tensor<f16>[M, N], w: tensor<f16>[N], y: tensor<f32>[M, N], s: tensor<f32>[N]) {
    let weight = f32(w[0 :+ 64]) * 2.0
    var acc = zeros<f32>[64]
    for m in 0 .. M {
        let row = f32(x[m, 0 :+ 64]) * weight
        y[m, 0 :+ 64] = row
        acc += fill(row, 0.0)
    }
    s[0 :+ 64] = acc
}
""",
        {},
        lambda rng: [
            rng.standard_normal((5, 50)).astype(np.float16),
            rng.standard_normal(50).astype(np.float16),
            np.zeros((5, 50), np.float32),
            np.zeros(50, np.float32),
        ],
        (1,),
    ),
    "oneloop": (
        """\
kernel oneloop(x: tensor<f32>[M, N], out: tensor<f32>[M]) {
    let first = ctx.block.x * 2
    var total = zeros<f32>[2]
    for start in 0 .. N step 1024 {
        total = total + sum(fill(x[first :+ 2, start :+ 1024], 0.0), axis=1)
    }
    out[first :+ 2] = total / max(fill(x[first :+ 2, 0 :+ 1024], 1.0), axis=1)
}
""",
        {},
        lambda rng: [rng.standard_normal((3, 2500)).astype(np.float32), np.zeros(3, np.float32)],
        (2,),
    ),
    "colsmall": (
        """\
kernel colsmall(a: tensor<f32>[M, N], s: tensor<f32>[N]) {
    let n = ctx.block.x * 16
    s[n :+ 16] = sum(fill(a[0 :+ 8, n :+ 16], 0.0), axis=0)
}
""",
        {},
        lambda rng: [rng.standard_normal((6, 20)).astype(np.float32), np.zeros(20, np.float32)],
        (2,),
    ),
    "matmul": (
        """\
@autotune(BM in [16, 128], BN in [16, 128], BK in [16, 64])
kernel matmul(a: tensor<f16>[M, K], b: tensor<f16>[K, N], c: tensor<f32>[M, N]) {
    let m = ctx.block.y * BM
    let n = ctx.block.x * BN
    var acc = zeros<f32>[BM, BN]
    for k in 0 .. K step BK {
        acc = dot(a[m :+ BM, k :+ BK], b[k :+ BK, n :+ BN], acc)
    }
    c[m :+ BM, n :+ BN] = acc
}
""",
        {"BM": 128, "BN": 16, "BK": 64},  # 8 warps over 2 tiles a row: fragments per tile
        lambda rng: [
            rng.standard_normal((130, 70)).astype(np.float16),
            rng.standard_normal((70, 20)).astype(np.float16),
            np.zeros((130, 20), np.float32),
        ],
        (2, 2),
    ),
    "saxpy": (
        """\
@autotune(BLOCK in [16, 8192])
kernel saxpy(x: tensor<f32>[N], y: tensor<f32>[N], out: tensor<f32>[N], alpha: f32) {
    let base = ctx.block.x * BLOCK
    out[base :+ BLOCK] = alpha * x[base :+ BLOCK] + y[base :+ BLOCK]
}
""",
        {"BLOCK": 256},
        lambda rng: [
            rng.standard_normal(n := 1001).astype(np.float32),
            rng.standard_normal(n).astype(np.float32),
            np.zeros(n, np.float32),
            np.float32(2.5),
        ],
        (4,),
    ),
    "softmax": (
        """\
@autotune(BM in [1, 16], BN in [32, 4096])
kernel softmax(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let row = ctx.block.x * BM
    let t = x[row :+ BM, 0 :+ BN]
    let e = exp(t - max(t, axis=1)[:, newaxis])
    out[row :+ BM, 0 :+ BN] = e / sum(e, axis=1)[:, newaxis]
    let cols = sum(trans(t), axis=1)
}
""",
        {"BM": 4, "BN": 256},
        lambda rng: [
            rng.standard_normal((7, 200)).astype(np.float32),
            np.zeros((7, 200), np.float32),
        ],
        (2,),
    ),
    "wide_rows": (
        """\
@autotune(ROWS in {1, 2}, BLOCK_N in [16, 4096])
kernel wide_rows(x: tensor<f32>[M, N], out: tensor<f32>[M, N]) {
    let first = ctx.block.x * ROWS
    let rows = x[first :+ ROWS, 0 :+ BLOCK_N]
    let shifted = rows - max(rows, axis=1)[:, newaxis]
    let numerator = exp(shifted)
    out[first :+ ROWS, 0 :+ BLOCK_N] = numerator / sum(numerator, axis=1)[:, newaxis]
}
""",
        {"ROWS": 2, "BLOCK_N": 2048},  # 256 threads: each row spans two repeats of all 8 warps
        lambda rng: [
            rng.standard_normal((3, 1500)).astype(np.float32),
            np.zeros((3, 1500), np.float32),
        ],
        (2,),  # the second block's second row is past M: absent, never stored
    ),
    "norm": (
        """\
@autotune(BN in [32, 4096])
kernel norm(x: tensor<f16>[M, N], y: tensor<f16>[M, N], mean: tensor<f32>[M]) {
    let row = ctx.block.x
    var acc = zeros<f32>[BN]
    for k in 0 .. N step BN {
        acc += fill(f32(x[row, k :+ BN]), 0.0)
    }
    let mu = sum(acc, axis=0) / f32(N)
    for k in 0 .. N step BN {
        y[row, k :+ BN] = f16(exp(f32(x[row, k :+ BN]) - mu))
    }
    mean[row] = mu
}
""",
        {"BN": 64},
        lambda rng: [
            rng.standard_normal((3, 150)).astype(np.float16),
            np.zeros((3, 150), np.float16),
            np.zeros(3, np.float32),
        ],
        (3,),
    ),
}


def _generate(text: str, name: str, values: dict[str, int]):
    kernel = lower(parse(text, f"{name}.ph"), name, values)
    facts = TensorSpecialization(16, True)
    spec = Specialization.of(32, **{t.name: facts for t in kernel.tensors})
    return kernel, generate(kernel, spec, "sm_90")


def test_generated_code_computes_what_the_interpreter_does(tmp_path):
    rng = np.random.default_rng(7)
    launches, checks = [], []
    for name, (text, values, make, grid) in CASES.items():
        kernel, generated = _generate(text, name, values)
        expected = make(rng)
        got = [a.copy() if isinstance(a, np.ndarray) else a for a in expected]
        run(kernel, grid, expected)
        launches.append((generated, grid, got))
        checks.append((name, expected, got))
    run_on_host(launches, tmp_path)
    for name, expected, got in checks:
        for want, have in zip(expected, got):
            if isinstance(want, np.ndarray):
                np.testing.assert_allclose(have, want, rtol=2e-3, atol=1e-6, err_msg=name)
