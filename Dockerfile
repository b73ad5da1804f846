# syntax=docker/dockerfile:1
#
# Symbiote as an Azure Functions custom container.
#
#   docker build -t symbiote .                  # target "functions" (the default, last stage): the Functions host
#   docker build -t symbiote-serve --target serve .   # the same image running `symbiote serve`, no Functions host
#
# Stages:
#   model      torch + transformers export all-MiniLM-L6-v2 to ONNX. Only the exported model leaves it.
#   app        the runtime: requirements.txt (+ requirements-azure.txt) on the Functions Python image,
#              the exported model, the code. No torch, no CUDA, no compilers added.
#   serve      `app` running `python -m symbiote serve` (docker-compose, any container host).
#   functions  `app` running the Functions host (Azure). Default target.
#
# Nothing is downloaded at run time: the model is in the image and HF_HUB_OFFLINE=1.

ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu

# ---------------------------------------------------------------------------------------------------
FROM mcr.microsoft.com/azure-functions/python:4-python3.11 AS model
ARG TORCH_INDEX_URL
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /build
COPY requirements.txt requirements-build.txt requirements-azure.txt ./
# torch from the CPU-only index first (pinned): the default wheel would pull gigabytes of CUDA.
RUN python -m pip install --index-url "${TORCH_INDEX_URL}" "torch==2.13.0" \
 && python -m pip install -r requirements.txt -r requirements-build.txt
COPY symbiote ./symbiote
RUN python -m symbiote export-model --target /opt/symbiote/model \
 && test -f /opt/symbiote/model/model.onnx \
 && test -f /opt/symbiote/model/symbiote-model.json \
 && ls /opt/symbiote/model/warm-*.npy /opt/symbiote/model/wordfreq-en-*.sqlite3

# ---------------------------------------------------------------------------------------------------
FROM mcr.microsoft.com/azure-functions/python:4-python3.11 AS app
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    AzureWebJobsScriptRoot=/home/site/wwwroot \
    AzureFunctionsJobHost__Logging__Console__IsEnabled=true \
    AzureWebJobsFeatureFlags=EnableWorkerIndexing \
    FUNCTIONS_WORKER_RUNTIME=python \
    ASPNETCORE_URLS=http://+:8080 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    SYMBIOTE_MODEL_DIR=/opt/symbiote/model \
    SYMBIOTE_PERSONALITIES_DIR=/home/site/wwwroot/personalities \
    SYMBIOTE_SHARE_PATH=/mnt/symbiote \
    CHROMADB_PATH=/mnt/symbiote/chroma
COPY requirements.txt requirements-azure.txt /tmp/requirements/
RUN python -m pip install -r /tmp/requirements/requirements.txt -r /tmp/requirements/requirements-azure.txt \
 && rm -rf /tmp/requirements
COPY --from=model /opt/symbiote/model /opt/symbiote/model
COPY function_app.py host.json /home/site/wwwroot/
COPY personalities /home/site/wwwroot/personalities
COPY symbiote /home/site/wwwroot/symbiote
# Bytecode compiled now (the app runs with PYTHONDONTWRITEBYTECODE=1 as a non-root user): a cold start
# does not compile the package's modules again.
RUN python -m compileall -q /home/site/wwwroot/symbiote /home/site/wwwroot/function_app.py
# A non-root user (uid 1000, matching the share's mount options) owning only the data mount and logs.
RUN groupadd --gid 1000 symbiote \
 && useradd --uid 1000 --gid 1000 --home-dir /home --no-create-home --shell /usr/sbin/nologin symbiote \
 && mkdir -p /mnt/symbiote /home/LogFiles \
 && chown symbiote:symbiote /mnt/symbiote /home/LogFiles
WORKDIR /home/site/wwwroot

# ---------------------------------------------------------------------------------------------------
FROM app AS serve
ENV HOST=0.0.0.0 \
    PORT=8000
USER 1000:1000
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('PORT', '8000'), timeout=4)"]
ENTRYPOINT ["python", "-m", "symbiote"]
CMD ["serve", "--host", "0.0.0.0"]

# ---------------------------------------------------------------------------------------------------
FROM app AS functions
# The Functions host listens on 8080 (ASPNETCORE_URLS) so it can run unprivileged. Should a platform
# need root, rebuild with --build-arg RUN_AS=0:0 (and drop uid/gid from the share's mount options).
ARG RUN_AS=1000:1000
USER ${RUN_AS}
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=90s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/health', timeout=4)"]
CMD ["/opt/startup/start_nonappservice.sh"]
