"""Element types as the launcher sees them: Phobos names, sizes and foreign spellings.

Arrays describe their element type in their own words: a ``__cuda_array_interface__``
typestr (``"<f4"``) or a torch dtype (``torch.float32``).  Both are mapped to the
Phobos name (``"f32"``) that the launch contract uses.
"""

from __future__ import annotations

ITEMSIZE: dict[str, int] = {
    "bool": 1,
    "i8": 1,
    "i16": 2,
    "i32": 4,
    "i64": 8,
    "u8": 1,
    "u16": 2,
    "u32": 4,
    "u64": 8,
    "f16": 2,
    "bf16": 2,
    "f32": 4,
    "f64": 8,
}

# The ``struct`` code a value of each type is packed with (little-endian, standard sizes).
# bf16 has no struct code: its scalar is converted to its 16 bits first (see scalars.py).
STRUCT_CODE: dict[str, str] = {
    "bool": "?",
    "i8": "b",
    "i16": "h",
    "i32": "i",
    "i64": "q",
    "u8": "B",
    "u16": "H",
    "u32": "I",
    "u64": "Q",
    "f16": "e",
    "bf16": "H",
    "f32": "f",
    "f64": "d",
}

# A slot's type is an element type or "tmap", a TMA descriptor (CUtensorMap: 128 opaque bytes
# on 64, which the driver's parameter layout sees to).
TENSOR_MAP = "tmap"
SLOT_ITEMSIZE: dict[str, int] = {**ITEMSIZE, TENSOR_MAP: 128}
SLOT_STRUCT_CODE: dict[str, str] = {**STRUCT_CODE, TENSOR_MAP: "128s"}

_TYPESTR_KINDS = {"b": "bool", "i": "i", "u": "u", "f": "f"}


def from_typestr(typestr: str) -> str:
    """The Phobos name of a ``__cuda_array_interface__`` typestr, else the typestr itself.

    A typestr the launcher cannot use (big-endian, complex, ``V2`` for bfloat16 from
    numpy extensions) comes back unchanged, so the dtype check names it as given.
    """
    if len(typestr) < 3 or (typestr[0] == ">" and typestr[2:] != "1"):
        return typestr
    kind = _TYPESTR_KINDS.get(typestr[1])
    if kind is None or not typestr[2:].isdigit():
        return typestr
    if kind == "bool":
        return "bool" if typestr[2:] == "1" else typestr
    name = f"{kind}{int(typestr[2:]) * 8}"
    return name if name in ITEMSIZE else typestr


_TORCH_NAMES = {
    "torch.bool": "bool",
    "torch.int8": "i8",
    "torch.int16": "i16",
    "torch.int32": "i32",
    "torch.int64": "i64",
    "torch.uint8": "u8",
    "torch.uint16": "u16",
    "torch.uint32": "u32",
    "torch.uint64": "u64",
    "torch.float16": "f16",
    "torch.bfloat16": "bf16",
    "torch.float32": "f32",
    "torch.float64": "f64",
}
_torch_seen: dict[object, str] = {}
_torch_by_name: dict[str, object] = {}


def from_torch(dtype: object) -> str:
    """The Phobos name of a torch dtype (else its own name), without importing torch."""
    name = _torch_seen.get(dtype)
    if name is None:
        text = str(dtype)
        name = _TORCH_NAMES.get(text, text)
        _torch_seen[dtype] = name
        _torch_by_name.setdefault(name, dtype)
    return name


def torch_dtype(name: str) -> object | None:
    """The torch dtype object ``from_torch`` named ``name``, if it has seen one."""
    return _torch_by_name.get(name)
