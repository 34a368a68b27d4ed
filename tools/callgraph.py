#!/usr/bin/env python3
"""Which object file uses which other's symbols (functions and data), from `nm`, and any cycle.

callgraph.py [--check] [--symbols] FILE.o|DIR...   One line per edge "a -> b", then one line
per cycle (a strongly connected set of two or more files). A DIR stands for the *.o in it (a
meson target's private directory). --symbols lists the symbols of each edge. --check: exit 1
when there is a cycle. Names are the object files' with ".c.o"/".o" dropped.
"""
import glob
import os
import subprocess
import sys


def name_of(path):
    base = os.path.basename(path)
    for suffix in (".c.o", ".o"):
        if base.endswith(suffix):
            return base[: -len(suffix)]
    return base


def read_symbols(path):
    out = subprocess.run(["nm", "--defined-only", "-g", path], check=True,
                         capture_output=True, text=True).stdout
    defined = {line.split()[-1] for line in out.splitlines() if len(line.split()) >= 2}
    out = subprocess.run(["nm", "--undefined-only", "-g", path], check=True,
                         capture_output=True, text=True).stdout
    used = {line.split()[-1] for line in out.splitlines() if line.split()}
    return defined, used


def cycles(nodes, edges):
    """Tarjan's strongly connected components with more than one member (or a self edge)."""
    index, low, stack, on, result, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, {})):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                result.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return result


def main(argv):
    check = "--check" in argv
    show = "--symbols" in argv
    files = []
    for a in argv:
        if a.startswith("--"):
            continue
        files += sorted(glob.glob(os.path.join(a, "*.o"))) if os.path.isdir(a) else [a]
    if not files:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    owner, uses = {}, {}
    for f in files:
        defined, used = read_symbols(f)
        n = name_of(f)
        uses[n] = used
        for s in defined:
            owner[s] = n
    edges = {}
    for n, used in uses.items():
        for s in used:
            o = owner.get(s)
            if o and o != n:
                edges.setdefault(n, {}).setdefault(o, []).append(s)
    for a in sorted(edges):
        for b in sorted(edges[a]):
            line = f"{a} -> {b}"
            if show:
                line += ": " + " ".join(sorted(edges[a][b]))
            print(line)
    found = cycles(uses.keys(), edges)
    for comp in found:
        print("cycle: " + " ".join(comp))
    if not found:
        print("no cycle")
    return 1 if check and found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
