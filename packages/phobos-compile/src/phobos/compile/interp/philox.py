"""Counter-based random numbers: ``randint``, ``rand`` and ``randn`` (docs/language.md, section 5).

Every value is a function of the seed and the lane's offset alone, so a kernel gives the
same numbers in the interpreter, in the GPU-IR executor and on the GPU, whatever the CTA
size or the order blocks run in.  The generator is Philox 4x32 with 10 rounds (Salmon,
Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011):

* the key is the seed as a 64-bit two's-complement integer, low word first: ``k0`` its low
  32 bits, ``k1`` its high 32 bits (a negative ``i32`` seed is sign-extended);
* the counter is ``(o0, o1, 0, 0)`` where ``o0`` and ``o1`` are the low and high words of the
  offset's value as a 64-bit two's-complement integer (so ``i32(-1)`` and ``i64(-1)`` give
  the same numbers);
* a round maps ``(c0, c1, c2, c3)`` to ``(hi(B c2) ^ c1 ^ k0, lo(B c2), hi(A c0) ^ c3 ^ k1,
  lo(A c0))`` with ``A = 0xD2511F53``, ``B = 0xCD9E8D57`` and ``hi``/``lo`` the halves of the
  64-bit product; after each round the key grows by ``(0x9E3779B9, 0xBB67AE85)`` modulo 2^32.

``randint`` is the first output word.  ``rand`` folds it to 31 bits (``b`` below 2^31, else
``~b``) and multiplies that, rounded to ``f32``, by ``0x1.fffffep-32`` in ``f32``: a value in
[0, 1 - 2^-24], never 1.  ``randn`` is Box-Muller on the first two output words, with a
logarithm, square root and cosine made of IEEE-rounded ``f32`` additions, multiplications, one
division and one square root, in an order fixed here and in the GPU runtime
(``phobos_gpu.cuh``), so that it too is the same to the bit everywhere (no libm call, whose
last bits differ between the GPU's library and the host's).

Every function takes numpy arrays (or numpy scalars) and works on whole arrays at once.
"""

from __future__ import annotations

import numpy as np

ROUNDS = 10
MULTIPLIER_A = np.uint64(0xD2511F53)
MULTIPLIER_B = np.uint64(0xCD9E8D57)
KEY_STEP_0 = np.uint32(0x9E3779B9)
KEY_STEP_1 = np.uint32(0xBB67AE85)

_LOW = np.uint64(0xFFFFFFFF)
_HALF = np.uint64(32)
_F32 = np.float32


def _hex(text: str) -> np.float32:
    value = _F32(float.fromhex(text))
    assert float(value) == float.fromhex(text), text  # each constant is an exact f32
    return value


# rand: the largest f32 s with (2^31 - 1 rounded to f32) * s < 1, that is (1 - 2^-24) 2^-31.
UNIFORM_SCALE = _hex("0x1.fffffep-32")
# randn's constants, each an f32 (the runtime header spells the same hex literals).
SQRT2 = _hex("0x1.6a09e6p+0")
LN2_HIGH = _hex("0x1.62e4p-1")  # ln 2's leading 15 bits: E * LN2_HIGH is exact for |E| <= 24
LN2_LOW = _hex("0x1.7f7d1cp-20")  # ln 2 - LN2_HIGH, rounded
# 2 atanh(s) = 2s + s (s^2 (2/3 + s^2 (2/5 + s^2 (2/7 + s^2 (2/9 + s^2 2/11))))).
ATANH = tuple(_hex(h) for h in ("0x1.555556p-1", "0x1.99999ap-2", "0x1.24924ap-2"))
ATANH += tuple(_hex(h) for h in ("0x1.c71c72p-3", "0x1.745d18p-3"))
# cos x = 1 + x^2 (-1/2 + x^2 (1/24 + ... )), sin x = x + x x^2 (-1/6 + x^2 (1/120 + ...)).
COS = tuple(_hex(h) for h in ("-0x1p-1", "0x1.555556p-5", "-0x1.6c16c2p-10"))
COS += tuple(_hex(h) for h in ("0x1.a01a02p-16", "-0x1.27e4fcp-22"))
SIN = tuple(_hex(h) for h in ("-0x1.555556p-3", "0x1.111112p-7", "-0x1.a01a02p-13"))
SIN += (_hex("0x1.71de3ap-19"),)
TWO_PI_STEP = _hex("0x1.921fb6p-22")  # 2 pi (as an f32) / 2^24


def _words(value) -> tuple[np.ndarray, np.ndarray]:
    """The low and high 32-bit words of each integer's value as a 64-bit two's complement."""
    wide = np.asarray(value).astype(np.uint64)  # C's conversion: signed values sign-extend
    return (wide & _LOW).astype(np.uint32), (wide >> _HALF).astype(np.uint32)


