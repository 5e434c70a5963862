#!/usr/bin/env python3
"""Count the SQL statements of the stores (services/*/store, non-test).

A statement is static when the SQL handed to Exec, Query, QueryRow or a
batch's Queue is a string literal or a constant holding one; it is built
otherwise (concatenated, formatted, or passed in a variable chosen at run
time: filters, sort orders, paging). docs/architecture.md quotes the
result in its sqlc decision. Run from the repository root.
"""
import glob
import re



def is_static(arg, consts):
    """Whether the SQL argument at the start of arg is literals and
    constants joined with +, up to the first , or ) outside a literal."""
    i, seen = 0, False
    while True:
        while i < len(arg) and arg[i] in " \t\n":
            i += 1
        if i >= len(arg):
            return False
        c = arg[i]
        if c in "`\"":
            j = i + 1
            while arg[j] != c or (c == '"' and arg[j - 1] == "\\"):
                j += 1
            i, seen = j + 1, True
        elif c.isalpha() or c == "_":
            m = re.match(r"[\w.]+", arg[i:])
            if m.group(0) not in consts or arg[i + m.end():].lstrip().startswith("("):
                return False
            i, seen = i + m.end(), True
        elif c == "+":
            i += 1
        else:
            return seen and c in ",)"


totals = {"static": 0, "built": 0}
for store in sorted(glob.glob("services/*/store")):
    files = [f for f in glob.glob(store + "/**/*.go", recursive=True) if not f.endswith("_test.go")]
    src = {f: open(f, encoding="utf-8").read() for f in files}
    consts = set(re.findall(r"(?m)^\s*(?:const |var )?(\w+)\s*=\s*[`\"]", "\n".join(src.values())))
    static = built = 0
    for s in src.values():
        for m in re.finditer(r"\.(Exec|Query|QueryRow|Queue)\((ctx,\s*)?", s):
            if m.group(1) != "Queue" and not m.group(2):
                continue
            if is_static(s[m.end():], consts):
                static += 1
            else:
                built += 1
    totals["static"] += static
    totals["built"] += built
    print(f"{store}: {static} static, {built} built")
print(f"all stores: {totals['static']} static, {totals['built']} built")
