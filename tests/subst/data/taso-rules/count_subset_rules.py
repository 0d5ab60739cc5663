#!/usr/bin/env python3
"""Independent count for tests/subst/generator_test.cc (GeneratorCoverage.*): how many rules of TASO's 820-rule
set, minus TASO's blacklist (verify.py), use only the operators of a subset. Reads the equation file with plain
regular expressions, not with strata's parser: an operator is an identifier followed by '(' or one of the bare
constants Imatmul / Iewmul. Prints one count per subset: 257 (matrix operators) and 80 (convolutions)."""
import os
import re

BLACKLIST = {202, 209, 254, 255, 260, 307, 308, 518, 536, 560, 580, 581, 620, 621, 622, 623, 624, 625, 681, 682,
             688, 689, 695, 696, 697}
SUBSETS = [
    {"ewadd", "ewmul", "matmul", "transpose", "concat", "split_0", "split_1", "smul"},
    {"conv2d", "relu", "poolavg", "Iconv", "Cpool", "Imatmul", "Iewmul"},
]


def operators(equation):
    names = set(re.findall(r"([A-Za-z_][A-Za-z_0-9]*)\s*\(", equation))
    return names | set(re.findall(r"\b(Imatmul|Iewmul)\b", equation))


def main():
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "taso_sosp19ae_820_equations.txt")
    rules = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"^(\d+)\t(.*)$", line.rstrip("\n"))
            if m:
                rules.setdefault(int(m.group(1)), []).append(m.group(2))
    for subset in SUBSETS:
        print(sum(1 for i, eqs in rules.items() if i not in BLACKLIST and all(operators(e) <= subset for e in eqs)))


if __name__ == "__main__":
    main()
