// phobos_gpu.cuh: the small device runtime that the GPU IR's C++ printer calls.
//
// The passes decide everything (phobos/compile/gpu/passes/); the printer turns each
// GPU IR op into a few lines that call the helpers here: a thread's registers are a
// flat array, and a run of V registers that holds V consecutive elements of a
// tensor's last axis moves as one vector access when it lies inside the tensor and
// on its alignment, lane by lane otherwise (lanes outside the tensor are never
// touched, and load as zero).  The tensor-core, asynchronous-copy and barrier
// instructions are inline PTX.
//
// Everything here is header-only and forced inline; NVRTC compiles it with the
// generated kernel.  Types are spelled by Phobos dtype (phobos::f32, ...), so the
// header needs nothing but cuda_fp16.h and cuda_bf16.h.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#define PHOBOS_INLINE __device__ __forceinline__

namespace phobos {

typedef signed char i8;
typedef short i16;
typedef int i32;
typedef long long i64;
typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef __half f16;
typedef __nv_bfloat16 bf16;
typedef float f32;
typedef double f64;

// ------------------------------------------------------------------ conversions

template <class T> PHOBOS_INLINE constexpr bool narrow_float() { return false; }
template <> PHOBOS_INLINE constexpr bool narrow_float<f16>() { return true; }
template <> PHOBOS_INLINE constexpr bool narrow_float<bf16>() { return true; }
template <class T> PHOBOS_INLINE constexpr bool wide_float() { return false; }
template <> PHOBOS_INLINE constexpr bool wide_float<f32>() { return true; }
template <> PHOBOS_INLINE constexpr bool wide_float<f64>() { return true; }

// The range of each integer type, for float -> integer conversions.
template <class T> struct integer_range { static constexpr bool integer = false; };
#define PHOBOS_INTEGER_RANGE(T, LO, HI)                                   \
    template <> struct integer_range<T> {                                 \
        static constexpr bool integer = true;                             \
        static constexpr T lowest = LO, highest = HI;                     \
        static constexpr double past_top = double(HI / 2 + 1) * 2.0;      \
    };
PHOBOS_INTEGER_RANGE(i8, -128, 127)
PHOBOS_INTEGER_RANGE(i16, -32768, 32767)
PHOBOS_INTEGER_RANGE(i32, -2147483647 - 1, 2147483647)
PHOBOS_INTEGER_RANGE(i64, -9223372036854775807LL - 1, 9223372036854775807LL)
PHOBOS_INTEGER_RANGE(u8, 0, 255)
PHOBOS_INTEGER_RANGE(u16, 0, 65535)
PHOBOS_INTEGER_RANGE(u32, 0, 4294967295u)
PHOBOS_INTEGER_RANGE(u64, 0, 18446744073709551615ULL)
#undef PHOBOS_INTEGER_RANGE

// A float (f32 or f64) to an integer type as docs/language.md defines it: truncated toward
// zero, saturated at the type's limits, NaN giving 0.  C leaves values out of range
// undefined, and the hardware's conversion wraps for 8- and 16-bit targets.
template <class To, class From> PHOBOS_INLINE To saturated(From x) {
    typedef integer_range<To> range;
    if (!(x == x)) return To(0);
    if (x < From(range::lowest)) return range::lowest;  // both limits are exact in From
    if (x >= From(range::past_top)) return range::highest;
    return static_cast<To>(x);
}

// A value converted to To with C++ conversion rules, but float -> integer saturates
// (``saturated``); f16 and bf16 go through f32.
template <class To, class From> PHOBOS_INLINE To cast(From x) {
    if constexpr (narrow_float<From>() && narrow_float<To>()) {
        return To(static_cast<float>(x));
    } else if constexpr (narrow_float<From>() && integer_range<To>::integer) {
        return saturated<To>(static_cast<float>(x));
    } else if constexpr (narrow_float<From>()) {
        return static_cast<To>(static_cast<float>(x));
    } else if constexpr (wide_float<From>() && integer_range<To>::integer) {
        return saturated<To>(x);
    } else if constexpr (narrow_float<To>()) {
        return To(static_cast<float>(x));
    } else {
        return static_cast<To>(x);
    }
}

template <class T> PHOBOS_INLINE T infinity() { return cast<T>(__int_as_float(0x7f800000)); }
template <> PHOBOS_INLINE f64 infinity<f64>() { return __longlong_as_double(0x7ff0000000000000LL); }
template <class T> PHOBOS_INLINE T quiet_nan() { return cast<T>(__int_as_float(0x7fc00000)); }
template <> PHOBOS_INLINE f64 quiet_nan<f64>() { return __longlong_as_double(0x7ff8000000000000LL); }

// ------------------------------------------------------------------ math
// f32 uses the accurate library functions (expf, not __expf); f16 and bf16
// compute in f32 and round once.  round is rint: ties to even.

#define PHOBOS_MATH(NAME, F32, F64)                                                \
    PHOBOS_INLINE f32 NAME(f32 x) { return ::F32(x); }                            \
    PHOBOS_INLINE f64 NAME(f64 x) { return ::F64(x); }
PHOBOS_MATH(exp, expf, exp)
PHOBOS_MATH(exp2, exp2f, exp2)
PHOBOS_MATH(log, logf, log)
PHOBOS_MATH(log2, log2f, log2)
PHOBOS_MATH(sqrt, sqrtf, sqrt)
PHOBOS_MATH(rsqrt, rsqrtf, rsqrt)
PHOBOS_MATH(expm1, expm1f, expm1)
PHOBOS_MATH(log1p, log1pf, log1p)
PHOBOS_MATH(tanh, tanhf, tanh)
PHOBOS_MATH(erf, erff, erf)
PHOBOS_MATH(sin, sinf, sin)
PHOBOS_MATH(cos, cosf, cos)
PHOBOS_MATH(floor, floorf, floor)
PHOBOS_MATH(ceil, ceilf, ceil)
PHOBOS_MATH(round, rintf, rint)
PHOBOS_MATH(trunc, truncf, trunc)
PHOBOS_MATH(abs, fabsf, fabs)
#undef PHOBOS_MATH
PHOBOS_INLINE f32 sigmoid(f32 x) { return 1.0f / (1.0f + ::expf(-x)); }
PHOBOS_INLINE f64 sigmoid(f64 x) { return 1.0 / (1.0 + ::exp(-x)); }
PHOBOS_INLINE f32 pow(f32 x, f32 y) { return ::powf(x, y); }
PHOBOS_INLINE f64 pow(f64 x, f64 y) { return ::pow(x, y); }
PHOBOS_INLINE f32 fmod(f32 x, f32 y) { return ::fmodf(x, y); }
PHOBOS_INLINE f64 fmod(f64 x, f64 y) { return ::fmod(x, y); }
PHOBOS_INLINE f32 fma(f32 x, f32 y, f32 z) { return ::fmaf(x, y, z); }
PHOBOS_INLINE f64 fma(f64 x, f64 y, f64 z) { return ::fma(x, y, z); }
PHOBOS_INLINE bool isnan(f32 x) { return x != x; }
PHOBOS_INLINE bool isnan(f64 x) { return x != x; }
PHOBOS_INLINE bool isinf(f32 x) { return ::fabsf(x) == infinity<f32>(); }
PHOBOS_INLINE bool isinf(f64 x) { return ::fabs(x) == infinity<f64>(); }
PHOBOS_INLINE bool isfinite(f32 x) { return ::fabsf(x) < infinity<f32>(); }
PHOBOS_INLINE bool isfinite(f64 x) { return ::fabs(x) < infinity<f64>(); }

#define PHOBOS_NARROW_MATH(NAME)                                                   \
    PHOBOS_INLINE f16 NAME(f16 x) { return f16(NAME(static_cast<float>(x))); }    \
    PHOBOS_INLINE bf16 NAME(bf16 x) { return bf16(NAME(static_cast<float>(x))); }
PHOBOS_NARROW_MATH(exp)
PHOBOS_NARROW_MATH(exp2)
PHOBOS_NARROW_MATH(log)
PHOBOS_NARROW_MATH(log2)
PHOBOS_NARROW_MATH(sqrt)
PHOBOS_NARROW_MATH(rsqrt)
PHOBOS_NARROW_MATH(expm1)
PHOBOS_NARROW_MATH(log1p)
PHOBOS_NARROW_MATH(tanh)
PHOBOS_NARROW_MATH(sigmoid)
PHOBOS_NARROW_MATH(erf)
PHOBOS_NARROW_MATH(sin)
PHOBOS_NARROW_MATH(cos)
PHOBOS_NARROW_MATH(floor)
PHOBOS_NARROW_MATH(ceil)
PHOBOS_NARROW_MATH(round)
PHOBOS_NARROW_MATH(trunc)
PHOBOS_NARROW_MATH(abs)
#undef PHOBOS_NARROW_MATH

#define PHOBOS_NARROW_TEST(NAME)                                                   \
    PHOBOS_INLINE bool NAME(f16 x) { return NAME(static_cast<float>(x)); }        \
    PHOBOS_INLINE bool NAME(bf16 x) { return NAME(static_cast<float>(x)); }
PHOBOS_NARROW_TEST(isnan)
PHOBOS_NARROW_TEST(isinf)
PHOBOS_NARROW_TEST(isfinite)
#undef PHOBOS_NARROW_TEST

template <class T> PHOBOS_INLINE T pow(T x, T y) {
    return T(pow(static_cast<float>(x), static_cast<float>(y)));
}
template <class T> PHOBOS_INLINE T fmod(T x, T y) {
    return T(fmod(static_cast<float>(x), static_cast<float>(y)));
}
template <class T> PHOBOS_INLINE T fma(T x, T y, T z) {
    return T(fma(static_cast<float>(x), static_cast<float>(y), static_cast<float>(z)));
}

template <class T> PHOBOS_INLINE T abs(T x) { return x < T(0) ? T(-x) : x; }

// -1 below zero, 1 above; a zero (of either sign) and NaN are themselves.
template <class T> PHOBOS_INLINE T sign(T x) {
    if constexpr (narrow_float<T>()) {
        return T(sign(static_cast<float>(x)));
    } else if constexpr (T(-1) < T(0)) {
        return x > T(0) ? T(1) : x < T(0) ? T(-1) : x;
    } else {
        return x > T(0) ? T(1) : x;
    }
}

// The number of set bits of an integer's two's-complement pattern.
template <class T> PHOBOS_INLINE i32 popcount(T x) {
    if constexpr (sizeof(T) == 8) {
        return __popcll(static_cast<u64>(x));
    } else {
        constexpr u32 MASK = sizeof(T) == 4 ? 0xffffffffu : (1u << (8 * sizeof(T))) - 1u;
        return __popc(static_cast<u32>(x) & MASK);
    }
}

// The high half of the exact double-width product.
PHOBOS_INLINE u32 umulhi(u32 a, u32 b) { return __umulhi(a, b); }
PHOBOS_INLINE u64 umulhi(u64 a, u64 b) { return __umul64hi(a, b); }

// ------------------------------------------------------------------ random numbers
//
// rand, randn and randint (docs/language.md, section 5), the same to the bit as the CPU
// interpreter's (phobos/compile/interp/philox.py, which documents the definition): Philox
// 4x32-10 keyed by the seed's two 32-bit words, its counter (offset low word, offset high
// word, 0, 0).  The float arithmetic is written with the _rn intrinsics, which the compiler
// never contracts into an fma, and uses no library function, so that every operation rounds
// as numpy's f32 operations do.

struct philox_words { u32 w0, w1; };

template <class T> PHOBOS_INLINE philox_words philox(u64 seed, T offset) {
    const u64 counter = static_cast<u64>(offset);  // C's conversion: a signed value sign-extends
    u32 c0 = static_cast<u32>(counter), c1 = static_cast<u32>(counter >> 32), c2 = 0, c3 = 0;
    u32 k0 = static_cast<u32>(seed), k1 = static_cast<u32>(seed >> 32);
#pragma unroll
    for (int round = 0; round < 10; ++round) {
        const u32 a_high = __umulhi(0xD2511F53u, c0), a_low = 0xD2511F53u * c0;
        const u32 b_high = __umulhi(0xCD9E8D57u, c2), b_low = 0xCD9E8D57u * c2;
        c0 = b_high ^ c1 ^ k0;
        c1 = b_low;
        c2 = a_high ^ c3 ^ k1;
        c3 = a_low;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    return {c0, c1};
}

template <class T> PHOBOS_INLINE u32 randint(u64 seed, T offset) { return philox(seed, offset).w0; }

// The bits folded to 31 (b below 2^31, else ~b), rounded to f32, times (1 - 2^-24) 2^-31.
PHOBOS_INLINE f32 uniform_of_bits(u32 bits) {
    const u32 folded = (bits & 0x80000000u) ? ~bits : bits;
    return __fmul_rn(__uint2float_rn(folded), 0x1.fffffep-32f);
}

template <class T> PHOBOS_INLINE f32 rand(u64 seed, T offset) {
    return uniform_of_bits(philox(seed, offset).w0);
}

// ln(k 2^-24) for k in [1, 2^24]: k = 2^e m, m in [sqrt(1/2), sqrt(2)], ln m = 2 atanh(s) with
// s = (m - 1) / (m + 1), by its series to s^11.
PHOBOS_INLINE f32 log_of_steps(u32 k) {
    const u32 bits = __float_as_uint(__uint2float_rn(k));  // exact: k has 24 bits at most
    i32 exponent = static_cast<i32>(bits >> 23) - 127;
    f32 m = __uint_as_float((bits & 0x7FFFFFu) | 0x3F800000u);
    if (m > 0x1.6a09e6p+0f) {
        m = __fmul_rn(m, 0.5f);
        exponent += 1;
    }
    exponent -= 24;
    const f32 s = __fdiv_rn(__fsub_rn(m, 1.0f), __fadd_rn(m, 1.0f));
    const f32 s2 = __fmul_rn(s, s);
    f32 p = 0x1.745d18p-3f;
    p = __fadd_rn(0x1.c71c72p-3f, __fmul_rn(s2, p));
    p = __fadd_rn(0x1.24924ap-2f, __fmul_rn(s2, p));
    p = __fadd_rn(0x1.99999ap-2f, __fmul_rn(s2, p));
    p = __fadd_rn(0x1.555556p-1f, __fmul_rn(s2, p));
    p = __fmul_rn(s2, p);
    const f32 ln_m = __fadd_rn(__fadd_rn(s, s), __fmul_rn(s, p));
    const f32 e = static_cast<f32>(exponent);  // exact
    return __fadd_rn(__fmul_rn(e, 0x1.62e4p-1f), __fadd_rn(ln_m, __fmul_rn(e, 0x1.7f7d1cp-20f)));
}

// cos(2 pi j / 2^24) for j in [0, 2^24): the quadrant from j's top bits, then a polynomial of
// the rest of the angle, within pi/4 of 0.
PHOBOS_INLINE f32 cos_of_steps(u32 steps) {
    const i32 j = static_cast<i32>(steps);
    const i32 quadrant = (j + (1 << 21)) >> 22;
    const f32 x = __fmul_rn(static_cast<f32>(j - (quadrant << 22)), 0x1.921fb6p-22f);
    const f32 x2 = __fmul_rn(x, x);
    f32 c = -0x1.27e4fcp-22f;
    c = __fadd_rn(0x1.a01a02p-16f, __fmul_rn(x2, c));
    c = __fadd_rn(-0x1.6c16c2p-10f, __fmul_rn(x2, c));
    c = __fadd_rn(0x1.555556p-5f, __fmul_rn(x2, c));
    c = __fadd_rn(-0x1p-1f, __fmul_rn(x2, c));
    c = __fadd_rn(1.0f, __fmul_rn(x2, c));
    f32 s = 0x1.71de3ap-19f;
    s = __fadd_rn(-0x1.a01a02p-13f, __fmul_rn(x2, s));
    s = __fadd_rn(0x1.111112p-7f, __fmul_rn(x2, s));
    s = __fadd_rn(-0x1.555556p-3f, __fmul_rn(x2, s));
    s = __fadd_rn(x, __fmul_rn(__fmul_rn(x, x2), s));
    switch (quadrant & 3) {
        case 0: return c;
        case 1: return -s;
        case 2: return -c;
        default: return s;
    }
}

// Box-Muller: sqrt(-2 ln u) cos(2 pi v), u = ((w0 >> 8) + 1) 2^-24, v = (w1 >> 8) 2^-24.
template <class T> PHOBOS_INLINE f32 randn(u64 seed, T offset) {
    const philox_words w = philox(seed, offset);
    const f32 radius = __fsqrt_rn(__fmul_rn(log_of_steps((w.w0 >> 8) + 1u), -2.0f));
    return __fmul_rn(radius, cos_of_steps(w.w1 >> 8));
}

// Elementwise max/min: a NaN operand gives NaN, as in the CPU interpreter (numpy).
template <class T> PHOBOS_INLINE T max(T a, T b) {
    if constexpr (narrow_float<T>()) {
        return T(max(static_cast<float>(a), static_cast<float>(b)));
    } else {
        return (a != a || a > b) ? a : b;
    }
}
template <class T> PHOBOS_INLINE T min(T a, T b) {
    if constexpr (narrow_float<T>()) {
        return T(min(static_cast<float>(a), static_cast<float>(b)));
    } else {
        return (a != a || a < b) ? a : b;
    }
}
// f32 on sm_80 and later: one max.NaN / min.NaN instruction, no branch, so a
// reduction's chain of them is one dependent instruction a lane.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
PHOBOS_INLINE f32 max(f32 a, f32 b) {
    f32 out;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(out) : "f"(a), "f"(b));
    return out;
}
PHOBOS_INLINE f32 min(f32 a, f32 b) {
    f32 out;
    asm("min.NaN.f32 %0, %1, %2;" : "=f"(out) : "f"(a), "f"(b));
    return out;
}
#else
PHOBOS_INLINE f32 max(f32 a, f32 b) { return (a != a || b != b) ? a + b : ::fmaxf(a, b); }
PHOBOS_INLINE f32 min(f32 a, f32 b) { return (a != a || b != b) ? a + b : ::fminf(a, b); }
#endif
PHOBOS_INLINE f64 max(f64 a, f64 b) { return (a != a || b != b) ? a + b : ::fmax(a, b); }
PHOBOS_INLINE f64 min(f64 a, f64 b) { return (a != a || b != b) ? a + b : ::fmin(a, b); }

// ------------------------------------------------------------------ thread index

// The thread's index, with the compiler told it lies below the CTA size: a group's
// column (g % groups a row) then folds to g where the CTA's repeats stay in one row,
// instead of a signed remainder per group.
template <int THREADS> PHOBOS_INLINE int cta_thread(int tid) {
#ifdef __CUDA_ARCH__
    __builtin_assume(tid >= 0 && tid < THREADS);
#endif
    return tid;
}

// ------------------------------------------------------------------ vector access

template <int BYTES> struct vector_word;
template <> struct vector_word<16> { typedef uint4 type; };
template <> struct vector_word<8> { typedef uint2 type; };
template <> struct vector_word<4> { typedef unsigned int type; };
template <> struct vector_word<2> { typedef unsigned short type; };
template <> struct vector_word<1> { typedef unsigned char type; };

// f32 groups travel as float4/float2 so the PTX reads ld.global.v4.f32.
template <class T, int BYTES> struct vector_of { typedef typename vector_word<BYTES>::type type; };
template <> struct vector_of<f32, 16> { typedef float4 type; };
template <> struct vector_of<f32, 8> { typedef float2 type; };

template <class I> struct unsigned_of;
template <> struct unsigned_of<i32> { typedef u32 type; };
template <> struct unsigned_of<i64> { typedef u64 type; };

// 0 <= i < n (n >= 0), in one unsigned comparison.
template <class I> PHOBOS_INLINE bool below(I i, I n) {
    typedef typename unsigned_of<I>::type U;
    return static_cast<U>(i) < static_cast<U>(n);
}

// Lanes col .. col + V - 1 all lie in [0, extent); `extent >= V` is loop-invariant.
template <int V, class I> PHOBOS_INLINE bool whole_group(I col, I extent) {
    typedef typename unsigned_of<I>::type U;
    return extent >= V && static_cast<U>(col) <= static_cast<U>(extent - V);
}

template <int BYTES> PHOBOS_INLINE bool is_aligned(const void* p) {
    return (reinterpret_cast<unsigned long long>(p) & (BYTES - 1)) == 0;
}

// Lanes [0, V) of a group as vector words of BYTES each (V * sizeof(T) a multiple of BYTES).
template <int BYTES, class T, int V> PHOBOS_INLINE void load_vectors(const T* p, T (&out)[V]) {
    typedef typename vector_of<T, BYTES>::type W;
    constexpr int PER = BYTES / sizeof(T);
#pragma unroll
    for (int w = 0; w < V / PER; ++w) {
        W word = *reinterpret_cast<const W*>(p + w * PER);
        memcpy(&out[w * PER], &word, BYTES);
    }
}

template <int BYTES, class T, int V> PHOBOS_INLINE void store_vectors(T* p, const T (&in)[V]) {
    typedef typename vector_of<T, BYTES>::type W;
    constexpr int PER = BYTES / sizeof(T);
#pragma unroll
    for (int w = 0; w < V / PER; ++w) {
        W word;
        memcpy(&word, &in[w * PER], BYTES);
        *reinterpret_cast<W*>(p + w * PER) = word;
    }
}

// ------------------------------------------------------------------ runs of lanes
//
// `p` points at the run's first element, `col` is its index on the tensor's last
// axis, `extent` that axis's length and `inside` whether the run's other indices are
// in bounds.  BYTES is the vector width the specialisation allows (0: none),
// CHECK_ALIGN whether the address must be tested at run time.  A run wholly inside
// (and aligned) moves as vectors; any other lane by lane.

template <int V, int BYTES, bool CHECK_ALIGN, class T, class I>
PHOBOS_INLINE void load_run(const T* p, I col, I extent, bool inside, T* out) {
    if constexpr (BYTES > 0) {
        bool whole = inside && whole_group<V>(col, extent);
        if (CHECK_ALIGN) whole = whole && is_aligned<BYTES>(p);
        if (whole) {
            load_vectors<BYTES>(p, *reinterpret_cast<T(*)[V]>(out));
            return;
        }
    }
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = (inside && below<I>(col + I(i), extent)) ? p[i] : T(0);
}

// Lanes whose bit of `mask` is clear are not read (they load as zero).
template <int V, int BYTES, bool CHECK_ALIGN, class T, class I>
PHOBOS_INLINE void load_run_masked(const T* p, I col, I extent, bool inside, unsigned mask, T* out) {
    constexpr unsigned all = (V == 32) ? ~0u : (1u << V) - 1u;
    if ((mask & all) == all) {
        load_run<V, BYTES, CHECK_ALIGN>(p, col, extent, inside, out);
        return;
    }
#pragma unroll
    for (int i = 0; i < V; ++i) {
        out[i] = (((mask >> i) & 1u) && inside && below<I>(col + I(i), extent)) ? p[i] : T(0);
    }
}

// A run the checker proved inside the tensor: no bounds, no mask.
template <int V, int BYTES, bool CHECK_ALIGN, class T>
PHOBOS_INLINE void load_run_unchecked(const T* p, T* out) {
    if constexpr (BYTES > 0) {
        if (!CHECK_ALIGN || is_aligned<BYTES>(p)) {
            load_vectors<BYTES>(p, *reinterpret_cast<T(*)[V]>(out));
            return;
        }
    }
#pragma unroll
    for (int i = 0; i < V; ++i) out[i] = p[i];
}

// Lanes whose bit of `mask` is clear are not written.
template <int V, int BYTES, bool CHECK_ALIGN, class T, class I>
PHOBOS_INLINE void store_run(T* p, I col, I extent, bool inside, const T* in, unsigned mask) {
    if constexpr (BYTES > 0) {
        constexpr unsigned all = (V == 32) ? ~0u : (1u << V) - 1u;
        bool whole = inside && whole_group<V>(col, extent) && (mask & all) == all;
        if (CHECK_ALIGN) whole = whole && is_aligned<BYTES>(p);
        if (whole) {
            store_vectors<BYTES, T, V>(p, *reinterpret_cast<const T(*)[V]>(in));
            return;
        }
    }
#pragma unroll
    for (int i = 0; i < V; ++i) {
        if (((mask >> i) & 1u) && inside && below<I>(col + I(i), extent)) p[i] = in[i];
    }
}

// Bool tiles hold one bit a register in 32-bit words.
template <int W> PHOBOS_INLINE bool bit(const unsigned (&words)[W], int r) {
    return (words[r >> 5] >> (r & 31)) & 1u;
}
template <int W> PHOBOS_INLINE void set_bit(unsigned (&words)[W], int r, bool value) {
    words[r >> 5] = (words[r >> 5] & ~(1u << (r & 31))) | (unsigned(value) << (r & 31));
}
// Bits r0 .. r0 + COUNT - 1 (a run inside one word) as bits 0 .. COUNT - 1.
template <int COUNT, int W> PHOBOS_INLINE unsigned bits(const unsigned (&words)[W], int r0) {
    constexpr unsigned all = (COUNT == 32) ? ~0u : (1u << COUNT) - 1u;
    return (words[r0 >> 5] >> (r0 & 31)) & all;
}

// ------------------------------------------------------------------ integer division and shifts

// Integer division and remainder as docs/language.md defines them where C leaves them
// undefined: by zero, the quotient is 0 and the remainder the dividend; the most
// negative value divided by -1 wraps.
template <class T> PHOBOS_INLINE T divide(T a, T b) {
    if (b == T(0)) return T(0);
    if constexpr (T(-1) < T(0)) {
        if (b == T(-1)) return T(T(0) - a);
    }
    return T(a / b);
}
template <class T> PHOBOS_INLINE T remainder(T a, T b) {
    if (b == T(0)) return a;
    if constexpr (T(-1) < T(0)) {
        if (b == T(-1)) return T(0);
    }
    return T(a % b);
}

// Shifts by a count outside [0, bits) shift every bit out, as PTX's shl and shr do
// (C leaves them undefined): a << n is 0, and a >> n is 0, or -1 for a negative a.
template <class T> PHOBOS_INLINE T shift_left(T a, T n) {
    return static_cast<u64>(n) < 8 * sizeof(T) ? T(a << n) : T(0);
}
template <class T> PHOBOS_INLINE T shift_right(T a, T n) {
    if (static_cast<u64>(n) < 8 * sizeof(T)) return T(a >> n);
    if constexpr (T(-1) < T(0)) {
        if (a < T(0)) return T(-1);
    }
    return T(0);
}

// ------------------------------------------------------------------ 16-bit pairs

// Two 16-bit values as one 32-bit register (lo in the low half), and back: how mma and
// wgmma take their 16-bit operands.
template <class T> PHOBOS_INLINE unsigned pack2(T lo, T hi) {
    static_assert(sizeof(T) == 2, "16-bit values");
    unsigned short a, b;
    memcpy(&a, &lo, 2);
    memcpy(&b, &hi, 2);
    return unsigned(a) | (unsigned(b) << 16);
}
template <class T> PHOBOS_INLINE void unpack2(unsigned bits, T& lo, T& hi) {
    static_assert(sizeof(T) == 2, "16-bit values");
    const unsigned short a = static_cast<unsigned short>(bits), b = static_cast<unsigned short>(bits >> 16);
    memcpy(&lo, &a, 2);
    memcpy(&hi, &b, 2);
}

}  // namespace phobos

