"""``python -m cachetuner.daemon.healthcheck``: exit 0 when the daemon's /healthz says ok, 1 otherwise.

The Docker HEALTHCHECK runs exactly this (the slim image has no curl); the tests run it too.
Target: ``--url``, else ``--state-dir``'s ``daemon.addr`` (written at startup, works with port 0).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.request
from pathlib import Path


def check(url: str, timeout_s: float = 4.0) -> tuple[bool, str]:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as r:  # noqa: S310 (operator-given URL)
            body = json.loads(r.read())
    except Exception as e:  # noqa: BLE001 (503 raises too: not healthy)
        return False, f"{type(e).__name__}: {e}"
    return bool(body.get("ok")), json.dumps({k: body.get(k) for k in ("ok", "iteration", "seconds_since_last_loop")})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--url", help="e.g. http://127.0.0.1:9464/healthz")
    ap.add_argument("--state-dir", help="read host:port from STATE_DIR/daemon.addr")
    ap.add_argument("--timeout", type=float, default=4.0)
    a = ap.parse_args(argv)
    url = a.url
    if url is None:
        if not a.state_dir:
            ap.error("give --url or --state-dir")
        addr = Path(a.state_dir) / "daemon.addr"
        if not addr.is_file():
            print(f"unhealthy: {addr} missing (daemon not started?)", file=sys.stderr)
            return 1
        url = f"http://{addr.read_text().strip()}/healthz"
    ok, detail = check(url, a.timeout)
    print(("healthy: " if ok else "unhealthy: ") + detail, file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
