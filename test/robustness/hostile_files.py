"""Writes hostile .npy, .safetensors and index.json files, one per case,
into DIR/<case>/ (for pc-run --inputs, --params and --load)."""
import json
import os
import struct
import sys

out = sys.argv[1]


def npy(case, header, data=b""):
    d = os.path.join(out, case)
    os.makedirs(d, exist_ok=True)
    h = header.encode()
    if len(h) < 65536:
        blob = b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h
    else:
        blob = b"\x93NUMPY\x02\x00" + struct.pack("<I", len(h)) + h
    open(os.path.join(d, "arg0.npy"), "wb").write(blob + data)


npy("npy-huge", "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000000, 100000000000000), }")
npy("npy-digits", "{'descr': '<f4', 'fortran_order': False, 'shape': (12345678901234567890123, 4), }")
npy("npy-descr", "{'descr': '" + "<" * 200000 + "', 'fortran_order': False, 'shape': (64, 256), }")
npy("npy-dims", "{'descr': '<f4', 'fortran_order': False, 'shape': (" + "1, " * 5000 + "), }")
npy("npy-negative", "{'descr': '<f4', 'fortran_order': False, 'shape': (-64, 256), }", b"\0" * 65536)
# NumPy reads the last 'shape' (64, 256); a reader taking the first would
# see another tensor.
npy("npy-repeated", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (64, 256), }", b"\0" * 65536)


def safetensors(case, header_text, data=b""):
    d = os.path.join(out, case)
    os.makedirs(d, exist_ok=True)
    h = header_text.encode()
    open(os.path.join(d, "p.safetensors"), "wb").write(
        struct.pack("<Q", len(h)) + h + data)


safetensors("st-nested", "[" * 100000 + "]" * 100000)
safetensors("st-overlap", json.dumps({
    "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
    "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}), b"\0" * 24)
safetensors("st-gap", json.dumps({
    "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
    "b": {"dtype": "F32", "shape": [2], "data_offsets": [16, 24]}}), b"\0" * 24)

# Sharded checkpoints: a deeply nested index, and offsets near 2^63.
d = os.path.join(out, "index-nested")
os.makedirs(d, exist_ok=True)
open(os.path.join(d, "index.json"), "w").write("[" * 100000 + "]" * 100000)
d = os.path.join(out, "index-offsets")
os.makedirs(d, exist_ok=True)
h = json.dumps({"w": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}).encode()
open(os.path.join(d, "g1-rank0.safetensors"), "wb").write(
    struct.pack("<Q", len(h)) + h + b"\0" * 16)
open(os.path.join(d, "index.json"), "w").write(json.dumps({
    "format": "pc-sharded", "version": 1, "generation": 1, "step": 0,
    "tensors": {"w": {"shape": [4, 4], "pieces": [
        {"file": "g1-rank0.safetensors", "offsets": [9223372036854775806, 0]}]}}}))
