"""Writes the fuzz targets' seed corpus (test/fuzz/corpus/<target>/).

Run from the repository root with the build's pc-run on PATH (or
PC_RUN=path) and NumPy; the output is committed, so this runs only when
the formats change:  python3 test/fuzz/make_seeds.py
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

root = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(root))
corpus = os.path.join(root, "corpus")
pc_run = os.environ.get("PC_RUN", "pc-run")


def put(target, name, blob):
    d = os.path.join(corpus, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(blob if isinstance(blob, bytes) else blob.encode())


def npy(array, version=1, fortran=False):
    header = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        array.dtype.str, fortran, str(array.shape))
    h = header.encode() + b"\n"
    if version == 1:
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h + array.tobytes()
    return b"\x93NUMPY\x02\x00" + struct.pack("<I", len(h)) + h + array.tobytes()


put("npy", "f32-2x3", npy(np.arange(6, dtype=np.float32).reshape(2, 3)))
put("npy", "i64-5", npy(np.arange(5, dtype=np.int64)))
put("npy", "i32-scalar", npy(np.array(7, dtype=np.int32)))
put("npy", "f16-empty", npy(np.zeros((0, 4), dtype=np.float16)))
put("npy", "f64-v2", npy(np.ones((3,), dtype=np.float64), version=2))
put("npy", "fortran", npy(np.ones((2, 2), dtype=np.float32), fortran=True))
put("npy", "short-data", npy(np.ones((4, 4), dtype=np.float32))[:-7])


def safetensors(header, data=b""):
    h = json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + data


put("safetensors", "two", safetensors({
    "__metadata__": {"step": "3"},
    "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
    "b": {"dtype": "I64", "shape": [1], "data_offsets": [16, 24]}},
    b"\1" * 24))
put("safetensors", "bf16-f16", safetensors({
    "h": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
    "g": {"dtype": "BF16", "shape": [2], "data_offsets": [4, 8]}}, b"\0" * 8))
put("safetensors", "overlap", safetensors({
    "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
    "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}}, b"\0" * 24))
put("safetensors", "nested", safetensors([[[[[[[[[[1]]]]]]]]]]))

# A real sharded save of the two-layer MLP on a 2x2 mesh: its index seeds
# the index target, whose shard files are test/fuzz/shards; its logical
# parameters seed the safetensors target; its model seeds the IR target.
with tempfile.TemporaryDirectory() as t:
    gen = os.path.join(repo, "test/tools/Inputs/train_mlp.py")
    subprocess.check_call([sys.executable, gen, "init", t])
    subprocess.check_call([sys.executable, gen, "gen", "2x2", t + "/model.mlir"])
    subprocess.check_call([pc_run, t + "/model.mlir", "--devices", "cpu:4",
                           "--train", "--steps", "1", "--lr", "0.01",
                           "--params", t + "/init.safetensors", "--inputs", t,
                           "--save", t + "/ck", "--save-format", "sharded"],
                          stdout=subprocess.DEVNULL)
    shards = os.path.join(root, "shards")
    shutil.rmtree(shards, ignore_errors=True)
    os.makedirs(shards)
    for f in os.listdir(t + "/ck"):
        if f.endswith(".safetensors"):
            shutil.copy(os.path.join(t, "ck", f), shards)
    index = open(t + "/ck/index.json").read()
    put("index", "mlp-2x2", index)
    put("index", "mlp-2x2-compact", json.dumps(json.loads(index)))
    put("safetensors", "mlp-init", open(t + "/init.safetensors", "rb").read())
    put("ir", "mlp-2x2.mlir", open(t + "/model.mlir").read())

for name in ["examples/gpt_block_2x2.mlir", "examples/mlp_2x2.mlir",
             "test/tools/Inputs/stages.mlir", "test/tools/Inputs/desync.mlir",
             "test/passes/pc-distribute.mlir"]:
    put("ir", os.path.basename(name), open(os.path.join(repo, name)).read())
