#!/usr/bin/env python3
"""Docs stand alone: every repository path cited in Markdown files (README.md, docs/*.md) and in the comments of
source, config and build files exists, and nothing cites notes that are not in the repository.

Usage: check_repository_paths.py <source root>. Prints one line per problem (file:line: ...) and exits 1 if any.

A cited path is a token that starts with one of the repository's top-level folders and ends in a file extension
(`configs/hw/dgx-a100.yaml`, `sim/engine.cc`, `docs/subst.md`); a glob (`configs/hw/*.yaml`) must match at least
one file. Tokens glued to something before them (`owner/repo:docs/x.md`, `/abs/sim/x.cc`, `src/sim/x.cc`) name
other repositories or absolute locations and are not checked.
"""
import fnmatch
import os
import re
import sys

TOP_LEVEL = ("cmake", "configs", "docs", "experiments", "hw", "models", "search", "sim", "tests", "util",
             "validate")
EXTENSIONS = ("cc", "h", "md", "py", "yaml", "yml", "txt", "cmake", "json", "csv", "onnx")
SCANNED = (".cc", ".h", ".md", ".py", ".yaml", ".yml", ".cmake")
# Not in the repository: notes a session kept beside it. Built by concatenation so this file does not cite them.
FORBIDDEN = re.compile("|".join(re.escape(s) for s in ("../" + "shared", "docs/" + "reference", "shared/" +
                                                      "reference", "/work/" + "shared")))
PATH = re.compile(r"(?<![\w./:@-])((?:%s)/[\w./*-]*\.(?:%s))(?![\w/])" % ("|".join(TOP_LEVEL),
                                                                         "|".join(EXTENSIONS)))
# A bare Markdown file name (such as README.md) must be one of the repository's Markdown files or one strata writes.
OUTPUT_NAMES = {"summary.md"}  # experiment reports (experiments/experiment.cc)
MARKDOWN_NAME = re.compile(r"(?<![\w./:@-])([\w-]+\.md)(?![\w/])")
SKIP_DIRS = {".git"}


def scanned_files(root):
    for folder, dirs, files in os.walk(root):
        rel = os.path.relpath(folder, root)
        dirs[:] = sorted(d for d in dirs
                         if os.path.normpath(os.path.join(rel, d)) not in SKIP_DIRS and not d.startswith(".")
                         and not os.path.exists(os.path.join(folder, d, "CMakeCache.txt")))
        for f in sorted(files):
            if f.endswith(SCANNED) or f == "CMakeLists.txt":
                yield os.path.normpath(os.path.join(rel, f))


STRING = re.compile(r'"(?:\\.|[^"\\])*"')


def cited_text(rel, line):
    """The part of `line` that documents: all of it in Markdown, the comment elsewhere."""
    if rel.endswith(".md"):
        return line
    if rel.endswith((".cc", ".h")):
        code = STRING.sub('""', line)
        return code[code.find("//"):] if "//" in code else ""
    code = STRING.sub('""', line)
    return code[code.find("#"):] if "#" in code else ""


def exists(root, path):
    path = path.rstrip(".")
    if any(c in path for c in "*?["):
        folder, pattern = os.path.split(path)
        full = os.path.join(root, folder)
        return os.path.isdir(full) and any(fnmatch.fnmatch(f, pattern) for f in os.listdir(full))
    return os.path.exists(os.path.join(root, path))


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    problems = []
    files = list(scanned_files(root))
    markdown_names = {os.path.basename(f) for f in files if f.endswith(".md")}
    for rel in files:
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                line = cited_text(rel, line)
                if FORBIDDEN.search(line):
                    problems.append(f"{rel}:{number}: cites notes outside the repository "
                                    f"(cite the public source instead): {line.strip()}")
                for m in MARKDOWN_NAME.finditer(line):
                    if m.group(1) not in markdown_names | OUTPUT_NAMES:
                        problems.append(f"{rel}:{number}: '{m.group(1)}' is not a Markdown file of the repository")
                for m in PATH.finditer(line):
                    if not exists(root, m.group(1)):
                        problems.append(f"{rel}:{number}: '{m.group(1)}' does not exist in the repository")
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s)" if problems else "all cited repository paths exist")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
