# cqs API server image: the SQS API on port 9324, pointed at external Redis and Cassandra
# through CQS_* variables (see compose.yaml and README "Settings"). The embedded Cassandra
# (Java) is not included: a container always talks to a real cluster. Listening on 0.0.0.0,
# it refuses to start until CQS_AUTH is given: verify (with access keys) or, explicitly, off.
FROM python:3.11-slim

WORKDIR /opt/cqs
COPY setup.cfg setup.py pyproject.toml README.md ./
# Everything setup.cfg packages: the server with its console, the Spark data source.
COPY cqs ./cqs
COPY pyspark_cqs ./pyspark_cqs
RUN pip install --no-cache-dir . \
    && useradd --system --home-dir /var/lib/cqs --create-home cqs
USER cqs

ENV CQS_HOST=0.0.0.0 \
    CQS_PORT=9324 \
    CQS_DATA_DIR=/var/lib/cqs
EXPOSE 9324
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9324/health', timeout=2)"
CMD ["cqs", "serve"]
