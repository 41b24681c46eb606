#!/bin/bash
# Rendezvous mistakes end quickly with a clear message: the master port already in use, a
# world size larger than the processes started, and ranks disagreeing on the world size.
WORKER=$1
source "$(dirname "$0")/dist_lib.sh"
export OMP_NUM_THREADS=1

# 1. Port in use: something else listens on the master port.
port=$(free_port)
/usr/bin/python3 -c "import socket,time; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('',$port)); s.listen(); time.sleep(60)" &
holder=$!
sleep 0.5
DIST_TIMEOUT_S=20 timeout 60 "$WORKER" --master-port $port spawn 2 join > "$TMP/port.log" 2>&1
code=$?
kill $holder 2>/dev/null; wait $holder 2>/dev/null
[ $code -ne 0 ] && [ $code -ne 124 ] || { cat "$TMP/port.log"; fail "port in use: exit code $code"; }
expect_in "cannot host the rendezvous on 127.0.0.1:$port" "$TMP/port.log"
expect_in "in use" "$TMP/port.log"

# 2. WORLD_SIZE=3 but only ranks 0 and 1 exist: both fail naming rank 2.
port=$(free_port)
for r in 0 1; do
  RANK=$r WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port DIST_TIMEOUT_S=4 \
    timeout 60 "$WORKER" join > "$TMP/ws$r.log" 2>&1 &
done
wait %1; c0=$?; wait %2; c1=$?
[ $c0 -eq 1 ] && [ $c1 -eq 1 ] || fail "wrong world size: exit codes $c0 $c1, expected 1 1"
expect_in "ranks \[2\] did not join within 4 s of WORLD_SIZE=3" "$TMP/ws0.log"

# 3. Ranks disagree on the world size: both fail at once with the disagreement.
port=$(free_port)
RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port DIST_TIMEOUT_S=30 \
  timeout 60 "$WORKER" join > "$TMP/mm0.log" 2>&1 &
RANK=1 WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port DIST_TIMEOUT_S=30 \
  timeout 60 "$WORKER" join > "$TMP/mm1.log" 2>&1 &
wait %1; c0=$?; wait %2; c1=$?
[ $c0 -eq 1 ] && [ $c1 -eq 1 ] || fail "world size mismatch: exit codes $c0 $c1, expected 1 1"
for r in 0 1; do
  expect_in "rank 1 was started with WORLD_SIZE=3 but rank 0 with WORLD_SIZE=2" "$TMP/mm$r.log"
done
echo "PASS"
