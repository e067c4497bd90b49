# lit configuration that runs every GoogleTest case of test/unit as one lit
# test, so that unit and IR tests share one summary.
import lit.formats

config.name = "pc-unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = config.pc_unit_dir
config.test_exec_root = config.pc_unit_dir