// The instructions themselves (inline PTX): tensor cores, asynchronous copies, fences.
#include <phobos_ptx.cuh>  // on the include path: a host check of the printed code brings its own

namespace phobos {

// ------------------------------------------------------------------ async copies


// A run of V elements (16 bytes) from global to shared memory: cp.async when it lies
// wholly inside and aligned, else lane by lane with zeros for lanes outside.
template <int V, bool CHECK_ALIGN, class T, class I>
PHOBOS_INLINE void copy_run_async(T* shared, const T* p, I col, I extent, bool inside) {
    static_assert(V * sizeof(T) == 16, "a run is one 16-byte copy");
    bool whole = inside && whole_group<V>(col, extent);
    if (CHECK_ALIGN) whole = whole && is_aligned<16>(p);
    if (whole) {
        copy_async_16(shared, p);
        return;
    }
#pragma unroll
    for (int i = 0; i < V; ++i) shared[i] = (inside && below<I>(col + I(i), extent)) ? p[i] : T(0);
}

// ------------------------------------------------------------------ atomics
// Native atomics where the hardware has them; otherwise a compare-and-swap loop on the
// element's 16-, 32- or 64-bit word.  Each returns the element's old value.

template <int BYTES> struct cas_word;
template <> struct cas_word<2> { typedef unsigned short type; };
template <> struct cas_word<4> { typedef unsigned int type; };
template <> struct cas_word<8> { typedef unsigned long long type; };

template <class T, class F> PHOBOS_INLINE T atomic_update(T* p, F next_of) {
    typedef typename cas_word<sizeof(T)>::type W;
    W* word = reinterpret_cast<W*>(p);
    W seen = *reinterpret_cast<volatile W*>(word);
    while (true) {
        T current;
        memcpy(&current, &seen, sizeof(T));
        const T next = next_of(current);
        W wanted;
        memcpy(&wanted, &next, sizeof(T));
        if (wanted == seen) return current;
        const W before = atomicCAS(word, seen, wanted);
        if (before == seen) return current;
        seen = before;
    }
}

template <class T> PHOBOS_INLINE constexpr bool is_integer() { return false; }
template <> PHOBOS_INLINE constexpr bool is_integer<i16>() { return true; }
template <> PHOBOS_INLINE constexpr bool is_integer<u16>() { return true; }
template <> PHOBOS_INLINE constexpr bool is_integer<i32>() { return true; }
template <> PHOBOS_INLINE constexpr bool is_integer<u32>() { return true; }
template <> PHOBOS_INLINE constexpr bool is_integer<i64>() { return true; }
template <> PHOBOS_INLINE constexpr bool is_integer<u64>() { return true; }

template <class T> PHOBOS_INLINE T atomic_add(T* p, T v) {
    if constexpr (is_integer<T>() && sizeof(T) == 8) {  // two's complement: i64 adds as u64
        typedef unsigned long long U;
        return T(atomicAdd(reinterpret_cast<U*>(p), static_cast<U>(v)));
    } else if constexpr (sizeof(T) >= 4 || narrow_float<T>()) {
        return atomicAdd(p, v);
    } else {
        return atomic_update(p, [v](T x) { return cast<T>(x + v); });
    }
}

template <class T> PHOBOS_INLINE T atomic_max(T* p, T v) {
    if constexpr (is_integer<T>() && sizeof(T) >= 4) {
        return atomicMax(p, v);
    } else {
        return atomic_update(p, [v](T x) { return max(x, v); });
    }
}

template <class T> PHOBOS_INLINE T atomic_xchg(T* p, T v) {
    if constexpr (sizeof(T) == 4) {
        return atomicExch(p, v);
    } else {
        return atomic_update(p, [v](T) { return v; });
    }
}

template <class T> PHOBOS_INLINE T atomic_cas(T* p, T compare, T v) {
    typedef typename cas_word<sizeof(T)>::type W;
    W c, n;
    memcpy(&c, &compare, sizeof(T));
    memcpy(&n, &v, sizeof(T));
    const W before = atomicCAS(reinterpret_cast<W*>(p), c, n);
    T out;
    memcpy(&out, &before, sizeof(T));
    return out;
}

// ------------------------------------------------------------------ reductions

// Exchange with the lane whose index differs in the bits of `lane_mask` (all 32 lanes take part).
template <class T> PHOBOS_INLINE T shuffle_xor(T v, int lane_mask) {
    return __shfl_xor_sync(0xffffffffu, v, lane_mask);
}

// The element offset of (row, col) in a tile of 16-bit values staged for wgmma: ROWS rows of
// W bytes (a swizzle atom's width) per atom, atoms side by side along col, and each row's
// 16-byte chunks permuted as the W-byte swizzle mode reads them (chunk ^= bits 7.. of the
// byte offset), so that the tile's base on 1024 bytes is where the pattern starts.
template <int W, int ROWS> PHOBOS_INLINE int swizzled_offset(int row, int col) {
    const int linear = (col * 2 / W) * ROWS * W + row * W + col * 2 % W;
    return (linear ^ (((linear >> 7) & (W / 16 - 1)) << 4)) / 2;
}


}  // namespace phobos
