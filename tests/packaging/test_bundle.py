"""The desktop bundle: packaging/build.sh freezes the app with PyInstaller (one folder), and the
result starts without the source tree: its version, plugins, one estimate, and the window on
a real X server (Xvfb; the screenshot goes to ``$WORKBENCH_SCREENSHOT_DIR`` when set).

Slow (~35 s: a full PyInstaller build from an empty cache). Needs PyInstaller in the test venv.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench import __version__
from workbench.pluginhost import FIRST_PARTY

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("PyInstaller", reason="PyInstaller is not installed in the test venv")
    out = tmp_path_factory.mktemp("bundle")
    env = {**os.environ, "VENV": str(Path(sys.executable).parent.parent),
           "DIST_DIR": str(out / "dist"), "WORK_DIR": str(out / "work")}
    done = subprocess.run(["bash", str(ROOT / "packaging" / "build.sh")], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return out / "dist" / "gpu-workbench"


def _env(tmp_path: Path) -> dict[str, str]:
    """No source tree, no overrides, settings and user files in a temp folder."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("WORKBENCH_") and k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(QT_QPA_PLATFORM="offscreen", HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"),
               XDG_DATA_HOME=str(tmp_path / "data"))
    return env


def _run(bundle: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(bundle / "gpu-workbench"), *args], cwd="/", env=_env(tmp_path),
                          capture_output=True, text=True, timeout=120)


def test_the_bundle_holds_the_app_resources_and_desktop_files(bundle: Path) -> None:
    internal = bundle / "_internal"
    assert (internal / "resources" / "catalog" / "accelerators.yaml").is_file()
    assert (internal / "resources" / "help" / "index.html").is_file()
    # Plugin data read through importlib.resources sits beside the frozen plugin package.
    assert (internal / "workbench_performance" / "data" / "kernels" / "gemm.yaml").is_file()
    assert (internal / "workbench_performance" / "operators" / "profiles.yaml").is_file()
    for path in ("applications/gpu-workbench.desktop", "metainfo/io.github.gpu_workbench.metainfo.xml",
                 "icons/hicolor/scalable/apps/gpu-workbench.svg",
                 "icons/hicolor/256x256/apps/gpu-workbench.png"):
        assert (bundle / "share" / path).is_file(), path
    assert not (internal / "torch").exists()  # validation-only packages stay out


def test_the_bundle_answers_version_plugins_and_an_estimate(bundle: Path, tmp_path: Path) -> None:
    version = _run(bundle, tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.strip() == f"gpu-workbench {__version__}"
    plugins = _run(bundle, tmp_path, "plugins", "--json")
    assert plugins.returncode == 0, plugins.stderr
    statuses = {p["name"]: p["status"] for p in json.loads(plugins.stdout)["plugins"]}
    assert statuses == dict.fromkeys(FIRST_PARTY, "loaded")
    estimate = _run(bundle, tmp_path, "estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--json")
    assert estimate.returncode == 0, estimate.stderr
    doc = json.loads(estimate.stdout)
    assert doc["errors"] == []
    assert doc["memory"]["fits"] is True and doc["memory"]["per_gpu"]["total"] > 16e9
    assert doc["performance"]["tokens_per_s"] > 0 and doc["cost"]["usd_per_hour"] > 0


GRAB = """
import sys
from PySide6.QtGui import QGuiApplication
app = QGuiApplication([])
image = app.primaryScreen().grabWindow(0).toImage()
image.save(sys.argv[1])
step = max(1, image.width() // 64)
print(len({image.pixel(x, y) for x in range(0, image.width(), step) for y in range(0, image.height(), step)}))
"""


@pytest.fixture
def xvfb_display() -> Iterator[str]:
    if shutil.which("Xvfb") is None:
        pytest.skip("Xvfb is not installed")
    read, write = os.pipe()
    command = ["Xvfb", "-displayfd", str(write), "-screen", "0", "1600x1000x24", "-nolisten", "tcp"]
    server = subprocess.Popen(command, pass_fds=(write,), stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as pipe:
        number = pipe.readline().strip()
    if not number:
        server.kill()
        pytest.skip("Xvfb did not start")
    yield f":{number}"
    server.terminate()
    server.wait(timeout=10)


def test_the_bundled_window_opens_on_a_real_x_server(bundle: Path, tmp_path: Path, xvfb_display: str) -> None:
    env = {**_env(tmp_path), "DISPLAY": xvfb_display, "QT_QPA_PLATFORM": "xcb"}
    window = subprocess.Popen([str(bundle / "gpu-workbench")], cwd="/", env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    shot = Path(os.environ.get("WORKBENCH_SCREENSHOT_DIR") or tmp_path) / "bundle-window.png"
    try:
        time.sleep(6)
        assert window.poll() is None, f"the window exited: {window.communicate()[1][-3000:]}"
        grab = subprocess.run([sys.executable, "-c", GRAB, str(shot)], env=env, capture_output=True,
                              text=True, timeout=60)
        assert grab.returncode == 0, grab.stderr[-2000:]
        assert int(grab.stdout) > 50, f"{shot} looks blank: the window did not paint"
    finally:
        window.terminate()
        _, stderr = window.communicate(timeout=30)
    assert "Traceback" not in stderr, stderr[-3000:]
