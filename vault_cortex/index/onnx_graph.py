"""An int8 ONNX model made cheap to run: the same function, its graph rewritten once at load.

The bundled MiniLM keeps each weight as int8 with a float scale, dequantized by a `Cast` and a `Mul` at every
run. Left so, a query re-creates all its float weights each time: the word embedding table alone is 11.7M
values, of which a query reads a few rows (a query's embedding took 20-25 ms, against 6 ms). onnxruntime's
constant folding does that work once, but holds every weight as float for the life of the process (+124 MB
RSS). Two exact rewrites keep the speed and most of the memory:

- a table read by `Gather` (the word and position embeddings) gathers the int8 rows and their scales first,
  then dequantizes only those rows: the table stays int8;
- a weight read by anything else (the `MatMul`s of the encoder layers, 42 MB as float) is dequantized here,
  once, into a float initializer, as constant folding would.

Both give the values the original graph computes (the same casts and products, element by element). The
rewrite reads and writes the protobuf wire format directly (a model is a few hundred nodes and initializers):
vault-cortex needs no `onnx` package for it. A graph it does not understand is returned unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

# Field numbers of onnx.proto (ModelProto, GraphProto, NodeProto, AttributeProto, TensorProto).
_MODEL_GRAPH = 7
_GRAPH_NODE, _GRAPH_INITIALIZER = 1, 5
_NODE_INPUT, _NODE_OUTPUT, _NODE_OP, _NODE_ATTRIBUTE, _NODE_DOMAIN = 1, 2, 4, 5, 7
_ATTR_NAME, _ATTR_INT, _ATTR_GRAPH, _ATTR_GRAPHS, _ATTR_TYPE = 1, 3, 6, 11, 20
_ATTR_TYPE_INT = 2
_TENSOR_DIMS, _TENSOR_TYPE, _TENSOR_NAME, _TENSOR_RAW, _TENSOR_EXTERNAL, _TENSOR_LOCATION = 1, 2, 8, 9, 13, 14
_GRAPH_OUTPUT, _VALUE_INFO_NAME = 12, 1
_FLOAT = 1
_INTEGER_TYPES = {2: np.uint8, 3: np.int8}  # TensorProto data types a quantized weight is stored as
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


class _Unsupported(Exception):
    """A construct the rewrite does not handle: the model is used as it is."""


def rewrite(model: bytes) -> bytes:
    """`model` with its dequantized int8 weights gathered before dequantizing (tables) or dequantized once
    (everything else); `model` itself when there is nothing to rewrite or the graph is not understood."""
    try:
        return _rewrite(memoryview(model)) or model
    except (_Unsupported, ValueError, KeyError, IndexError):  # UnicodeDecodeError is a ValueError
        return model


@dataclass
class _Node:
    raw: bytes
    op: str
    inputs: list[str]
    outputs: list[str]
    ints: dict[str, int]


@dataclass
class _Tensor:
    dtype: int
    dims: tuple[int, ...]
    data: memoryview | None  # raw_data; None when the values are stored in a typed field

    def array(self) -> np.ndarray:
        if self.data is None:
            raise _Unsupported("tensor without raw_data")
        kind = np.float32 if self.dtype == _FLOAT else _INTEGER_TYPES[self.dtype]
        return np.frombuffer(self.data, dtype=np.dtype(kind).newbyteorder("<")).reshape(self.dims)


_NO_TENSOR = _Tensor(0, (), None)


@dataclass
class _Dequant:
    """`out = Mul(Cast(q, to=float), scale)` with both `q` and `scale` initializers."""

    mul: _Node
    cast: _Node
    q: str
    scale: str


def _parse_graph(graph: memoryview) -> tuple[list[_Node], dict[str, _Tensor], set[str]]:
    """A graph's nodes in order, its initializers by name, and the names of its outputs."""
    nodes: list[_Node] = []
    tensors: dict[str, _Tensor] = {}
    outputs: set[str] = set()
    for number, wire, _, value in _fields(graph):
        if number == _GRAPH_NODE and wire == _BYTES:
            nodes.append(_node(value))
        elif number == _GRAPH_INITIALIZER and wire == _BYTES:
            name, tensor = _tensor(value)
            tensors[name] = tensor
        elif number == _GRAPH_OUTPUT and wire == _BYTES:
            outputs |= {_text(v) for n, w, _, v in _fields(value) if n == _VALUE_INFO_NAME and w == _BYTES}
    return nodes, tensors, outputs


