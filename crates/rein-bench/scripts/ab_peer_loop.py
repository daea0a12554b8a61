#!/usr/bin/env python3
"""A/B of rein's per-step cost between two builds of `rein-peer-loop`.

Runs each build interleaved (N = 50/200/500, memory and SQLite stores, 5
repetitions) against one running peer mock and prints the median client CPU
per step. Start the mock first:

    python3 ../shared/bench/peers/mock_server.py --port 18123 &
    python3 crates/rein-bench/scripts/ab_peer_loop.py OLD/rein-peer-loop NEW/rein-peer-loop

Build each side with `cargo build --release -p rein-bench --bin rein-peer-loop`
(a worktree of the old commit with its own CARGO_TARGET_DIR for the old side).
Numbers move by about 10% between runs on a 2-core machine: compare runs, not
single rows.
"""

import json
import statistics
import subprocess
import sys


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    builds = {"before": sys.argv[1], "after": sys.argv[2]}
    port = "18123"
    results: dict = {}
    for _ in range(5):
        for n in (50, 200, 500):
            for store in ("memory", "sqlite"):
                for name, binary in builds.items():
                    out = subprocess.check_output(
                        [binary, "--n", str(n), "--port", port, "--store", store]
                    ).decode().strip().splitlines()[-1]
                    results.setdefault((name, store, n), []).append(
                        json.loads(out)["cpu_per_step_ms"]
                    )
    for store in ("memory", "sqlite"):
        for n in (50, 200, 500):
            row = [f"{store:7} N={n:4}"]
            for name in builds:
                row.append(f"{name}: {statistics.median(results[(name, store, n)]):.3f} ms")
            print("  ".join(row))


if __name__ == "__main__":
    main()
