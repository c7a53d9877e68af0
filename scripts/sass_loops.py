"""Loop statistics of `nvdisasm -hex` output (Volta and later: 128-bit instructions whose
high word holds the control bits; bits 41-44 of that word are the stall cycles the
scheduler waits after issuing the instruction). Used by scripts/sass-loops.sh."""
import re
import sys

INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;\s*/\* (0x[0-9a-f]+) \*/")
CONTROL = re.compile(r"/\* (0x[0-9a-f]+) \*/")
LABEL = re.compile(r"^(\.L_x_\d+):")
BRANCH = re.compile(r"BRA `\((\.L_x_\d+)\)")
KINDS = [
    ("tensor", lambda op: op.split()[0].split(".")[0] in ("DMMA", "HMMA", "IMMA")),
    ("fma", lambda op: op.split()[0].split(".")[0] in ("FFMA", "DFMA")),
    ("nop", lambda op: op.startswith("NOP")),
    ("lds", lambda op: op.startswith("LDS")),
    ("cp.async", lambda op: op.startswith("LDGSTS")),
    ("bar", lambda op: "BAR.SYNC" in op),
    ("mov", lambda op: "MOV" in op.split()[0]),
    ("spill", lambda op: op.split()[0].split(".")[0] in ("LDL", "STL")),
]


def parse(path):
    lines = open(path).read().split("\n")
    code, labels, i = [], {}, 0
    while i < len(lines):
        label = LABEL.match(lines[i])
        if label:
            labels[label.group(1)] = len(code)
        m = INSTRUCTION.search(lines[i])
        if m and i + 1 < len(lines) and CONTROL.search(lines[i + 1]):
            high = int(CONTROL.search(lines[i + 1]).group(1), 16)
            code.append((int(m.group(1), 16), (high >> 41) & 0xF, m.group(2)))
            i += 2
        else:
            i += 1
    return code, labels


def main(path):
    code, labels = parse(path)
    for end, (addr, _, op) in enumerate(code):
        target = BRANCH.search(op)
        if not target or labels.get(target.group(1), end + 1) > end:
            continue
        body = code[labels[target.group(1)] : end + 1]
        counts = {name: sum(1 for _, _, o in body if test(o)) for name, test in KINDS}
        if counts["tensor"] == 0 and counts["fma"] == 0:
            continue
        stalls = sum(s for _, s, _ in body)
        shown = " ".join(f"{name} {n}" for name, n in counts.items() if n)
        print(f"  loop at {body[0][0]:#x}..{addr:#x}: {len(body)} instructions, {stalls} stall cycles; {shown}")


if __name__ == "__main__":
    main(sys.argv[1])