def _dequantizer(nodes: list[_Node], tensors: dict[str, _Tensor]) -> Callable[[str], _Dequant | None]:
    """What finds the dequantization producing a value: Mul(Cast(integer initializer → float), float scale),
    its Cast read by that Mul alone; None for any other value."""
    producer = {out: node for node in nodes for out in node.outputs}
    readers: dict[str, int] = {}
    for node in nodes:
        for name in node.inputs:
            readers[name] = readers.get(name, 0) + 1

    def dequant(name: str) -> _Dequant | None:
        mul = producer.get(name)
        if mul is None or mul.op != "Mul" or len(mul.inputs) != 2:
            return None
        for cast_out, scale in (mul.inputs, mul.inputs[::-1]):
            cast = producer.get(cast_out)
            if (cast is not None and cast.op == "Cast" and cast.ints.get("to") == _FLOAT and len(cast.inputs) == 1
                    and tensors.get(cast.inputs[0], _NO_TENSOR).dtype in _INTEGER_TYPES
                    and tensors.get(scale, _NO_TENSOR).dtype == _FLOAT and readers[cast_out] == 1):
                return _Dequant(mul, cast, cast.inputs[0], scale)
        return None

    return dequant


def _model_bytes(model: memoryview, graph: memoryview, rewritten: list[list[_Node]], dropped: set[int],
                 folded: dict[str, _Dequant], tensors: dict[str, _Tensor], still_read: set[str],
                 quantized: set[str]) -> bytes:
    """The model with its graph written anew: the rewritten nodes but the dropped ones, the initializers still
    read, and each folded weight as a float initializer."""
    # The new graph as a list of pieces joined once at the end: the model's bytes are copied once.
    pieces: list[bytes | memoryview] = []
    node_parts = iter(rewritten)
    for number, wire, raw, value in _fields(graph):
        if number == _GRAPH_NODE and wire == _BYTES:
            pieces += [_bytes_field(_GRAPH_NODE, n.raw) for n in next(node_parts) if id(n) not in dropped]
        elif number != _GRAPH_INITIALIZER or wire != _BYTES or _kept(_tensor(value)[0], still_read, quantized):
            pieces.append(raw)
    for name, weight in folded.items():
        q, scale = tensors[weight.q].array(), tensors[weight.scale].array()
        pieces += _float_tensor_field(_GRAPH_INITIALIZER, name, np.multiply(q, scale, dtype=np.float32))
    model_pieces: list[bytes | memoryview] = []
    for number, _, raw, _ in _fields(model):
        if number == _MODEL_GRAPH:
            model_pieces += [_key_and_size(_MODEL_GRAPH, sum(len(piece) for piece in pieces)), *pieces]
        else:
            model_pieces.append(raw)
    return b"".join(model_pieces)


