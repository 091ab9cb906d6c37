"""Writes ledger calls in groups, one group per "tick", as a runner does, and is SIGKILLed.

Each tick applies the previous command's events and verdict, submits and dispatches the next
command, flushes, and only then prints the acknowledgement line (what a runtime would have been
sent); then it notes a progress event that stays held until the tick's group ends. Run by the
group-commit crash test. Usage: crash_group_writer.py PATH SEED
"""

from __future__ import annotations

import json
import random
import sys

from harness_bt.ledger import Command, CommandEvent, Ledger


def main(path: str, seed: int) -> None:
    rng = random.Random(seed)
    led = Ledger.open(path, now=0.0, snapshot_every=rng.choice([None, 7, 50]))
    now = 0.0
    n = 0
    while True:
        n += 1
        now += 0.01
        cid = f"c{n}"
        with led.group():
            prev = f"c{n - 1}"
            if prev in led:
                led.apply(CommandEvent(prev, 2, "control_done"), now=now)
                led.verdict(prev, rng.choice(["SUCCEEDED", "FAILED"]), now=now)
            cmd = Command(command_id=cid, skill="s", params={"k": n}, resources=("arm",),
                          start_within_ms=10_000, execution_timeout_ms=60_000)
            led.submit(cmd, now=now)
            rec = led.dispatch(cid, now=now)
            durable = led.flush()
            # the effect: acknowledged only now, with the seq it rests on
            print(json.dumps({"id": cid, "seq": rec.events[-1].seq, "durable": durable}),
                  flush=True)
            led.apply(CommandEvent(cid, 1, "started"), now=now)  # held until the tick ends


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
