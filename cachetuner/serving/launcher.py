"""Start the ``tritonserver`` that ships in the ``nvidia-pytriton`` wheel, on loopback, as a context manager.

Why not ``pytriton.triton.Triton``: that class serves Python callables through its own proxy model;
CacheTuner serves a plain model repository (``config.pbtxt`` + python-backend ``model.py``), which is
exactly what a production Triton would load. The environment mirrors pytriton's own launcher
(``pytriton/server/triton_server.py`` and ``triton.py``): the wheel's bundled libraries on
``LD_LIBRARY_PATH``, a backend directory holding the python backend plus the stub built for the running
Python version, and a unique shared-memory prefix. Two additions pytriton gets implicitly: the running
Python's ``LIBDIR`` on ``LD_LIBRARY_PATH`` (else the stub fails with a ``_thread.RLock`` error) and the
venv's site-packages on ``PYTHONPATH`` (the stub imports torch and numpy).

Ports: Triton cannot report an OS-chosen port, so port 0 means "pick a free loopback port now"; a lost
race (another process grabbing it first) is retried with new ports.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from types import TracebackType

from cachetuner.errors import ServiceError
from cachetuner.ports import free_port


def _dist_dir() -> Path:
    import pytriton  # noqa: F401  (import proves the wheel is there; the binary sits next to it)

    return Path(pytriton.__file__).resolve().parent / "tritonserver"


def _pdeathsig() -> None:  # runs in the child: die with the parent, never orphan a server
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    libc.prctl(1, signal.SIGTERM)


class TritonServer:
    """``with TritonServer(repo) as srv:`` -> a ready server; ``srv.grpc_url`` / ``srv.http_url``.

    Args:
        model_repository: folder with ``<model>/config.pbtxt`` and version folders.
        http_port / grpc_port / metrics_port: 0 picks free loopback ports.
        startup_timeout_s: how long to wait for the server *and* every model to be ready.
        models: names that must be ready before ``start`` returns (default: ``("hotness",)``).
        log_verbose: Triton ``--log-verbose`` level.
    """

    def __init__(
        self,
        model_repository: str | Path,
        *,
        http_port: int = 0,
        grpc_port: int = 0,
        metrics_port: int = 0,
        startup_timeout_s: float = 120.0,
        models: tuple[str, ...] = ("hotness",),
        log_verbose: int = 0,
    ) -> None:
        self.model_repository = Path(model_repository).resolve()
        if not self.model_repository.is_dir():
            raise ServiceError(f"{self.model_repository}: model repository not found (create it with `cachetuner hotness export`)")
        self._want = (http_port, grpc_port, metrics_port)
        self.startup_timeout_s = startup_timeout_s
        self.models = models
        self.log_verbose = log_verbose
        self.http_port = self.grpc_port = self.metrics_port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._workdir: Path | None = None
        self._log_file: Path | None = None

    # -- public ---------------------------------------------------------------------------------
    @property
    def http_url(self) -> str:
        return f"127.0.0.1:{self.http_port}"

    @property
    def grpc_url(self) -> str:
        return f"127.0.0.1:{self.grpc_port}"

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.metrics_port}/metrics"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def is_alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def logs(self, tail: int = 4000) -> str:
        if self._log_file is None or not self._log_file.exists():
            return ""
        return self._log_file.read_text(errors="replace")[-tail:]

    def start(self) -> TritonServer:
        """Launch and block until the server and ``models`` are ready (retrying lost port races)."""
        if self.is_alive():
            raise ServiceError(f"tritonserver already running (pid {self.pid})")
        self._workdir = Path(tempfile.mkdtemp(prefix="cachetuner-triton-"))
        self._prepare_backends(self._workdir)
        last = ""
        for _attempt in range(3):
            self.http_port, self.grpc_port, self.metrics_port = (p or free_port() for p in self._want)
            self._launch()
            ok, last = self._wait_ready()
            if ok:
                return self
            self._terminate()
            if not any(w in last for w in ("ddress already in use", "Failed to start", "failed to start")):
                break
        self._cleanup_workdir()
        raise ServiceError(f"tritonserver did not become ready within {self.startup_timeout_s:.0f}s: {last.strip()[-1500:]}")

    def stop(self, timeout_s: float = 20.0) -> None:
        """SIGTERM (Triton unloads models and exits), SIGKILL after ``timeout_s``; idempotent."""
        self._terminate(timeout_s)
        self._cleanup_workdir()

    def __enter__(self) -> TritonServer:
        return self.start()

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    # -- internals ------------------------------------------------------------------------------
    def _prepare_backends(self, work: Path) -> None:
        dist = _dist_dir()
        backends = work / "backends"
        shutil.copytree(dist / "backends", backends, ignore=shutil.ignore_patterns("__pycache__"))
        version = f"{sys.version_info[0]}.{sys.version_info[1]}"
        stub = dist / "python_backend_stubs" / version / "triton_python_backend_stub"
        if not stub.is_file():
            raise ServiceError(f"no Triton python-backend stub for Python {version} in {stub.parent.parent}")
        shutil.copy(stub, backends / "python" / "triton_python_backend_stub")
        self._caches = dist / "caches"

    def _env(self) -> dict[str, str]:
        env = os.environ.copy()
        import pytriton.utils.distribution as dist

        libs = [str(dist.get_libs_path()), str(sysconfig.get_config_var("LIBDIR") or "")]
        if env.get("LD_LIBRARY_PATH"):
            libs.append(env["LD_LIBRARY_PATH"])
        env["LD_LIBRARY_PATH"] = ":".join(p for p in libs if p)
        site = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
        if env.get("PYTHONPATH"):
            site.append(env["PYTHONPATH"])
        env["PYTHONPATH"] = ":".join(dict.fromkeys(site))
        env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
        env.setdefault("OMP_NUM_THREADS", "1")
        return env

    def _launch(self) -> None:
        assert self._workdir is not None
        self._log_file = self._workdir / f"tritonserver-{self.grpc_port}.log"
        args = [
            str(_dist_dir() / "bin" / "tritonserver"),
            f"--model-repository={self.model_repository}",
            f"--backend-directory={self._workdir / 'backends'}",
            f"--cache-directory={self._caches}",
            "--http-address=127.0.0.1",
            f"--http-port={self.http_port}",
            "--grpc-address=127.0.0.1",
            f"--grpc-port={self.grpc_port}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={self.metrics_port}",
            f"--backend-config=python,shm-region-prefix-name=cachetuner_{uuid.uuid4().hex[:12]}",
            "--backend-config=python,shm-default-byte-size=4194304",
            "--exit-on-error=true",
            "--strict-readiness=true",
            f"--log-verbose={self.log_verbose}",
        ]
        log = open(self._log_file, "wb")  # noqa: SIM115  (owned by the child; closed after Popen)
        try:
            self._proc = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, env=self._env(), cwd=self._workdir,
                preexec_fn=_pdeathsig, start_new_session=True,
            )
        finally:
            log.close()

    def _wait_ready(self) -> tuple[bool, str]:
        deadline = time.monotonic() + self.startup_timeout_s
        urls = [f"http://{self.http_url}/v2/health/ready"] + [
            f"http://{self.http_url}/v2/models/{m}/ready" for m in self.models
        ]
        while time.monotonic() < deadline:
            if not self.is_alive():
                return False, self.logs()
            if all(_http_ok(u) for u in urls):
                return True, ""
            time.sleep(0.25)
        return False, self.logs()

    def _terminate(self, timeout_s: float = 20.0) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)

    def _cleanup_workdir(self) -> None:
        if self._workdir is not None:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None


def _http_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1.0) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, OSError):
        return False
