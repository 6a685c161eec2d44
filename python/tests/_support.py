"""Shared by the Python tests: skipping (with or without pytest) and a tiny runner for machines
without pytest (python tests/_support.py test_gpu)."""
import importlib
import os
import sys
import traceback


class Skipped(Exception):
    pass


def skip(reason):
    if "PYTEST_CURRENT_TEST" in os.environ:  # under pytest: its own skip
        import pytest
        pytest.skip(reason)
    raise Skipped(reason)


def raises(kind, fn, *args, contains="", **kwargs):
    try:
        fn(*args, **kwargs)
    except kind as e:
        assert contains in str(e), f"{kind.__name__} without '{contains}': {e}"
        return e
    raise AssertionError(f"{kind.__name__} not raised")


def run(module_name):
    module = importlib.import_module(module_name)
    passed = failed = skipped = 0
    for name in sorted(n for n in dir(module) if n.startswith("test_")):
        try:
            getattr(module, name)()
            passed += 1
            print(f"PASS {name}")
        except Skipped as e:
            skipped += 1
            print(f"SKIP {name}: {e}")
        except Exception:
            failed += 1
            print(f"FAIL {name}")
            traceback.print_exc()
    print(f"{module_name}: {passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    import _support  # the tests import this module by name: its Skipped is the one they raise

    sys.exit(max(_support.run(m) for m in sys.argv[1:]))
