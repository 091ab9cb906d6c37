"""Writes ledger calls as fast as it can and prints one JSON line after each call returns.

Run by the crash test, which SIGKILLs it at a random line. Usage: crash_writer.py PATH SEED
"""

from __future__ import annotations

import json
import random
import sys

from harness_bt.ledger import Command, CommandEvent, Ledger, LedgerError


def main(path: str, seed: int) -> None:
    rng = random.Random(seed)
    led = Ledger.open(path, now=0.0)
    now = 0.0
    n = 0
    while True:
        n += 1
        now += 0.01
        cid = f"c{n}"
        res = rng.choice(["arm", "gripper", "base"])
        cmd = Command(command_id=cid, skill="s", params={"k": n}, resources=(res,),
                      start_within_ms=10_000, execution_timeout_ms=60_000)
        try:
            verdict = rng.choice(["SUCCEEDED", "FAILED"])
            stop_at = rng.randrange(1, 6)
            for step in range(stop_at):
                if step == 0:
                    rec = led.submit(cmd, now=now)
                elif step == 1:
                    rec = led.dispatch(cid, now=now)
                elif step == 2:
                    rec = led.apply(CommandEvent(cid, 1, "started"), now=now)
                elif step == 3:
                    rec = led.apply(CommandEvent(cid, 2, "control_done"), now=now)
                else:
                    rec = led.verdict(cid, verdict, now=now)
                print(json.dumps({"id": cid, "seq": rec.events[-1].seq}), flush=True)
            if stop_at < 5:
                rec = led.cancel(cid, now=now)
                print(json.dumps({"id": cid, "seq": rec.events[-1].seq}), flush=True)
                if not rec.terminal:
                    rec = led.apply(CommandEvent(cid, 9, "stopped"), now=now)
                    print(json.dumps({"id": cid, "seq": rec.events[-1].seq}), flush=True)
        except LedgerError as exc:
            print(json.dumps({"error": str(exc)}), file=sys.stderr, flush=True)
            raise


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
