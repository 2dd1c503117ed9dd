# syntax=docker/dockerfile:1
# `crag serve` in a container, with the offline models: docs/guides/containers.md.
#
#   docker build -t crag .
#   docker run -p 8000:8000 -e CRAG_API_KEY -v crag-data:/data crag serve --host 0.0.0.0 ...
#
# deploy/compose/compose.yaml runs two of these behind nginx, with Postgres and a Chroma server.

# Any Debian bookworm image whose `python3` is 3.11 with its venv module will do (the tests build on
# one made with mmdebstrap); both stages use it, so that the venv's python is the one it was made with.
ARG BASE=python:3.11-slim-bookworm

FROM ${BASE} AS build
# a C/C++ compiler: llama-cpp-python (the `local` extra) builds llama.cpp from source, for this build
# machine's CPU by default (a few minutes, once); pass CMAKE_ARGS for other CPUs (see the guide).
# Debian's packages are not pinned (DL3008): bookworm's security updates are wanted
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends build-essential \
    && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/crag
ENV PATH=/opt/crag/bin:$PATH \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
# pip's own settings for a mirror, a proxy's CA or a folder of wheels: build arguments, so they are
# used by this stage's pip only and never written into the image
ARG PIP_INDEX_URL
ARG PIP_EXTRA_INDEX_URL
ARG PIP_FIND_LINKS
ARG PIP_CERT
ARG CMAKE_ARGS
# PyTorch's CPU build first, as `make setup` does: resolved from PyPI alone, torch pulls GBs of CUDA
# packages. TORCH_INDEX= (empty) takes it from the index above instead (a mirror that holds the CPU wheel).
# (DL3013: hadolint reads the optional --index-url as a package; torch is pinned)
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
# hadolint ignore=DL3013
RUN pip install ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} torch==2.13.0
COPY pyproject.toml README.md LICENSE NOTICE /src/
COPY LICENSES /src/LICENSES
COPY crag /src/crag
# local: llama.cpp and the chat models' part packages; serve: LangServe and the Agent Server;
# postgres: threads shared by several workers. Then the demo's knowledge base and web stand-in at a
# fixed path, for compose.yaml's `ingest`
RUN pip install "/src[local,serve,postgres]" \
    && ln -s "$(python -c 'import crag.demo, pathlib; print(pathlib.Path(crag.demo.__file__).parent)')" /opt/crag/demo

FROM ${BASE}
# llama.cpp's OpenMP runtime (torch brings its own)
# hadolint ignore=DL3008
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libgomp1 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/crag /opt/crag
# a user of its own. /data is for a volume (not declared VOLUME, which would leave an anonymous volume
# behind every container that mounts only a part of it): the chat model assembled from its part packages
# on first use (cache/, shared by every container that mounts it: crag.models.gguf locks the file while
# it writes it, so it is assembled once), and threads or an embedded Chroma folder if those stay local
RUN groupadd --system --gid 10001 crag \
    && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/crag crag \
    && mkdir -p /data/cache \
    && chown -R crag:crag /data
ENV PATH=/opt/crag/bin:$PATH \
    CRAG_CACHE_DIR=/data/cache \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_VERBOSITY=error \
    ANONYMIZED_TELEMETRY=False \
    PYTHONUNBUFFERED=1
WORKDIR /data
USER 10001:10001
EXPOSE 8000
# /health answers once every model is loaded (the first start also assembles the 1.1 GB model file);
# CRAG_HEALTH_URL for a server on another port
HEALTHCHECK --interval=15s --timeout=5s --start-period=600s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(os.environ.get('CRAG_HEALTH_URL', 'http://127.0.0.1:8000/health'), timeout=4)"]
ENTRYPOINT ["crag"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