def philox(seed, offsets, words: int = 1) -> list[np.ndarray]:
    """The first ``words`` output words of Philox 4x32-10 for each offset, as ``uint32``
    arrays of the broadcast shape of ``seed`` and ``offsets``."""
    k0, k1 = _words(seed)
    c0, c1 = _words(offsets)
    shape = np.broadcast_shapes(np.shape(k0), np.shape(c0))
    c0, c1, k0, k1 = (np.broadcast_to(v, shape).astype(np.uint32) for v in (c0, c1, k0, k1))
    c2 = np.zeros(shape, np.uint32)
    c3 = np.zeros(shape, np.uint32)
    with np.errstate(over="ignore"):
        for _ in range(ROUNDS):
            a = c0.astype(np.uint64) * MULTIPLIER_A
            b = c2.astype(np.uint64) * MULTIPLIER_B
            c0, c1, c2, c3 = (
                (b >> _HALF).astype(np.uint32) ^ c1 ^ k0,
                (b & _LOW).astype(np.uint32),
                (a >> _HALF).astype(np.uint32) ^ c3 ^ k1,
                (a & _LOW).astype(np.uint32),
            )
            k0 = k0 + KEY_STEP_0
            k1 = k1 + KEY_STEP_1
    return [c0, c1, c2, c3][:words]


def _scalar_if(result: np.ndarray, *operands):
    return result[()] if all(np.ndim(o) == 0 for o in operands) else result


def randint(seed, offsets):
    """The 32 random bits of each lane (``u32``)."""
    return _scalar_if(philox(seed, offsets)[0], seed, offsets)


def uniform(bits: np.ndarray) -> np.ndarray:
    """32 random bits to an f32 in [0, 1): folded to 31 bits, rounded to f32, scaled."""
    folded = np.where(bits >= np.uint32(2**31), ~bits, bits)
    return folded.astype(_F32) * UNIFORM_SCALE


def rand(seed, offsets):
    """A uniform f32 in [0, 1 - 2^-24] for each lane."""
    return _scalar_if(uniform(philox(seed, offsets)[0]), seed, offsets)


def log_of_steps(k: np.ndarray) -> np.ndarray:
    """ln(k 2^-24) in f32 for integers k in [1, 2^24]: k = 2^e m with m in [sqrt(1/2), sqrt(2)],
    ln m = 2 atanh((m - 1) / (m + 1)) by its series."""
    f = k.astype(_F32)  # exact: k has at most 24 significant bits
    bits = f.view(np.uint32)
    exponent = (bits >> np.uint32(23)).astype(np.int32) - np.int32(127)
    m = ((bits & np.uint32(0x7FFFFF)) | np.uint32(0x3F800000)).view(_F32)
    high = m > SQRT2
    m = np.where(high, m * _F32(0.5), m)
    exponent = exponent + high.astype(np.int32) - np.int32(24)
    s = (m - _F32(1)) / (m + _F32(1))
    s2 = s * s
    p = ATANH[4]
    for c in ATANH[3::-1]:
        p = c + s2 * p
    p = s2 * p
    ln_m = (s + s) + s * p
    e = exponent.astype(_F32)  # exact
    return e * LN2_HIGH + (ln_m + e * LN2_LOW)


def cos_of_steps(j: np.ndarray) -> np.ndarray:
    """cos(2 pi j / 2^24) in f32 for integers j in [0, 2^24): the quadrant from j's top bits
    (exactly), then a polynomial of the remaining angle, within pi/4 of 0."""
    j = j.astype(np.int32)
    quadrant = (j + np.int32(1 << 21)) >> np.int32(22)
    x = (j - (quadrant << np.int32(22))).astype(_F32) * TWO_PI_STEP  # in [-pi/4, pi/4)
    x2 = x * x
    c = COS[4]
    for k in COS[3::-1]:
        c = k + x2 * c
    c = _F32(1) + x2 * c
    s = SIN[3]
    for k in SIN[2::-1]:
        s = k + x2 * s
    s = x + (x * x2) * s
    quadrant = quadrant & np.int32(3)
    return np.where(
        quadrant == 0, c, np.where(quadrant == 1, -s, np.where(quadrant == 2, -c, s))
    ).astype(_F32)


def normal(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Box-Muller: sqrt(-2 ln u) cos(2 pi v) with u = (first >> 8 + 1) 2^-24 in (0, 1] and
    v = (second >> 8) 2^-24 in [0, 1)."""
    k = (first >> np.uint32(8)) + np.uint32(1)
    radius = np.sqrt(log_of_steps(k) * _F32(-2))
    return radius * cos_of_steps(second >> np.uint32(8))


def randn(seed, offsets):
    """A standard normal f32 for each lane (|value| <= sqrt(48 ln 2), about 5.77)."""
    first, second = philox(seed, offsets, words=2)
    return _scalar_if(normal(first, second), seed, offsets)
