# A generator for docker/test.sh, run by busybox sh inside the worker's sandbox (cwd: the
# workdir). It makes one edit, then tries to reach the network and writes what happened to
# egress.txt, which comes back in the diff: one line per target, "NAME HOST:PORT: " then the
# first line of the answer ("HTTP/1.1 ..." means it got through) or nc's error.
#
# The targets come from probe.targets beside this script (docker/test.sh writes it: the store
# at 127.0.0.1 and at its address on the internal network, and the host on that network).
bb=/opt/airlock/bin/busybox
here=$($bb dirname "$0")

$bb printf '\n## Probed from the sandbox\n\nSee egress.txt.\n' >> README.md

: > egress.txt
while read -r name host port; do
  [ -n "$name" ] || continue
  # stdin stays open 2 s: busybox nc exits at its end, maybe before the answer arrives.
  answer=$({ $bb printf 'GET / HTTP/1.0\r\n\r\n'; $bb sleep 2; } | $bb timeout 5 $bb nc -w 3 "$host" "$port" 2>&1 | $bb head -n 1 | $bb tr -d '\r')
  [ -n "$answer" ] || answer="no answer"
  $bb printf '%s %s:%s: %s\n' "$name" "$host" "$port" "$answer" >> egress.txt
done < "$here/probe.targets"
