"""The scripted pick policy's success rate against its misgrasp_rate, in the built-in simulator.

For each misgrasp rate, ``--seeds`` episodes of ``pick_cube`` (layout seed k, the target
cycling red, green, blue; session ``episode-k``) are driven in a closed loop from the cameras
(tests/policies/simloop.py: 5 rows per request), each judged by the simulator's own
success check (lifted 5 cm and held for 2 s after the policy said done). Rate 0 is the
baseline measured in the same run; printed per rate: successes, the success rate, its ratio
to the baseline, and how often the policy said done (a frozen policy says it every time).

Sessions draw their misgrasp from (seed, session) alone with common random numbers, so the
episodes that misgrasp at a lower rate misgrasp at every higher rate too.

    python tests/benchmarks/bench_policy_misgrasp.py                      # rates 0 and 0.45
    python tests/benchmarks/bench_policy_misgrasp.py --rates 0,0.3,0.45 --seeds 20
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from policies.registry import PolicySettings  # noqa: E402
from policies.scripted import PickFactory  # noqa: E402
from tests.policies.simloop import pick_env, run_pick  # noqa: E402

TARGETS = ("red_cube", "green_cube", "blue_cube")


def measure(rate: float, seeds: int, policy_seed: int, pose_noise_m: float) -> dict[str, object]:
    factory = PickFactory(PolicySettings(misgrasp_rate=rate, pose_noise_m=pose_noise_m,
                                         seed=policy_seed))
    policy = factory()
    successes = done = 0
    started = time.perf_counter()
    for k in range(seeds):
        with pick_env(TARGETS[k % len(TARGETS)], seed=k) as env:
            outcome = run_pick(policy.infer, env, session=f"episode-{k}")
        successes += outcome.success
        done += outcome.done
    return {"misgrasp_rate": rate, "episodes": seeds, "successes": successes,
            "success_rate": successes / seeds, "said_done": done / seeds,
            "wall_s": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="0,0.45", help="comma-separated misgrasp rates")
    parser.add_argument("--seeds", type=int, default=20, help="episodes per rate")
    parser.add_argument("--policy-seed", type=int, default=0, help="the policy's --seed")
    parser.add_argument("--pose-noise-m", type=float, default=0.0)
    args = parser.parse_args()
    rates = [float(r) for r in args.rates.split(",")]
    if 0.0 not in rates:
        rates.insert(0, 0.0)
    rows = [measure(r, args.seeds, args.policy_seed, args.pose_noise_m) for r in rates]
    base = next(r for r in rows if r["misgrasp_rate"] == 0.0)["success_rate"]
    print(f"{'misgrasp_rate':>13} {'successes':>10} {'success':>8} {'vs rate 0':>9} "
          f"{'said done':>9} {'wall s':>7}")
    for row in rows:
        ratio = row["success_rate"] / base if base else float("nan")  # type: ignore[operator]
        print(f"{row['misgrasp_rate']:>13.2f} {row['successes']:>4}/{row['episodes']:<5} "
              f"{row['success_rate']:>8.0%} {ratio:>9.2f} {row['said_done']:>9.0%} "
              f"{row['wall_s']:>7}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
