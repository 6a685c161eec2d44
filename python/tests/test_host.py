"""Host tests of the Python package (no GPU needed): loading the library, errors with the
library's message, argument checks before anything reaches the GPU, database queries, and an
offline install. $KTUNE_LIBRARY names the libktune.so under test, $KTUNE_CLI the ktune command."""
import hashlib
import os
import sqlite3
import subprocess
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ktune  # noqa: E402
from _support import raises, skip  # noqa: E402


class FakeCudaArray:
    """Something with __cuda_array_interface__ (as Numba or cuda-python arrays have)."""

    def __init__(self, shape, typestr="<f4", ptr=0x1000, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "data": (ptr, False),
                                         "strides": strides, "version": 3}


def test_the_library_loads_and_names_its_version():
    assert "." in ktune.library_version()


def test_a_missing_library_is_named():
    code = ("import os, ktune; os.environ['KTUNE_LIBRARY'] = '/nonexistent/libktune.so'\n"
            "try:\n  ktune.library_version()\nexcept ktune.Error as e:\n  print(e)\n")
    env = dict(os.environ, KTUNE_LIBRARY="/nonexistent/libktune.so")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         cwd=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    assert "/nonexistent/libktune.so (no such file)" in out.stdout, out.stdout + out.stderr


def test_without_a_driver_the_error_says_so():
    try:
        rt = ktune.Runtime(use_database=False)
    except ktune.Error as e:
        assert e.code in (2, 3), e.code  # KTUNE_ERROR_NO_DRIVER, KTUNE_ERROR_NO_DEVICE
        assert "libcuda" in str(e) or "device" in str(e), str(e)
        return
    rt.close()
    skip("this machine has a CUDA driver")


def test_arguments_are_checked_before_the_gpu():
    raises(TypeError, ktune.gemm, [1.0], [2.0], contains="not a CUDA array")
    a = FakeCudaArray((4, 3))
    b = FakeCudaArray((5, 2))
    raises(ValueError, ktune.gemm, a, b, contains="inner dimensions differ")
    raises(TypeError, ktune.gemm, FakeCudaArray((4, 3)), FakeCudaArray((3, 2), "<f8"),
           contains="float32, float64, bfloat16 or float16")
    # 16-bit inputs: out of the same type or float32.
    raises(ValueError, ktune.gemm, FakeCudaArray((4, 8), "<f2"), FakeCudaArray((8, 2), "<f2"),
           out=FakeCudaArray((4, 2), "<f8"), contains="out must be f16 or f32")
    raises(TypeError, ktune.gemm, FakeCudaArray((4, 8), "<f2"), FakeCudaArray((8, 2), "<f2"),
           tf32=True, contains="tf32=True takes float32")
    # Batched (3-D) products: tensor-core types only, batch and inner dimensions agreeing.
    raises(TypeError, ktune.gemm, FakeCudaArray((2, 4, 8)), FakeCudaArray((2, 8, 2)),
           contains="batched products take bfloat16 or float16")
    raises(ValueError, ktune.gemm, FakeCudaArray((2, 4, 8), "<f2"), FakeCudaArray((3, 8, 2), "<f2"),
           contains="batch or inner dimensions differ")
    raises(ValueError, ktune.gemm, FakeCudaArray((2, 4, 8), "<f2"), FakeCudaArray((8, 2), "<f2"),
           contains="3 dimensions")
    raises(ValueError, ktune.gemm, FakeCudaArray((4, 3, 2, 1)), FakeCudaArray((3, 2)),
           contains="2 dimensions")
    # Strides that are neither a matrix's nor its transpose's.
    raises(ValueError, ktune.gemm, FakeCudaArray((4, 3), strides=(24, 8)), FakeCudaArray((3, 2)),
           contains="pass .contiguous()")
    raises(ValueError, ktune.gemm, FakeCudaArray((4, 3)), FakeCudaArray((3, 2)), beta=1.0,
           contains="no out")
    raises(TypeError, ktune.histogram, FakeCudaArray((10,), "<c8"), contains="element type")
    raises(TypeError, ktune.launch, "transpose", {"rows": 1.5}, contains="an integer or a string")


