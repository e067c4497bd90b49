# lit configuration for pc's IR tests: pc-opt runs, FileCheck and
# --verify-diagnostics.
import os

import lit.formats

config.name = "pc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".test"]
config.excludes = ["unit", "Inputs", "corpus", "shards", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "main.cpp"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pc_obj_root, "test")

config.environment["PATH"] = os.pathsep.join(
    [config.pc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")]
)
config.substitutions.append(("%pc_src_root", config.pc_src_root))
config.substitutions.append(("%pc_obj_root", config.pc_obj_root))
config.substitutions.append(("%mlir_tblgen", config.mlir_tblgen))
config.substitutions.append(("%mlir_include", config.mlir_include_dir))
# The Debian python3, which has python3-numpy; not a python from PATH.
config.substitutions.append(("%python", "/usr/bin/python3"))
if config.pc_have_cuda:
    config.available_features.add("cuda")
# A GPU this machine can use (the GPU check's machines; not CI's).
import shutil
import subprocess
if shutil.which("nvidia-smi"):
    try:
        listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True,
                                text=True, timeout=20).stdout
        if "GPU " in listed:
            config.available_features.add("gpu")
    except (OSError, subprocess.SubprocessError):
        pass
# A sanitizer build (scripts/sanitize.sh): its libraries need the
# sanitizer's runtime, which an outside project does not link.
if config.pc_sanitize:
    config.available_features.add("sanitized")
# Many processes on localhost (Open MPI refuses root without the flag, and
# CI machines have fewer cores than ranks).
mpirun = "mpirun --allow-run-as-root --oversubscribe --mca btl self,vader"
if config.pc_sanitize:
    # Open MPI unloads its components at MPI_Finalize, so LeakSanitizer
    # cannot name what they keep: processes under mpirun run without leak
    # detection (ASan's other checks stay on).
    asan = os.environ.get("ASAN_OPTIONS", "")
    mpirun += " -x ASAN_OPTIONS=" + (asan + ":" if asan else "") + "detect_leaks=0"
config.substitutions.append(("%mpirun", mpirun))