def _rewrite(model: memoryview) -> bytes | None:
    graphs = [value for number, wire, _, value in _fields(model) if number == _MODEL_GRAPH and wire == _BYTES]
    if len(graphs) != 1:
        return None
    graph = graphs[0]
    nodes, tensors, outputs = _parse_graph(graph)
    dequant = _dequantizer(nodes, tensors)
    rewritten: list[list[_Node]] = []  # each node, or the nodes standing in its place
    folded: dict[str, _Dequant] = {}  # dequantized weights that become float initializers
    gathered: list[_Dequant] = []  # tables now read row by row
    for node in nodes:
        table = dequant(node.inputs[0]) if node.op == "Gather" and node.ints.get("axis", 0) == 0 else None
        parts = _gather_first(node, table, tensors) if table is not None else None
        if table is not None and parts is not None:
            rewritten.append(parts)
            gathered.append(table)
            continue
        rewritten.append([node])
        for name in node.inputs:
            if name not in folded and name not in outputs and (weight := dequant(name)) is not None:
                folded[name] = weight
    if not folded and not gathered:
        return None
    # A folded weight's Mul goes (an initializer holds its output now); then each dequantizing Cast and Mul
    # nobody reads any more, and the int8 weights and scales only they read.
    dequants = [*folded.values(), *gathered]
    dropped = {id(weight.mul) for weight in folded.values()}

    def read() -> set[str]:
        return outputs | {name for parts in rewritten for n in parts if id(n) not in dropped for name in n.inputs}

    for dequant_nodes in ([w.mul for w in gathered], [w.cast for w in dequants]):  # each Mul, then each Cast
        still_read = read()
        dropped |= {id(n) for n in dequant_nodes if not set(n.outputs) & still_read}
    still_read = read()
    quantized = {name for weight in dequants for name in (weight.q, weight.scale)}

    return _model_bytes(model, graph, rewritten, dropped, folded, tensors, still_read, quantized)


def _kept(initializer: str, read: set[str], quantized: set[str]) -> bool:
    """An initializer stays unless it is a rewritten weight's int8 values or scale that nothing reads now."""
    return initializer in read or initializer not in quantized


def _gather_first(gather: _Node, table: _Dequant, tensors: dict[str, _Tensor]) -> list[_Node] | None:
    """Gather(Mul(Cast(q), scale), ids) as Mul(Cast(Gather(q, ids)), scale's rows): the same values, from
    the rows read only. A per-row scale ([rows, 1]) is gathered too; a scale that does not vary along the
    rows ([1, n], [n], a scalar) is used as it is; any other is left alone."""
    q, scale = tensors[table.q].dims, tensors[table.scale].dims
    if len(q) != 2 or len(gather.outputs) != 1:
        return None
    ids, out = gather.inputs[1], gather.outputs[0]
    rows = _make_node("Gather", [table.q, ids], [f"{out}/rows_q"], axis=0)
    cast = _make_node("Cast", [f"{out}/rows_q"], [f"{out}/rows_f"], to=_FLOAT)
    if scale == (q[0], 1):
        scales = _make_node("Gather", [table.scale, ids], [f"{out}/rows_scale"], axis=0)
        return [rows, cast, scales, _make_node("Mul", [f"{out}/rows_f", f"{out}/rows_scale"], [out])]
    if len(scale) <= 2 and (not scale or scale[0] == 1 or len(scale) == 1):
        return [rows, cast, _make_node("Mul", [f"{out}/rows_f", table.scale], [out])]
    return None


# Wire format: https://protobuf.dev/programming-guides/encoding/


def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise _Unsupported("truncated varint")
        byte = buf[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7


def _fields(buf: memoryview) -> Iterator[tuple[int, int, memoryview, Any]]:
    """(field number, wire type, the field's encoding, its value: an int or the bytes) of each field."""
    pos = 0
    while pos < len(buf):
        start = pos
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == _VARINT:
            value, pos = _varint(buf, pos)
        elif wire == _BYTES:
            size, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + size], pos + size
        elif wire in (_FIXED64, _FIXED32):
            pos += 8 if wire == _FIXED64 else 4
            value = None
        else:
            raise _Unsupported(f"wire type {wire}")
        if pos > len(buf):
            raise _Unsupported("truncated field")
        yield number, wire, buf[start:pos], value


def _text(value: memoryview) -> str:
    return bytes(value).decode("utf-8")


