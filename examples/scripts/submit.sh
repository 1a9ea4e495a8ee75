#!/bin/sh
# Submits a mission file to a flotilla board's HTTP API and follows it to the end, with curl alone.
#
#   FLOTILLA_API_TOKEN=… sh submit.sh mission.yaml [http://127.0.0.1:3000/api/v1]
#
# The board (`flotilla board`, started with the same FLOTILLA_API_TOKEN) submits the mission, and
# a worker host must run against its Redis, or the mission waits in its queue. Over HTTP the
# mission's workspace is an absolute path on the board's machine or a URL.
#
# stdout: each event as one JSON line as it comes, then the final status object (the shape of
# `flotilla status <id> --json`) as the last line. Exit 0 when the mission is done, 1 when it is
# partial, failed or cancelled, 2 when the board refused the mission (its problems on stderr), 3
# when the board could not be reached or has lost Redis: the CLI's exit codes.
set -eu

file=${1:?usage: submit.sh <mission.yaml> [API base URL, default \$FLOTILLA_API or http://127.0.0.1:3000/api/v1]}
api=${2:-${FLOTILLA_API:-http://127.0.0.1:3000/api/v1}}

# The token goes to curl in a file only this user can read, never on its command line (ps shows that).
umask 077
headers=$(mktemp)
trap 'rm -f "$headers"' EXIT
if [ -n "${FLOTILLA_API_TOKEN:-}" ]; then
  printf 'Authorization: Bearer %s\n' "$FLOTILLA_API_TOKEN" >"$headers"
fi

reply=$(curl -sS -X POST "$api/missions" -H @"$headers" -H 'Content-Type: application/yaml' \
  --data-binary @"$file" -w '\n%{http_code}') || exit 3
code=$(printf '%s\n' "$reply" | tail -n 1)
body=$(printf '%s\n' "$reply" | sed '$d')
if [ "$code" != 201 ]; then
  printf 'submit.sh: the board answered %s: %s\n' "$code" "$body" >&2
  case $code in
    5*) exit 3 ;;
    *) exit 2 ;;
  esac
fi
# The reply starts with the id: {"id":"…","branch":…}.
id=$(printf '%s' "$body" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
echo "submit.sh: mission $id submitted" >&2

# Server-Sent Events until the mission has finished; each `data:` line is one event's JSON.
curl -sS -N -H @"$headers" "$api/missions/$id/events" | sed -n 's/^data: //p'

status=$(curl -sS -H @"$headers" "$api/missions/$id") || exit 3
printf '%s\n' "$status"
# The mission's own status is the first "status" of the object (the tasks' come after it).
case $(printf '%s' "$status" | grep -o '"status":"[a-z_]*"' | head -n 1) in
  '"status":"done"') exit 0 ;;
  '"status":"running"') exit 3 ;;
  *) exit 1 ;;
esac
