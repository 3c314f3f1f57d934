#!/usr/bin/env bash
# Every check of issue 24 on a lent GPU machine with 16 cores, in one go (README "Performance").
#
#   bash benchmarks/device_check.sh          # on the device, from the repository root
#   QUICK=1 PGPORT=5433 WHL=dir PY=.venv/bin/python bash benchmarks/device_check.sh   # a rehearsal
#     (wheels of pgserver and py-spy for this Python in dir; any machine)
#   CHECKS=many MANY_ARGS="--workers 1,16 ..." bash benchmarks/device_check.sh   # one check again
#
# The device has Python and torch but none of palaestra's dependencies, and no network: it takes
# them as wheels from .whl/ (made beforehand on a machine with pip, for the device's Python:
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 ... -d .whl
#     aiomultiprocess pyzmq setproctitle 'sqlalchemy<2.2' greenlet ruamel.yaml ruamel.yaml.clib
#     msgspec alembic mako psycopg psycopg-binary gymnasium farama-notifications py-spy
#     pgserver fasteners platformdirs
# ), palaestra itself from this checkout (PYTHONPATH). PostgreSQL is the server binaries that
# the pgserver wheel carries, started on 127.0.0.1:$PGPORT as an unprivileged user (the device
# runs commands as root, which PostgreSQL refuses). Output: $OUT/device_check.txt (everything
# printed), the benchmarks' JSON, and the py-spy stacks of the 16-worker runs.
set -uo pipefail
OUT=${OUT:-/tmp/device-check}
mkdir -p "$OUT"
PGPORT=${PGPORT:-5432}
QUICK=${QUICK:-}
CHECKS=${CHECKS:-gpu many vector}
WHL=${WHL:-.whl}  # the wheels for the device's Python (a rehearsal names its own)
PY=${PY:-python3}
export PYTHONUNBUFFERED=1
exec > >(tee "$OUT/device_check.txt") 2>&1

SITE=/tmp/palaestra-site
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target "$SITE" "$WHL"/*.whl || exit 1
export PYTHONPATH="$PWD:$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$SITE/bin:$PATH"

echo "== machine"
date -u
nproc
grep -m1 "model name" /proc/cpuinfo
free -g | head -2
nvidia-smi -L 2>/dev/null || echo "no nvidia-smi"
"$PY" -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, \
'cuda', torch.cuda.is_available())" 2>&1 || echo "no torch"
"$PY" -c "import palaestra, zmq, sqlalchemy, psycopg; print('palaestra from', \
palaestra.__file__, 'pyzmq', zmq.__version__, 'sqlalchemy', sqlalchemy.__version__)" || exit 1

echo "== PostgreSQL (pgserver's binaries) on 127.0.0.1:$PGPORT"
PGBIN="$SITE/pgserver/pginstall/bin"
PGDATA=/tmp/palaestra-pgdata
id pg >/dev/null 2>&1 || useradd -M pg
chmod -R a+rX "$SITE/pgserver/pginstall"
rm -rf "$PGDATA" && mkdir -p "$PGDATA" && chown pg "$PGDATA"
POSTGRES=""
if runuser -u pg -- "$PGBIN/initdb" -D "$PGDATA" --auth=trust -U postgres -E utf8 \
  >"$OUT/initdb.log" 2>&1 &&
  runuser -u pg -- "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/log" -w \
    -o "-h 127.0.0.1 -p $PGPORT -k $PGDATA -c max_connections=200" start &&
  "$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres test; then
  POSTGRES="postgresql+psycopg://postgres@127.0.0.1:$PGPORT/test"
  "$PGBIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres test -tAc "select version()"
else
  echo "PostgreSQL did not start: the many-core runs use SQLite only"
  cat "$OUT/initdb.log"
fi

if [ -n "$QUICK" ]; then
  GPU_ARGS=${GPU_ARGS:-"--workers 1 --episodes 5 --throughput-steps 640"}
  MANY_ARGS=${MANY_ARGS:-"--workers 1,2 --repeat 1 --delay-steps 300 --steps 1000"}
  VECTOR_ARGS=${VECTOR_ARGS:-"--games 8 --steps 4000 --repeat 1"}
else
  GPU_ARGS=${GPU_ARGS:-"--workers 1 4 --throughput-steps 20000"}
  MANY_ARGS=${MANY_ARGS:-"--workers 1,4,16 --repeat 3 --delay-steps 2000 --steps 4000 \
    --profile /tmp/palaestra-profile"}
  VECTOR_ARGS=${VECTOR_ARGS:-"--games 64 --steps 60000 --repeat 3"}
fi

case " $CHECKS " in *" gpu "*)
  echo "== 1. gpu_check $GPU_ARGS"
  # shellcheck disable=SC2086
  timeout 150 "$PY" benchmarks/gpu_check.py $GPU_ARGS
  ;;
esac

case " $CHECKS " in *" many "*)
  echo "== 2. many_cores $MANY_ARGS"
  STORE=${MANY_STORE:-sqlite}
  [ -z "${MANY_STORE:-}" ] && [ -n "$POSTGRES" ] && STORE=both
  # shellcheck disable=SC2086
  timeout 300 "$PY" benchmarks/many_cores.py $MANY_ARGS --agents 4 --store "$STORE" \
    --postgres "${POSTGRES:-none}"
  cp benchmarks/results/many_cores.json "$OUT/" 2>/dev/null
  tar czf "$OUT/profile.tar.gz" -C /tmp palaestra-profile 2>/dev/null
  ;;
esac

case " $CHECKS " in *" vector "*)
  echo "== 3. vector_envs $VECTOR_ARGS"
  # shellcheck disable=SC2086
  timeout 80 "$PY" benchmarks/vector_envs.py $VECTOR_ARGS
  cp benchmarks/results/vector_envs.json "$OUT/" 2>/dev/null
  ;;
esac

[ -n "$POSTGRES" ] && runuser -u pg -- "$PGBIN/pg_ctl" -D "$PGDATA" -m fast stop >/dev/null
echo "== done $(date -u)"
