#!/usr/bin/env python3
"""Lists the C++ functions (and lambdas) whose bodies are longer than a limit, longest first.

The brief keeps functions under ~80 lines; this is how to find the ones that are not:
    scripts/long-functions.py              # sim exec gui bench, over 80 lines
    scripts/long-functions.py --limit 60 sim/schedule

A heuristic, not a parser: a body is a brace that opens after a parenthesised signature (not
after if / for / while / switch / catch, a class, a namespace or an initializer), counted to its
matching brace, with comments and string literals blanked first. Good enough to rank, and to
compare before and after a change.
"""
import argparse
import os
import re
import sys

CONTROL = re.compile(r"^\s*(?:\}\s*)?(?:else\s+)?(?:if|for|while|switch|catch|do|else)\b")
TYPE = re.compile(r"\b(?:class|struct|namespace|enum|union)\b[^()]*$")


def blank(text):
    """Comments and literals become spaces (newlines kept), so braces and parentheses in them
    do not count."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(" " * (j + 1 - i))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = blank(f.read())
    stack = []  # (is_function, name, first line)
    head = []   # text since the last ; { or }
    line = 1
    found = []
    for c in text:
        if c == "\n":
            line += 1
        if c == "{":
            h = "".join(head).strip()
            is_fn = (")" in h and not CONTROL.match(h) and not TYPE.search(h) and not h.endswith("=")
                     and not re.search(r"\)\s*(?:=|\?|,)\s*$", h))
            name = re.sub(r"\s+", " ", h.split("(")[0].split()[-1] if h.split("(")[0].split() else "lambda")
            if "[" in h.split("(")[0]:
                name = "lambda " + h.split("=")[0].split()[-1] if "=" in h else "lambda"
            stack.append((is_fn, name, line))
            head = []
        elif c == "}":
            if stack:
                is_fn, name, start = stack.pop()
                if is_fn:
                    found.append((line - start + 1, name, start))
            head = []
        elif c == ";":
            head = []
        else:
            head.append(c)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", default=["sim", "exec", "gui", "bench"])
    ap.add_argument("--limit", type=int, default=80, help="list bodies longer than this many lines (80)")
    args = ap.parse_args()
    rows = []
    for root in args.paths:
        files = [root] if os.path.isfile(root) else [
            os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith((".cpp", ".h"))]
        for path in sorted(files):
            for length, name, start in functions(path):
                if length > args.limit:
                    rows.append((length, f"{path}:{start}", name))
    for length, where, name in sorted(rows, reverse=True):
        print(f"{length:5d}  {where}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
