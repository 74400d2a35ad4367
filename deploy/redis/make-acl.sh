#!/bin/sh
# Write deploy/redis/users.acl: the daemon's least-privilege user "tuner" (password from
# deploy/secrets/redis_tuner_password, stored as its SHA-256 so the file holds no plaintext),
# a read-only "monitor" user for redis_exporter, and the default user disabled.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
pw=$(cat "$here/../secrets/redis_tuner_password")
hash=$(printf '%s' "$pw" | sha256sum | cut -d' ' -f1)
cat > "$here/users.acl" <<ACL
user default off
user tuner on #$hash resetkeys resetchannels -@all +config|get +config|set +info +ping +xrange ~cachetuner:sampled
user monitor on >monitor resetkeys -@all +info +ping +config|get +client|list +slowlog|get +latency|latest +memory|stats +cluster|info +dbsize +select +scan +type +strlen +xinfo|stream +latency|histogram
ACL
echo "wrote $here/users.acl"
