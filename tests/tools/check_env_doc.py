#!/usr/bin/env python3
"""check_env_doc.py [SRCDIR] - docs/env.md lists exactly the environment variables the
code reads.

Collects the variables read by the library (src/), the Python package (python/hccl),
the tools (tools/), the benchmarks (bench/), the examples and the scripts that
docs/env.md covers, and the variables documented in docs/env.md (the backquoted names
in the first column of its tables). Fails naming each variable the code reads that the
document does not list, and each documented variable that no code reads (or, for the
launcher interface, that hcclrun does not set), and each variable whose default the
document gives as a number or a backquoted word while the code reads it with a
different literal default (HCCL_PARAM_*(name, "X", default, ...),
hccl_param_read_*("X", default, ...), a script's ${X:-default}; a negative default means "unset" and a default
the script cannot evaluate is not compared). Standard library only; well under a
second.

What counts as a read:
  C       getenv("X"), secure_getenv("X"), HCCL_PARAM_*(name, "X", ...),
          hccl_param_read_*("X", ...), the launcher readers env(fn, "X") / env_set("X"),
          and, in the files that read names from tables (INDIRECT_FILES), the names in
          their static const tables and *_var assignments
  Python  os.environ.get("X"), os.getenv("X"), os.environ["X"] (not as an assignment
          target), "X" in os.environ, and in INDIRECT_FILES the *_VARS tuples
  shell   ${X:-...}, ${X-...}, ${X:=...}, ${X:?...} with X in capitals (scripts' inputs)
A C file that calls getenv with a computed name must be listed in INDIRECT_FILES or
GETENV_WRAPPERS, so that a new way of reading the environment gets a decision here.
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
DOC = "docs/env.md"

# Where the code that docs/env.md describes lives (tests/ is not covered: the variables
# tests read, such as HCCLRUN, are the test harness's, not the product's).
C_DIRS = ["src", "tools", "bench", "python/hccl", "examples"]
PY_DIRS = ["python/hccl", "tools", "bench", "examples"]
SH_FILES = ["scripts/demo.sh", "scripts/sanitize.sh", "scripts/deps.sh", "tests/fuzz/run.sh"]
SH_DIRS = ["bench"]

# getenv with a computed name, whose callers pass the names as literals (matched above).
GETENV_WRAPPERS = {"src/util/param.c"}
# Files that read names out of tables (the launchers' rank/size/local-rank variables,
# the job ids, the spin and local-size variables).
INDIRECT_FILES = {"src/boot/launch_env.c", "tools/perf/common.c", "python/hccl/_api.py"}

# Read by the code but deliberately not in docs/env.md: the system's own variables.
READ_NOT_DOCUMENTED = {
    "PATH": "hcclrun looks the program up in PATH, as execvp does",
    "PYTHONPATH": "bench/train/train_bench.py passes the build's python/ on to its ranks",
}
# In docs/env.md although no code reads them (none today).
DOCUMENTED_NOT_READ = {}

NAME = r"[A-Z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)*"  # OMPI_MCA_ess_base_jobid too
NAME_RE = re.compile(r"^" + NAME + r"$")

C_READ = [
    re.compile(r"\b(?:secure_)?getenv\s*\(\s*\"(" + NAME + r")\""),
    re.compile(r"\bHCCL_PARAM_\w+\s*\(\s*\w+\s*,\s*\"(" + NAME + r")\""),
    re.compile(r"\bhccl_param_read_\w+\s*\(\s*\"(" + NAME + r")\""),
    re.compile(r"\b(?:env|env_set|get_uint)\s*\(\s*(?:fn\s*,\s*)?(?:\w+\s*=\s*)?\"(" + NAME + r")\""),
]
C_SET = re.compile(r"\bsetenv\s*\(\s*\"(" + NAME + r")\"")
C_COMPUTED_GETENV = re.compile(r"\b(?:secure_)?getenv\s*\(\s*[^\s\"]")
C_TABLE = re.compile(r"\bstatic\s+const\b[^;={]*=\s*\{(.*?)\};", re.S)
C_VAR_ASSIGN = re.compile(r"\b\w*_var\s*=\s*\"(" + NAME + r")\"")
C_STRING = re.compile(r"\"(" + NAME + r")\"")

PY_READ = [
    re.compile(r"\bos\.environ\.get\s*\(\s*[\"'](" + NAME + r")[\"']"),
    re.compile(r"\bos\.getenv\s*\(\s*[\"'](" + NAME + r")[\"']"),
    re.compile(r"\bos\.environ\s*\[\s*[\"'](" + NAME + r")[\"']\s*\](?!\s*=[^=])"),
    re.compile(r"[\"'](" + NAME + r")[\"']\s+(?:not\s+)?in\s+os\.environ\b"),
]
PY_TABLE = re.compile(r"^\w*_VARS\s*=\s*\(([^)]*)\)", re.M)
PY_STRING = re.compile(r"[\"'](" + NAME + r")[\"']")

# Literal defaults of the parameter readers (src/util/param.h).
C_DEFAULT = [
    re.compile(r"\bHCCL_PARAM_\w+\s*\(\s*\w+\s*,\s*\"(" + NAME + r")\"\s*,\s*([^,()]+?)\s*[,)]"),
    re.compile(r"\bhccl_param_read_\w+\s*\(\s*\"(" + NAME + r")\"\s*,\s*([^,()]+?)\s*[,)]"),
]
C_DEFINE = re.compile(r"^\s*#\s*define\s+(\w+)\s+([^\n/]+?)\s*(?:/[*/].*)?$", re.M)
INT_EXPR = re.compile(r"^(0[xX][0-9a-fA-F]+|\d+)[uUlL]*(?:\s*<<\s*(\d+)[uUlL]*)?$")

SH_DEFAULT = re.compile(r"\$\{(" + NAME + r"):?-([A-Za-z0-9_.]+)\}")
SH_READ = re.compile(r"\$\{(" + NAME + r"):?[-=?]")

C_TOKENS = re.compile(r"\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|/\*.*?\*/|//[^\n]*", re.S)
PY_TOKENS = re.compile(r"\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'|#[^\n]*")
SH_TOKENS = re.compile(r"'[^']*'|#[^\n]*")


def strip_comments(text, tokens, comment_starts):
    """Blank out comments (keeping strings, which may contain comment markers)."""
    def repl(m):
        s = m.group(0)
        if s.startswith(comment_starts):
            return re.sub(r"[^\n]", " ", s)
        return s
    return tokens.sub(repl, text)


def walk(dirs, exts):
    for d in dirs:
        top = os.path.join(ROOT, d)
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = sorted(x for x in dirnames if x != "__pycache__")
            for f in sorted(filenames):
                if f.endswith(exts):
                    yield os.path.relpath(os.path.join(dirpath, f), ROOT)


def read(rel):
    with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
        return f.read()


def code_names(problems):
    reads, sets = {}, {}

    def add(table, name, where):
        table.setdefault(name, where)

    for rel in walk(C_DIRS, (".c", ".h", ".cc")):
        text = strip_comments(read(rel), C_TOKENS, ("/*", "//"))
        for rx in C_READ:
            for m in rx.finditer(text):
                add(reads, m.group(1), rel)
        if rel.startswith("tools/"):
            for m in C_SET.finditer(text):
                add(sets, m.group(1), rel)
        if rel in INDIRECT_FILES:
            for t in C_TABLE.finditer(text):
                for m in C_STRING.finditer(t.group(1)):
                    add(reads, m.group(1), rel)
            for m in C_VAR_ASSIGN.finditer(text):
                add(reads, m.group(1), rel)
        elif rel not in GETENV_WRAPPERS and C_COMPUTED_GETENV.search(text):
            problems.append("%s calls getenv with a computed name: add it to INDIRECT_FILES or "
                            "GETENV_WRAPPERS in %s" % (rel, os.path.relpath(__file__, ROOT)))

    for rel in walk(PY_DIRS, (".py",)):
        text = strip_comments(read(rel), PY_TOKENS, ("#",))
        for rx in PY_READ:
            for m in rx.finditer(text):
                add(reads, m.group(1), rel)
        if rel in INDIRECT_FILES:
            for t in PY_TABLE.finditer(text):
                for m in PY_STRING.finditer(t.group(1)):
                    add(reads, m.group(1), rel)

    sh = [f for f in SH_FILES if os.path.exists(os.path.join(ROOT, f))]
    for rel in sh + list(walk(SH_DIRS, (".sh",))):
        text = strip_comments(read(rel), SH_TOKENS, ("#",))
        for m in SH_READ.finditer(text):
            add(reads, m.group(1), rel)
    return reads, sets


def c_value(expr, defines, depth=0):
    """A C default as an int or a str; None when it is not a literal this script reads."""
    expr = expr.strip()
    if expr.startswith("(") and expr.endswith(")"):
        expr = expr[1:-1].strip()
    m = re.match(r'^"((?:[^"\\]|\\.)*)"$', expr)
    if m:
        return m.group(1)
    neg = expr.startswith("-")
    m = INT_EXPR.match(expr.lstrip("-").strip())
    if m:
        v = int(m.group(1), 0) << int(m.group(2) or 0)
        return -v if neg else v
    if expr in defines and depth < 4:
        return c_value(defines[expr], defines, depth + 1)
    return None


def code_defaults():
    """name -> {default values the code reads it with} (literals only)."""
    defines, texts = {}, []
    for rel in walk(C_DIRS + ["include"], (".c", ".h")):
        text = strip_comments(read(rel), C_TOKENS, ("/*", "//"))
        texts.append(text)
        for m in C_DEFINE.finditer(text):
            defines.setdefault(m.group(1), m.group(2))
    out = {}
    for text in texts:
        for rx in C_DEFAULT:
            for m in rx.finditer(text):
                v = c_value(m.group(2), defines)
                if v is not None:
                    out.setdefault(m.group(1), set()).add(v)
    sh = [f for f in SH_FILES if os.path.exists(os.path.join(ROOT, f))] + list(walk(SH_DIRS, (".sh",)))
    for rel in sh:
        for m in SH_DEFAULT.finditer(strip_comments(read(rel), SH_TOKENS, ("#",))):
            v = m.group(2)
            out.setdefault(m.group(1), set()).add(int(v) if v.isdigit() else v)
    return out


def documented_defaults():
    """name -> (default as int or str, line) from the tables with a "default" column,
    where that cell is a number or one backquoted word (else not compared)."""
    out, col = {}, None
    for lineno, line in enumerate(read(DOC).splitlines(), 1):
        if not line.startswith("|"):
            col = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells and cells[0] == "variable":
            col = cells.index("default") if "default" in cells else None
            continue
        if col is None or col >= len(cells):
            continue
        cell = cells[col]
        m = re.match(r"^`([^`]*)`$", cell)
        if re.match(r"^-?(?:0[xX][0-9a-fA-F]+|\d+)$", cell):
            value = int(cell, 0)
        elif m:
            value = m.group(1)
        else:
            continue
        for n in re.finditer(r"`([^`]*)`", cells[0]):
            if NAME_RE.match(n.group(1)):
                out.setdefault(n.group(1), (value, lineno))
    return out


def documented_names():
    names = {}
    for lineno, line in enumerate(read(DOC).splitlines(), 1):
        if not line.startswith("|"):
            continue
        first = line.split("|")[1]
        for m in re.finditer(r"`([^`]*)`", first):
            if NAME_RE.match(m.group(1)):
                names.setdefault(m.group(1), lineno)
    return names


def main():
    problems = []
    reads, sets = code_names(problems)
    docs = documented_names()
    if not docs:
        problems.append("%s: no variables found in its tables" % DOC)
    for name in sorted(set(reads) | set(sets)):
        if name in docs or name in READ_NOT_DOCUMENTED:
            continue
        where = reads.get(name) or sets.get(name)
        how = "reads" if name in reads else "sets"
        problems.append("undocumented: %s (%s %s it) is not in %s" % (name, where, how, DOC))
    for name in sorted(docs):
        if name in reads or name in sets or name in DOCUMENTED_NOT_READ:
            continue
        problems.append("stale: %s (%s:%d) is read by no code" % (name, DOC, docs[name]))
    defaults = code_defaults()
    for name, (doc_value, lineno) in sorted(documented_defaults().items()):
        code = {v for v in defaults.get(name, ()) if not (isinstance(v, int) and v < 0)}
        if code and doc_value not in code:
            problems.append("default: %s is %s in %s:%d, but the code's default is %s"
                            % (name, doc_value, DOC, lineno, " or ".join(sorted(map(str, code)))))
    for name in sorted(READ_NOT_DOCUMENTED):
        if name not in reads:
            problems.append("allow-list: %s in READ_NOT_DOCUMENTED is no longer read; remove it" % name)
    for name in sorted(DOCUMENTED_NOT_READ):
        if name in reads or name in sets:
            problems.append("allow-list: %s in DOCUMENTED_NOT_READ is read now; remove it" % name)
    for p in problems:
        print("FAIL " + p)
    if problems:
        print("%d problem(s): keep %s true to the code" % (len(problems), DOC))
        return 1
    print("ok   %s lists the %d variables the code reads" % (DOC, len(docs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
