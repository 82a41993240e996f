FROM debian:12
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-venv mariadb-server mariadb-client mariadb-backup mydumper zstd pigz strace util-linux \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY requirements.txt .
RUN python3 -m venv /venv && /venv/bin/pip install -r requirements.txt
ENV PATH=/venv/bin:$PATH PYTHONPATH=/app/backend:/app
COPY . .
