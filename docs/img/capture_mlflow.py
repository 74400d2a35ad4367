"""Screenshots of the MLflow UI in a real headless Chromium, driven over the DevTools protocol.

How the images in this folder were made (see docs/ab.md). The MLflow UI is a JS app: plain
``chromium --screenshot`` cannot close its side panel or expand a parent run, so this script
navigates, runs a few clicks in the page and captures, one PNG per ``--shot NAME=URL[|JS]``.

    .venv/bin/python docs/img/capture_mlflow.py --out docs/img \
        --shot "ab_runs=http://127.0.0.1:PORT/#/experiments/2/runs?searchFilter=..."
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import aiohttp

#: Closes the assistant side panel and collapses the navigation sidebar (more room for the table).
CLOSE_PANELS = """
(() => { const done = [];
  for (const b of document.querySelectorAll('button')) {
    const l = b.getAttribute('aria-label') || '';
    if (l === 'Close' || l === 'Toggle sidebar') { b.click(); done.push(l); }
  } return done.join(','); })()
"""


async def _shoot(ws_url: str, shots: list[tuple[str, str, str]], out: Path, size: tuple[int, int], wait: float) -> None:
    async with aiohttp.ClientSession() as s, s.ws_connect(ws_url, max_msg_size=0) as ws:
        counter = 0

        async def call(method: str, **params: object) -> dict:
            nonlocal counter
            counter += 1
            my = counter
            await ws.send_str(json.dumps({"id": my, "method": method, "params": params}))
            while True:
                msg = json.loads((await ws.receive()).data)
                if msg.get("id") == my:
                    if "error" in msg:
                        raise RuntimeError(f"{method}: {msg['error']}")
                    return msg.get("result", {})

        await call("Page.enable")
        await call("Emulation.setDeviceMetricsOverride", width=size[0], height=size[1], deviceScaleFactor=1, mobile=False)
        for name, url, js in shots:
            await call("Page.navigate", url=url)
            await asyncio.sleep(wait)
            r = await call("Runtime.evaluate", expression=CLOSE_PANELS, returnByValue=True)
            print(name, "panel:", r.get("result", {}).get("value"))
            if js:
                r = await call("Runtime.evaluate", expression=js, returnByValue=True, awaitPromise=True)
                print(name, "js:", r.get("result", {}).get("value"))
            await asyncio.sleep(2.5)
            shot = await call("Page.captureScreenshot", format="png")
            (out / f"{name}.png").write_bytes(base64.b64decode(shot["data"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--shot", action="append", required=True, help="NAME=URL or NAME=URL|JS")
    ap.add_argument("--size", default="1400,900")
    ap.add_argument("--wait", type=float, default=8.0, help="seconds for the JS app to render")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    a = ap.parse_args()
    shots = []
    for spec in a.shot:
        name, rest = spec.split("=", 1)
        url, _, js = rest.partition("|")
        shots.append((name, url, js))
    w, h = (int(x) for x in a.size.split(","))
    a.out.mkdir(parents=True, exist_ok=True)
    profile = tempfile.mkdtemp()
    proc = subprocess.Popen(
        [a.chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={profile}", "--remote-debugging-port=0", f"--window-size={w},{h}", "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        port_file = Path(profile) / "DevToolsActivePort"
        for _ in range(100):
            if port_file.is_file() and port_file.read_text().strip():
                break
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])

        async def run() -> None:
            async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{port}/json") as resp:
                targets = await resp.json()
            page = next(t for t in targets if t.get("type") == "page")
            await _shoot(page["webSocketDebuggerUrl"], shots, a.out, (w, h), a.wait)

        asyncio.run(run())
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