def test_tune_on_miss_options_are_checked_before_the_gpu():
    # A runtime that tunes on a miss stores into a database: without one it is refused, as a
    # negative budget is, before a driver is looked for (these hold on a machine with a GPU too).
    raises(ktune.Error, ktune.Runtime, use_database=False, tune_on_miss=True,
           contains="tune_on_miss needs a database")
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "t.db")
        raises(ktune.Error, ktune.Runtime, database=db, tune_on_miss=True, tune_max_seconds=-1.0,
               contains="max_seconds must be a finite number > 0")
        assert not os.path.exists(db)  # refused before anything was made
    raises(ValueError, ktune.Runtime, tune_on_miss=True, tune_max_evals=-1,
           contains="tune_max_evals")
    raises(ktune.Error, ktune.Runtime, use_database=False, tune_in_background=True,
           contains="tune_in_background takes tune_on_miss")
    # rt= is a ktune.Runtime of the arrays' device.
    raises(TypeError, ktune.copy, FakeCudaArray((4,)), FakeCudaArray((4,), ptr=0x2000), rt="x",
           contains="rt must be a ktune.Runtime")


def test_query_reads_a_database_and_changes_nothing():
    cli = os.environ.get("KTUNE_CLI")
    if not cli:
        skip("set KTUNE_CLI to the ktune command")
    with tempfile.TemporaryDirectory() as d:
        db = os.path.join(d, "t.db")
        # A new database with the shipped results (imported once more, which creates it).
        presets = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "db",
                               "presets", "nvidia-h200.json")
        subprocess.run([cli, "db", "import", "--db", db, presets], check=True, capture_output=True)
        before = hashlib.sha256(open(db, "rb").read()).hexdigest()
        rows = ktune.query(db=db)
        assert rows and {"family", "problem", "config", "metric"} <= rows[0].keys()
        gemm = ktune.query(family="gemm", db=db)
        assert gemm and all(r["family"] == "gemm" for r in gemm)
        assert ktune.query(family="no_such_family", db=db) == []
        assert hashlib.sha256(open(db, "rb").read()).hexdigest() == before
        other = os.path.join(d, "other.db")
        con = sqlite3.connect(other)
        con.execute("CREATE TABLE notes(x)")
        con.commit()
        con.close()
        raises(ktune.Error, ktune.query, db=other, contains="not a ktune database")
        raises(ktune.Error, ktune.query, db=os.path.join(d, "absent.db"), contains="no such")


def test_the_package_builds_and_installs_offline():
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", d, here],
                               env=env, capture_output=True, text=True)
        if build.returncode != 0 and "No module named pip" in build.stderr:
            skip("no pip for this Python")
        assert build.returncode == 0, build.stdout + build.stderr
        wheels = [f for f in os.listdir(d) if f.endswith(".whl")]
        assert len(wheels) == 1, wheels
        names = zipfile.ZipFile(os.path.join(d, wheels[0])).namelist()
        assert "ktune/__init__.py" in names and any(n.endswith("RECORD") for n in names)
        if os.environ.get("KTUNE_LIBRARY"):
            assert "ktune/libktune.so" in names  # carried when KTUNE_LIBRARY is set at build time
        target = os.path.join(d, "site")
        subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", target,
                        os.path.join(d, wheels[0])], env=env, check=True, capture_output=True)
        # The installed copy finds the library it carries, without KTUNE_LIBRARY.
        env2 = {k: v for k, v in os.environ.items() if k != "KTUNE_LIBRARY"}
        env2["PYTHONPATH"] = target
        out = subprocess.run([sys.executable, "-c", "import ktune; print(ktune.library_version())"],
                             env=env2, capture_output=True, text=True, cwd=d)
        if os.environ.get("KTUNE_LIBRARY"):
            assert out.returncode == 0 and "." in out.stdout, out.stdout + out.stderr


if __name__ == "__main__":
    from _support import run
    sys.exit(run("test_host"))
