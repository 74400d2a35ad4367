# CacheTuner tuning daemon. Build from the repository root:
#   docker build -t cachetuner-daemon .
# Run (see deploy/docker-compose.yml and docs/daemon.md):
#   docker run --rm -v $PWD/deploy/daemon.yaml:/etc/cachetuner/daemon.yaml:ro \
#     -e CACHETUNER_REDIS_PASSWORD=... cachetuner-daemon --dry-run
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY cachetuner ./cachetuner
# torch first, from the CPU wheel index and pinned, so the resolver never pulls a multi-GB CUDA build
# (the same pin as the Makefile's install target).
RUN pip install --index-url https://download.pytorch.org/whl/cpu "torch==2.13.0" \
 && pip install . \
 && rm -rf /src

RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin tuner \
 && mkdir -p /var/lib/cachetuner /etc/cachetuner \
 && chown tuner:tuner /var/lib/cachetuner
USER tuner
WORKDIR /var/lib/cachetuner

EXPOSE 9464
# Same command the tests run outside Docker (tests/daemon/test_daemon_loop_sim.py).
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["python", "-m", "cachetuner.daemon.healthcheck", "--url", "http://127.0.0.1:9464/healthz"]
ENTRYPOINT ["cachetuner", "daemon"]
CMD ["--config", "/etc/cachetuner/daemon.yaml"]
