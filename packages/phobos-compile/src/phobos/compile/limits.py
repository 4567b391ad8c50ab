"""The limits a program must keep (docs/language.md, "Limits"); each is checked with an error
at the user's line that names the limit.

* ``MAX_TILE_ELEMENTS``: the lanes of one tile value (a window, ``zeros``, ``arange``, the
  result of any operation) and the length of one window or tile extent.  A 131072-lane
  tile (softmax's 8 x 16384) already takes NVRTC about 10 s; 2^20 lanes take minutes.
* ``MAX_VARIANT_TILE_ELEMENTS``: the lanes of all tile values one variant computes, each
  operation counted once where it is written (``--emit ir`` shows them): a bound on the
  code one variant makes.  The back end enforces its own register and shared-memory
  limits on top of these.
* ``MAX_NESTING``: how deeply blocks and expressions nest (see ``nesting``).  Every pass
  over a program (parser, front end, checker, interpreter, printers, code generator)
  recurses once or a few times per level, so the limit keeps them all well inside
  Python's default recursion limit of 1000 frames.
* ``MAX_THREAD_REGISTERS``: the registers of one thread.  A ``dot`` result whose lanes,
  spread over the CTA's threads, pass it cannot be held at all (``passes/cta.py``).
* shared memory: a variant's CTA may need at most what its target gives a CTA
  (``gpu/arch.py``; checked by ``passes/allocation.py``).
* ``MAX_TENSOR_EXTENT``: a tensor extent fixed at compile time (it must be an ``i64``).
* ``MAX_VARIANTS``: the variants of one ``@autotune`` space (the tuner lists them all).
"""

from __future__ import annotations

MAX_TILE_ELEMENTS = 1 << 17
MAX_VARIANT_TILE_ELEMENTS = 1 << 22
MAX_NESTING = 100
MAX_TENSOR_EXTENT = (1 << 63) - 1
MAX_THREAD_REGISTERS = 255
MAX_VARIANTS = 1 << 16

# ``Diagnostic.limit`` names the limit an error is about: the tuner prunes a variant that
# exceeds one (it is not a mistake in the program, only a variant too large to build).
TILE_ELEMENTS = "tile elements"
VARIANT_TILE_ELEMENTS = "variant tile elements"
NESTING = "nesting"
REGISTERS = "registers"
SHARED_MEMORY = "shared memory"