def _node(buf: memoryview) -> _Node:
    op, inputs, outputs, ints = "", [], [], {}
    for number, wire, _, value in _fields(buf):
        if wire != _BYTES:
            continue
        if number == _NODE_INPUT:
            inputs.append(_text(value))
        elif number == _NODE_OUTPUT:
            outputs.append(_text(value))
        elif number == _NODE_OP:
            op = _text(value)
        elif number == _NODE_DOMAIN and _text(value) not in ("", "ai.onnx"):
            op = f"{_text(value)}.{op}" if op else _text(value)
        elif number == _NODE_ATTRIBUTE:
            attribute = {n: v for n, _, _, v in _fields(value)}
            if _ATTR_GRAPH in attribute or _ATTR_GRAPHS in attribute:
                raise _Unsupported("a subgraph reads names the rewrite cannot see")
            if attribute.get(_ATTR_TYPE) == _ATTR_TYPE_INT and _ATTR_NAME in attribute:
                ints[_text(attribute[_ATTR_NAME])] = _signed(attribute.get(_ATTR_INT, 0))
    return _Node(bytes(buf), op, inputs, outputs, ints)


def _tensor(buf: memoryview) -> tuple[str, _Tensor]:
    name, dtype, dims, data = "", 0, [], None
    for number, wire, _, value in _fields(buf):
        if number == _TENSOR_NAME and wire == _BYTES:
            name = _text(value)
        elif number == _TENSOR_TYPE and wire == _VARINT:
            dtype = value
        elif number == _TENSOR_DIMS and wire == _VARINT:
            dims.append(_signed(value))
        elif number == _TENSOR_DIMS and wire == _BYTES:  # packed
            pos = 0
            while pos < len(value):
                dim, pos = _varint(value, pos)
                dims.append(_signed(dim))
        elif number == _TENSOR_RAW and wire == _BYTES:
            data = value
        elif number == _TENSOR_EXTERNAL or (number == _TENSOR_LOCATION and value):
            raise _Unsupported("weights kept in an external file: the model is loaded from its path as it is")
    return name, _Tensor(dtype, tuple(dims), data)


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _encode_varint(value: int) -> bytes:
    value &= (1 << 64) - 1
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key_and_size(number: int, size: int) -> bytes:
    return _encode_varint(number << 3 | _BYTES) + _encode_varint(size)


def _bytes_field(number: int, payload: bytes) -> bytes:
    return _key_and_size(number, len(payload)) + payload


def _varint_field(number: int, value: int) -> bytes:
    return _encode_varint(number << 3 | _VARINT) + _encode_varint(value)


def _make_node(op: str, inputs: list[str], outputs: list[str], **ints: int) -> _Node:
    raw = b"".join(
        [_bytes_field(_NODE_INPUT, name.encode()) for name in inputs]
        + [_bytes_field(_NODE_OUTPUT, name.encode()) for name in outputs]
        + [_bytes_field(_NODE_OP, op.encode())]
        + [_bytes_field(_NODE_ATTRIBUTE, _bytes_field(_ATTR_NAME, key.encode()) + _varint_field(_ATTR_INT, value)
                        + _varint_field(_ATTR_TYPE, _ATTR_TYPE_INT)) for key, value in ints.items()]
    )
    return _Node(raw, op, inputs, outputs, dict(ints))


def _float_tensor_field(number: int, name: str, values: npt.NDArray[np.float32]) -> list[bytes | memoryview]:
    """A float TensorProto as the pieces of field `number`: its values are not copied here."""
    data = memoryview(np.ascontiguousarray(values, dtype="<f4").reshape(-1).view(np.uint8).data)
    head = b"".join([_varint_field(_TENSOR_DIMS, dim) for dim in values.shape]
                    + [_varint_field(_TENSOR_TYPE, _FLOAT), _bytes_field(_TENSOR_NAME, name.encode()),
                       _key_and_size(_TENSOR_RAW, len(data))])
    return [_key_and_size(number, len(head) + len(data)), head, data]
