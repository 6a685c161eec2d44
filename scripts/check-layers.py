#!/usr/bin/env python3
"""Checks that ktune's includes point one way: down the floors of the library, never in a circle.

Floors, lowest first (a file may include files of its own floor or of a lower one):
  include/ktune (the public API: includes only itself), core, platform, families, db, runtime,
  tuner, bench, cli.
And no cycle between modules: a module is a file without its extension (foo.hpp, foo.cpp and
foo.inc are one module; a .cuh template is its own), an edge is an #include "..." between two.
tests/, fuzz/ and examples/ sit above everything and are not checked.

Usage: scripts/check-layers.py [ROOT]   exit 0: clean; 1: violations (each named); 2: bad use.
       scripts/check-layers.py --self-test   plants a cycle and a wrong-way include in a temporary
                                             tree and fails unless both are reported.
"""
import os
import re
import sys
import tempfile

FLOORS = ["include/ktune", "core", "platform", "families", "db", "runtime", "tuner", "bench", "cli"]
EXTENSIONS = (".hpp", ".cpp", ".h", ".cuh", ".cu", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)


def floor_of(path):
    for i, floor in enumerate(FLOORS):
        if path == floor or path.startswith(floor + "/"):
            return i
    return None


def module_of(path):
    stem, ext = os.path.splitext(path)
    return path if ext in (".cuh", ".cu") else stem


def collect(root):
    files = []
    for floor in FLOORS:
        top = os.path.join(root, floor)
        for folder, _, names in os.walk(top):
            for name in names:
                if name.endswith(EXTENSIONS):
                    files.append(os.path.relpath(os.path.join(folder, name), root))
    return sorted(files)


def resolve(root, includer, target, by_name):
    """The repository path an include names, or None for one outside the checked floors."""
    candidates = [os.path.normpath(os.path.join(os.path.dirname(includer), target)), target,
                  os.path.join("include", target)]
    for c in candidates:
        if os.path.isfile(os.path.join(root, c)) and floor_of(c) is not None:
            return c
    # Templates include each other by bare name (NVRTC sees them embedded, by file name).
    matches = by_name.get(os.path.basename(target), [])
    return matches[0] if len(matches) == 1 and "/" not in target else None


def check(root):
    files = collect(root)
    by_name = {}
    for f in files:
        by_name.setdefault(os.path.basename(f), []).append(f)
    problems = []
    graph = {}
    for f in files:
        with open(os.path.join(root, f), encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        src = module_of(f)
        graph.setdefault(src, set())
        for target in INCLUDE.findall(text):
            dep = resolve(root, f, target, by_name)
            if dep is None:
                continue
            if floor_of(dep) > floor_of(f):
                problems.append(f"{f} includes {dep}: {FLOORS[floor_of(f)]}/ is below "
                                f"{FLOORS[floor_of(dep)]}/ (includes point down the floors)")
            if module_of(dep) != src:
                graph[src].add(module_of(dep))
    for cycle in cycles(graph):
        problems.append("include cycle: " + " -> ".join(cycle + [cycle[0]]))
    return files, problems


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan), each as a path."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        # Iterative, so that a long chain cannot exhaust Python's recursion limit.
        work = [(v, iter(sorted(graph.get(v, ()))))]
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        while work:
            node, children = work[-1]
            advanced = False
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    advanced = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def self_test():
    with tempfile.TemporaryDirectory() as root:
        def write(path, text):
            os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
            with open(os.path.join(root, path), "w") as handle:
                handle.write(text)
        write("platform/a.hpp", '#include "platform/b.hpp"\n')
        write("platform/b.hpp", "\n")
        write("platform/b.cpp", '#include "platform/b.hpp"\n#include "platform/a.hpp"\n')
        write("platform/c.hpp", '#include "db/d.hpp"\n')
        write("db/d.hpp", '#include "platform/b.hpp"\n')
        write("families/x.cuh", '#include "common.cuh"\n')
        write("families/common.cuh", "\n")
        _, problems = check(root)
        want = ["include cycle: platform/a -> platform/b -> platform/a",
                "platform/c.hpp includes db/d.hpp"]
        missing = [w for w in want if not any(p.startswith(w) for p in problems)]
        if missing or len(problems) != 2:
            print("check-layers self-test FAILED: expected", want, "got", problems)
            return 1
        print("check-layers self-test: the planted cycle and wrong-way include are both reported")
        return 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) > 2 or (len(argv) == 2 and argv[1].startswith("-")):
        print("usage: check-layers.py [ROOT] | --self-test", file=sys.stderr)
        return 2
    root = argv[1] if len(argv) == 2 else os.path.join(os.path.dirname(__file__), "..")
    files, problems = check(root)
    if not files:
        print(f"check-layers: no sources under {root}", file=sys.stderr)
        return 2
    for p in problems:
        print("check-layers: " + p)
    if problems:
        return 1
    print(f"check-layers: {len(files)} files, includes point down "
          f"{' < '.join(f + '/' for f in FLOORS)}; no cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
