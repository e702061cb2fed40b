"""Take docs/images/dashboard.png: the built-in dashboard after `spanscore demo`, in headless Chromium.

Starts `spanscore serve` in a throwaway directory on free loopback ports with a few code scorers (no judge, so
nothing leaves the machine), sends the demo's runs, waits until they are scored, and screenshots
`/dashboard/?since=24h` with playwright driving the system Chromium (Debian: apt-get install chromium; or set
SPANSCORE_CHROMIUM). Needs the test extra (playwright).

    python scripts/dashboard_screenshot.py [--out docs/images/dashboard.png]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from spanscore.testing.ports import free_port
from spanscore.testing.served import spanscore_serve

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "images" / "dashboard.png"
CONFIG = """\
rules:
  - name: default
    sample: 1.0
    scorers: [answer_health, completeness, tone_consistency]
  - name: tools
    sample: 0.5
    scorers: [{name: tool_call_accuracy, expected_tool: get_weather}]
"""


def _scored(api: str) -> int:
    body = json.dumps({"sql": "SELECT uniqExact(TraceId) AS n FROM scores FINAL", "format": "json"}).encode()
    request = urllib.request.Request(
        f"{api}/api/v1/query", data=body, headers={"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return int(json.loads(answer.read())["data"][0]["n"])


def _screenshot(url: str, out: Path) -> None:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("SPANSCORE_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("no Chromium: apt-get install chromium, or set SPANSCORE_CHROMIUM")
    with sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000}, device_scale_factor=1)
            page.goto(url)
            page.wait_for_selector("body[data-state=ready]", timeout=30_000)
            page.wait_for_timeout(500)  # the charts' last draw
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=False)
        finally:
            browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--traces", type=int, default=120)
    args = parser.parse_args()
    grpc, http, api = free_port(), free_port(), free_port()
    environ = {
        **{key: value for key, value in os.environ.items() if not key.startswith("SPANSCORE_")},
        "SPANSCORE_COLLECTOR__GRPC__PORT": str(grpc),
        "SPANSCORE_COLLECTOR__HTTP__PORT": str(http),
        "SPANSCORE_API__PORT": str(api),
        "SPANSCORE_COLLECTOR__RUNS__QUIET_PERIOD_S": "0.5",
    }
    base = f"http://127.0.0.1:{api}"
    with tempfile.TemporaryDirectory(prefix="spanscore-screenshot-") as directory:
        (Path(directory) / "spanscore.yaml").write_text(CONFIG, encoding="utf-8")
        with spanscore_serve(Path(directory), environ, "-c", "spanscore.yaml"):
            demo = [sys.executable, "-m", "spanscore.cli.commands", "demo", "-c", "spanscore.yaml"]
            demo += ["--traces", str(args.traces), "--hours", "12"]
            subprocess.run(demo, cwd=directory, env=environ, check=True, capture_output=True, timeout=120)
            deadline = time.monotonic() + 120
            while _scored(base) < args.traces and time.monotonic() < deadline:
                time.sleep(0.5)
            _screenshot(f"{base}/dashboard/?since=24h", args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
