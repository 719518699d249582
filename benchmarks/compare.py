"""Compare the benchmark on two source trees: `.venv/bin/python benchmarks/compare.py --old DIR`.

Runs this checkout's `benchmarks/run.py` against the `placed` package of an old tree and
of a new one (by default this checkout's `src`), each in its own subprocess with
PYTHONPATH set to its tree, so the harness and what it measures stay the same and only the
engine differs. Runs alternate, old then new, and over several `--rounds` in the order
old new new old ..., so that a machine getting busier or cooler weighs on both alike. The
two reports are parsed, and every timing in their tables is printed as old, new and
new/old, flagging those more than `--threshold` slower; with several rounds each side keeps
its best. Arguments after `--` go to run.py (for example `-- --repeat 3`).

Exit status: 0, or 1 when a run reports a failed correctness check, or 2 when a run
cannot be made at all (a tree without `placed`, a run that crashes).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
RUN_PY = BENCHMARKS / "run.py"
CHECKOUT_SRC = BENCHMARKS.parent / "src"

DURATION = re.compile(r"^(-?[\d,]*\.?\d+) (ns|µs|ms|s)$")
UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


class CompareError(Exception):
    """A comparison that cannot be made; the message says why."""


@dataclass(frozen=True, slots=True)
class Timing:
    section: str  # the nearest heading above the table
    row: str  # the row's first cell: targets, mode or term
    column: str
    seconds: float
    rounding: float  # half the last printed digit, in seconds: the report rounds
    text: str  # as the report prints it

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.section, self.row, self.column)


@dataclass(frozen=True, slots=True)
class Run:
    side: str  # "old" or "new"
    status: int
    report: str


def source_tree(path: Path) -> Path:
    """The directory that holds the `placed` package: `path` itself or its `src`."""
    for candidate in (path, path / "src"):
        if (candidate / "placed" / "__init__.py").is_file():
            return candidate.resolve()
    raise CompareError(f"{path}: no placed/__init__.py in it or in its src/")


def environment(tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    # Ahead of anything already on PYTHONPATH, and of the venv's editable install (a .pth
    # entry, which site appends after PYTHONPATH), so this tree's `placed` is the one found.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(tree), env.get("PYTHONPATH")) if p)
    return env


def imported_from(python: str, tree: Path) -> Path:
    """Where `placed` comes from under this tree's environment; it must be inside the tree,
    or both runs could silently measure the same engine."""
    found = subprocess.run(
        [python, "-c", "import placed; print(placed.__file__)"],
        env=environment(tree),
        cwd=BENCHMARKS,
        capture_output=True,
        text=True,
        check=False,
    )
    if found.returncode != 0:
        raise CompareError(f"{python} cannot import placed from {tree}:\n{found.stderr}")
    location = Path(found.stdout.strip()).resolve()
    if not location.is_relative_to(tree):
        raise CompareError(f"with PYTHONPATH={tree}, placed is imported from {location}")
    return location


def run_benchmark(python: str, side: str, tree: Path, arguments: list[str]) -> Run:
    print(f"[compare] {side}: {tree}", file=sys.stderr, flush=True)
    # stderr is left to the terminal: a full run takes minutes and its progress lines (and
    # any traceback) are worth seeing as they come.
    done = subprocess.run(
        [python, str(RUN_PY), *arguments],
        env=environment(tree),
        cwd=BENCHMARKS.parent,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
    )
    # run.py exits 1 on a failed correctness check but still prints its report; anything
    # else means there is no report to compare.
    if done.returncode not in (0, 1) or not done.stdout.startswith("# placed benchmarks"):
        raise CompareError(f"run.py against {tree} exited {done.returncode}; see stderr above")
    return Run(side, done.returncode, done.stdout)


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def timings(report: str) -> list[Timing]:
    """Every duration in the report's tables, in report order.

    Left out: per-unit columns, which are another column divided by a count and so add
    nothing, and `--profile` sections, which are inflated by cProfile and keyed by line
    numbers that differ between trees. A figure printed twice (the constraint table and its
    floor table both show the fast path's time) is kept once."""
    found: dict[tuple[str, str, str], Timing] = {}
    section = ""
    header: list[str] = []
    lines = report.splitlines()
    for number, line in enumerate(lines):
        if line.startswith("#"):
            section = line.lstrip("#").strip()
            header = []
        elif not line.startswith("|"):
            header = []
        elif number + 1 < len(lines) and lines[number + 1].startswith("|---"):
            header = cells(line)
        elif header and not line.startswith("|---") and "`--profile`" not in section:
            row = cells(line)
            for column, text in zip(header[1:], row[1:], strict=False):
                match = DURATION.match(text)
                if match is None or column.startswith("per ") or " per " in column:
                    continue
                digits, unit = match.group(1).replace(",", ""), UNITS[match.group(2)]
                decimals = len(digits.partition(".")[2])
                rounding = 0.5 * 10.0**-decimals * unit
                timing = Timing(section, row[0], column, float(digits) * unit, rounding, text)
                found.setdefault(timing.key, timing)
    return list(found.values())


def best(runs: list[Run]) -> dict[tuple[str, str, str], Timing]:
    """Per timing, the fastest over the runs: each is already a best of repeats, and noise
    only ever adds time."""
    kept: dict[tuple[str, str, str], Timing] = {}
    for run in runs:
        for timing in timings(run.report):
            if timing.key not in kept or timing.seconds < kept[timing.key].seconds:
                kept[timing.key] = timing
    return kept


def table(header: list[str], rows: list[list[str]]) -> list[str]:
    # The same markdown as the report's; not imported from harness.py, which imports placed,
    # and this process must not depend on either tree's engine importing cleanly.
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def machine(report: str) -> str:
    return next((line for line in report.splitlines() if line.startswith("Machine: ")), "")


def render(
    old: list[Run],
    new: list[Run],
    trees: dict[str, Path],
    order: list[str],
    arguments: list[str],
    threshold: float,
) -> str:
    before, after = best(old), best(new)
    rows: list[list[str]] = []
    compared = slower = unsure = 0
    for key in [*before, *(k for k in after if k not in before)]:
        was, now = before.get(key), after.get(key)
        if was is None or now is None:
            side = "old" if was else "new"
            texts = [was.text if was else "absent", now.text if now else "absent"]
            rows.append([*key, *texts, "", f"only in {side}"])
            continue
        if was.seconds <= 0 or now.seconds <= 0:
            # A remainder (the whole less its parts) can come out negative: no ratio.
            rows.append([*key, was.text, now.text, "n/a", ""])
            continue
        compared += 1
        ratio = now.seconds / was.seconds
        flag = ""
        if ratio > 1 + threshold:
            # The report prints two or three significant figures (0.04 s), so a ratio of
            # printed figures is only called slower if it stays over the threshold with
            # each figure at the end of its rounding that favours new.
            low = (now.seconds - now.rounding) / (was.seconds + was.rounding)
            if low > 1 + threshold:
                flag = f"SLOWER by {ratio - 1:.0%}"
                slower += 1
            else:
                flag = "slower? within the report's rounding"
                unsure += 1
        rows.append([*key, was.text, now.text, f"{ratio:.2f}", flag])
    command = " ".join(["benchmarks/run.py", *arguments])
    lines = [
        "# placed benchmark comparison",
        "",
        f"old: `{trees['old']}`; new: `{trees['new']}`. Each ran `{command}` "
        f"{len(old)} time(s), in the order {', '.join(order)}; with several runs a timing "
        "is the best of them.",
        "",
        machine(old[0].report),
        "",
    ]
    lines += table(["section", "row", "timing", "old", "new", "new/old", ""], rows)
    summary = f"{slower} of {compared} timings are more than {threshold:.0%} slower in new."
    if unsure:
        summary += f" {unsure} more may be: their printed figures are too coarse to tell."
    lines += [
        "",
        summary,
        "",
        "Figures are read from the reports, so a ratio is only as exact as what they print; "
        "quick runs print many timings with one or two significant figures.",
    ]
    for side, runs in (("old", old), ("new", new)):
        failed = sum(run.status != 0 for run in runs)
        if failed:
            lines += ["", f"{side}: {failed} run(s) failed a correctness check (see Acceptance)."]
    return "\n".join(lines) + "\n"


def parse(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    own, extra = argv, []
    if "--" in argv:
        split = argv.index("--")
        own, extra = argv[:split], argv[split + 1 :]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--old", type=Path, required=True, help="the tree to compare against (it or its src/)"
    )
    parser.add_argument(
        "--new", type=Path, default=CHECKOUT_SRC, help="the tree to judge (default: this one)"
    )
    parser.add_argument("--quick", action="store_true", help="run.py --quick (a smoke-size run)")
    parser.add_argument("--rounds", type=int, default=1, help="runs per tree (default 1)")
    parser.add_argument(
        "--threshold", type=float, default=0.10, help="flag new/old above 1 + this (0.10)"
    )
    parser.add_argument("--python", default=sys.executable, help="the interpreter for the runs")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="also save each report here")
    args = parser.parse_args(own)
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    return args, (["--quick"] if args.quick else []) + extra


def main(argv: list[str] | None = None) -> int:
    args, arguments = parse(list(sys.argv[1:] if argv is None else argv))
    try:
        trees = {"old": source_tree(args.old), "new": source_tree(args.new)}
        for side, tree in trees.items():
            print(
                f"[compare] {side}: placed from {imported_from(args.python, tree)}",
                file=sys.stderr,
            )
        # old new, then new old, and so on: each side runs first as often as second.
        pairs = (("old", "new"), ("new", "old"))
        order = [side for r in range(args.rounds) for side in pairs[r % 2]]
        runs: dict[str, list[Run]] = {"old": [], "new": []}
        for side in order:
            run = run_benchmark(args.python, side, trees[side], arguments)
            runs[side].append(run)
            if args.keep is not None:
                args.keep.mkdir(parents=True, exist_ok=True)
                (args.keep / f"{side}-{len(runs[side])}.md").write_text(run.report)
    except CompareError as error:
        print(f"compare: {error}", file=sys.stderr)
        return 2
    print(render(runs["old"], runs["new"], trees, order, arguments, args.threshold), end="")
    return 1 if any(run.status for run in [*runs["old"], *runs["new"]]) else 0


if __name__ == "__main__":
    sys.exit(main())
