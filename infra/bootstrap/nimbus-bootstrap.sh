#!/usr/bin/env bash
# Turn a fresh instance (Amazon Linux 2023) into a Nimbus crawl worker, crawl committer,
# search server or indexer, then tell CloudFormation whether its service came up healthy.
#
# Run by the launch template's user data (infra/nimbus.yaml) as root, from the release bundle
# the user data copied (--release-dir). It ships its own boot log to CloudWatch first, installs
# exactly this release into /opt/nimbus/venv from the bundle's wheelhouse (search: and compiles its
# kernels into the service's numba cache), writes the non-secret settings to
# /etc/nimbus/nimbus.env (each process reads its database user's secret itself),
# fetches the RDS CA bundle, installs the role's systemd unit and the journal exporter, starts
# them, waits until the service is healthy (nimbus-health) and sends cfn-signal: success, or
# failure with the reason.
#
#   nimbus-bootstrap.sh --role worker|committer|search|indexer --release-dir DIR \
#     --release-url s3://ARTIFACTS/releases/V-D/ --bucket DATA_BUCKET --db-instance ID \
#     --db-host HOST --db-port PORT --db-secret ARN --region REGION --log-group GROUP \
#     --boot-log-group GROUP
#     [--stack NAME --signal-resource LOGICAL_ID] (cfn-signal to that resource; none without)
#     [--metrics-port PORT] (worker, committer: Prometheus /metrics, NIMBUS_METRICS_PORT)
#     [--seeds "URL ..."] (committer: added to the frontier before it starts)
#     [--workers N] [--admin-token-secret ARN] [--proxy-cidrs CIDR,...] (search: uvicorn
#     workers; the secret holding the /admin token; the load balancer's subnets)
#     [--env KEY=VALUE]... (more settings for nimbus.env: the indexer's EMR settings)
#     [--rds-ca-sha256 HEX] [--health-timeout SECONDS] [--root DIR] [--dry-run]
#
# --root DIR writes every file under DIR; --dry-run writes the files and prints the commands
# it would run instead of running them, the units' commands too (tests/integration/deploy).
set -Eeuo pipefail

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "nimbus-bootstrap: $*" >&2; exit 2; }

ROLE="" RELEASE_DIR="" RELEASE_URL="" BUCKET="" DB_INSTANCE="" DB_HOST="" DB_PORT="" DB_SECRET=""
REGION="" LOG_GROUP="" BOOT_LOG_GROUP="" STACK="" SIGNAL_RESOURCE="" SEEDS="" WORKERS="2"
METRICS_PORT="0" ADMIN_TOKEN_SECRET="" PROXY_CIDRS="" RDS_CA_SHA256="" HEALTH_TIMEOUT="480"
ROOT="" DRY_RUN=0
EXTRA_SETTINGS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --role) ROLE="${2-}"; shift 2 ;;
    --release-dir) RELEASE_DIR="${2-}"; shift 2 ;;
    --release-url) RELEASE_URL="${2-}"; shift 2 ;;
    --bucket) BUCKET="${2-}"; shift 2 ;;
    --db-instance) DB_INSTANCE="${2-}"; shift 2 ;;
    --db-host) DB_HOST="${2-}"; shift 2 ;;
    --db-port) DB_PORT="${2-}"; shift 2 ;;
    --db-secret) DB_SECRET="${2-}"; shift 2 ;;
    --region) REGION="${2-}"; shift 2 ;;
    --log-group) LOG_GROUP="${2-}"; shift 2 ;;
    --boot-log-group) BOOT_LOG_GROUP="${2-}"; shift 2 ;;
    --stack) STACK="${2-}"; shift 2 ;;
    --signal-resource) SIGNAL_RESOURCE="${2-}"; shift 2 ;;
    --seeds) SEEDS="${2-}"; shift 2 ;;
    --workers) WORKERS="${2-}"; shift 2 ;;
    --metrics-port) METRICS_PORT="${2-}"; shift 2 ;;
    --admin-token-secret) ADMIN_TOKEN_SECRET="${2-}"; shift 2 ;;
    --proxy-cidrs) PROXY_CIDRS="${2-}"; shift 2 ;;
    --env) EXTRA_SETTINGS+=("${2-}"); shift 2 ;;
    --rds-ca-sha256) RDS_CA_SHA256="${2-}"; shift 2 ;;
    --health-timeout) HEALTH_TIMEOUT="${2-}"; shift 2 ;;
    --root) ROOT="${2-}"; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

for pair in role:ROLE release-dir:RELEASE_DIR release-url:RELEASE_URL bucket:BUCKET \
            db-instance:DB_INSTANCE db-host:DB_HOST db-port:DB_PORT db-secret:DB_SECRET region:REGION \
            log-group:LOG_GROUP boot-log-group:BOOT_LOG_GROUP; do
  var="${pair#*:}"
  [ -n "${!var}" ] || die "missing --${pair%%:*} (see --help)"
done
case "$ROLE" in
  worker|committer|search|indexer) ;;
  *) die "--role must be worker, committer, search or indexer, not '$ROLE'" ;;
esac
[[ "$WORKERS" =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive number, not '$WORKERS'"
[[ "$DB_PORT" =~ ^[0-9]+$ ]] || die "--db-port must be a number, not '$DB_PORT'"
[[ "$HEALTH_TIMEOUT" =~ ^[0-9]+$ ]] || die "--health-timeout must be seconds, not '$HEALTH_TIMEOUT'"
[[ "$METRICS_PORT" =~ ^[0-9]{1,5}$ ]] && [ "$METRICS_PORT" -le 65535 ] \
  || die "--metrics-port must be a port number (0: no /metrics), not '$METRICS_PORT'"
[[ "$RELEASE_URL" =~ ^s3://[a-z0-9.-]+/releases/[A-Za-z0-9._+-]+/$ ]] \
  || die "--release-url must be s3://BUCKET/releases/NAME/, not '$RELEASE_URL'"
[[ "$RDS_CA_SHA256" =~ ^([0-9a-f]{64})?$ ]] || die "--rds-ca-sha256 must be 64 hex digits, not '$RDS_CA_SHA256'"
[ -z "$STACK" ] || [ -n "$SIGNAL_RESOURCE" ] || die "--stack needs --signal-resource (the group to signal)"
# Workers lease from the shared frontier; the committers seed it before they start.
[ -z "$SEEDS" ] || [ "$ROLE" = committer ] || die "--seeds is for the committer role, not $ROLE"
[ -z "$ADMIN_TOKEN_SECRET$PROXY_CIDRS" ] || [ "$ROLE" = search ] \
  || die "--admin-token-secret and --proxy-cidrs are for the search role, not $ROLE"
[[ "$PROXY_CIDRS" =~ ^([0-9./]+(,[0-9./]+)*)?$ ]] \
  || die "--proxy-cidrs must be CIDRs separated by commas, not '$PROXY_CIDRS'"
SETTING_RE='^[A-Z][A-Z0-9_]*=[A-Za-z0-9._:/@+,=-]*$'  # ids, ARNs, numbers: nothing a shell or systemd reads
for setting in ${EXTRA_SETTINGS[@]+"${EXTRA_SETTINGS[@]}"}; do
  [[ "$setting" =~ $SETTING_RE ]] \
    || die "--env must be KEY=VALUE (capitals; letters, digits and ._:/@+,=- in the value), not '$setting'"
done

run() {  # run a command, or say it in a dry run
  if [ "$DRY_RUN" = 1 ]; then echo "would run: $*"; else "$@"; fi
}

put() {  # put FILE MODE: write stdin to $ROOT/FILE
  local path="$ROOT$1"
  mkdir -p "$(dirname "$path")"
  cat > "$path"
  chmod "$2" "$path"
}

# cfn-signal lives in /opt/aws/bin (aws-cfn-bootstrap); at the end of PATH so that a stand-in
# earlier on PATH (the boot rehearsal's) is the one found.
PATH="$PATH:/opt/aws/bin"

signal() {  # signal 0|1 REASON: tell CloudFormation, when a stack operation waits for this instance
  if [ -z "$STACK" ]; then
    echo "nimbus-bootstrap: no --stack, no signal: $2"
    return 0
  fi
  # Outside a creation or rollout (a scale-out, an unhealthy host replaced) nobody waits for
  # the signal and CloudFormation refuses it: that must not fail the boot.
  run cfn-signal --stack "$STACK" --resource "$SIGNAL_RESOURCE" --region "$REGION" \
      --exit-code "$1" --reason "${2:0:900}" \
    || echo "nimbus-bootstrap: cfn-signal not accepted (no stack operation waits for this instance)" >&2
}

STEP="checking the arguments"
fail() {  # fail REASON: signal failure with the reason, and stop
  trap - ERR
  echo "nimbus-bootstrap: FAILED $ROLE: $1" >&2
  signal 1 "$ROLE boot failed: $1 (log group $BOOT_LOG_GROUP, stream $ROLE/<instance id>)"
  exit 1
}
trap 'fail "$STEP: \"$BASH_COMMAND\" exited $? (line $LINENO)"' ERR

UNIT="nimbus-$ROLE"
NIMBUS=/opt/nimbus/venv/bin/nimbus
NUMBA_CACHE=/var/lib/nimbus/numba-cache  # the compiled search kernels (the units' NUMBA_CACHE_DIR)
ADMIN_ENV=/run/nimbus-admin/admin.env  # tmpfs, root only: the token never reaches a disk
RDS_CA=/etc/nimbus/rds-ca.pem
RDS_CA_URL=https://truststore.pki.rds.amazonaws.com/global/global-bundle.pem
AGENT_CONFIG=/opt/aws/amazon-cloudwatch-agent/etc/amazon-cloudwatch-agent.json

# 0. Logs first, so that whatever fails next is read in CloudWatch: journald bounded on the
#    30 GB disk, the CloudWatch agent shipping this boot's log (cloud-init-output.log: the user
#    data and this script) and the role's service log (its journal, exported to a file the agent
#    tails: the agent on Amazon Linux 2023 reads files, not the journal), rotated by size.
STEP="step 0 (logs)"
put /etc/systemd/journald.conf.d/50-nimbus.conf 0644 <<'EOF'
# Written by nimbus-bootstrap.sh: the journal stays well inside the 30 GB root volume.
[Journal]
SystemMaxUse=1G
SystemKeepFree=4G
MaxRetentionSec=1month
EOF
put /etc/logrotate.d/nimbus 0644 <<'EOF'
# Written by nimbus-bootstrap.sh. The exporter restarts after each rotation and resumes
# from its journal cursor: no line lost, none repeated.
/var/log/nimbus/*.log {
    size 100M
    rotate 3
    compress
    missingok
    notifempty
    postrotate
        /usr/bin/systemctl restart nimbus-logs.service
    endscript
}
EOF
put /etc/systemd/system/logrotate.timer.d/hourly.conf 0644 <<'EOF'
# Size-based rotation needs a look more often than the default daily one.
[Timer]
OnCalendar=
OnCalendar=hourly
AccuracySec=1m
EOF
put "$AGENT_CONFIG" 0644 <<EOF
{
  "agent": {"run_as_user": "root"},
  "logs": {
    "logs_collected": {
      "files": {
        "collect_list": [
          {"file_path": "/var/log/cloud-init-output.log", "log_group_name": "$BOOT_LOG_GROUP",
           "log_stream_name": "$ROLE/{instance_id}"},
          {"file_path": "/var/log/nimbus/$ROLE.log", "log_group_name": "$LOG_GROUP",
           "log_stream_name": "{instance_id}", "timestamp_format": "%Y-%m-%dT%H:%M:%S"}
        ]
      }
    }
  }
}
EOF
run dnf install -y -q amazon-cloudwatch-agent aws-cfn-bootstrap logrotate
run systemctl restart systemd-journald
run "$ROOT/opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl" -a fetch-config -m ec2 -s \
  -c "file:$AGENT_CONFIG"

# 1. Packages, the service user, and exactly this release in its own venv: every dependency
#    from the bundle's wheelhouse, each checked against the hash its requirements.txt pins;
#    no package index is asked.
STEP="step 1 (install)"
run dnf install -y -q python3.11 python3.11-pip
# The service user's home, /var/lib/nimbus, is the services' state.
run useradd --system --create-home --home-dir /var/lib/nimbus --shell /sbin/nologin nimbus
run python3.11 -m venv "$ROOT/opt/nimbus/venv"
run "$ROOT/opt/nimbus/venv/bin/python" -m pip install --quiet --no-index --require-hashes \
  --find-links "$RELEASE_DIR/wheelhouse" -r "$RELEASE_DIR/requirements.txt"

# The search kernels compiled now, from the release just installed, into the cache the service
# reads: as its user (the files are the service's to update) with its NUMBA_CACHE_DIR. numba keys
# the cache by the kernels' source files and this CPU, so it is filled here, on the instance; the
# service's first start then loads every kernel instead of compiling them (a minute or more, each
# uvicorn worker at once) while /healthz waits. Only search runs them.
if [ "$ROLE" = search ]; then
  STEP="step 1 (search kernels)"
  run runuser -u nimbus -- env NUMBA_CACHE_DIR="$ROOT$NUMBA_CACHE" "$ROOT$NIMBUS" warm-kernels \
    || fail "nimbus warm-kernels, as user nimbus, could not compile the search kernels into $NUMBA_CACHE (its error is above)"
fi

# 2. Settings: no secret here. Each process reads its database user's secret
#    (NIMBUS_DATABASE_SECRET) when it connects, and again after a rejected password.
STEP="step 2 (settings)"
ADMIN_SECRET=""
if [ "$ROLE" = indexer ]; then
  # The master user's secret, for migrations and for creating the role users: RDS made it
  # (ManageMasterUserPassword), and only RDS can say its ARN.
  if [ "$DRY_RUN" = 1 ]; then
    echo "would run: aws rds describe-db-instances --region $REGION --db-instance-identifier $DB_INSTANCE"
    ADMIN_SECRET="arn:dry-run:master-secret-of-$DB_INSTANCE"
  else
    ADMIN_SECRET="$(aws rds describe-db-instances --region "$REGION" --db-instance-identifier "$DB_INSTANCE" \
      --query 'DBInstances[0].MasterUserSecret.SecretArn' --output text)"
    [[ "$ADMIN_SECRET" == arn:* ]] || fail "DB instance $DB_INSTANCE has no RDS-managed master secret"
  fi
fi
{
  echo "# Written by nimbus-bootstrap.sh for the $ROLE role; no secrets in this file."
  echo "AWS_REGION=$REGION"
  echo "NIMBUS_BLOB_URL=s3://$BUCKET/nimbus"
  echo "NIMBUS_RELEASE_URL=$RELEASE_URL"
  echo "NIMBUS_DATABASE_INSTANCE=$DB_INSTANCE"
  echo "NIMBUS_DATABASE_HOST=$DB_HOST"
  echo "NIMBUS_DATABASE_PORT=$DB_PORT"
  echo "NIMBUS_DATABASE_NAME=nimbus"
  echo "NIMBUS_DATABASE_SECRET=$DB_SECRET"
  echo "NIMBUS_DATABASE_TLS_CA=$RDS_CA"
  [ -z "$ADMIN_SECRET" ] || echo "NIMBUS_DATABASE_ADMIN_SECRET=$ADMIN_SECRET"
  echo "NIMBUS_VAR_DIR=/var/lib/nimbus"
  echo "NIMBUS_CLOUDWATCH_NAMESPACE=Nimbus"
  [ -z "$STACK" ] || echo "NIMBUS_STACK_NAME=$STACK"
  case "$ROLE" in
    search)
      echo "NIMBUS_HOST=0.0.0.0"
      echo "NIMBUS_PORT=8000"
      echo "NIMBUS_SERVE_WORKERS=$WORKERS"
      # Not the token: the secret holding it, read at each start of the service (step 4).
      [ -z "$ADMIN_TOKEN_SECRET" ] || echo "NIMBUS_ADMIN_TOKEN_SECRET=$ADMIN_TOKEN_SECRET"
      # The app believes X-Forwarded-Proto/-For only from these (the load balancer): behind
      # HTTPS it then sees https (the admin session cookie is marked Secure), and the rate
      # limit the client's address.
      [ -z "$PROXY_CIDRS" ] || echo "NIMBUS_PROXY_CIDRS=$PROXY_CIDRS"
      ;;
    worker|committer)
      # /metrics listens on every interface; the security groups admit only the stack's
      # Prometheus (MetricsScraperSecurityGroup), if it has one.
      if [ "$METRICS_PORT" != 0 ]; then
        echo "NIMBUS_HOST=0.0.0.0"
        echo "NIMBUS_METRICS_PORT=$METRICS_PORT"
      fi
      [ "$ROLE" != committer ] || echo "NIMBUS_SEEDS=$SEEDS"
      ;;
  esac
  for setting in ${EXTRA_SETTINGS[@]+"${EXTRA_SETTINGS[@]}"}; do echo "$setting"; done
} | put /etc/nimbus/nimbus.env 0644

# 3. The RDS CA bundle every process verifies the database with (require_secure_transport is
#    on): shipped in the release when it has one, else AWS's global bundle over HTTPS, checked
#    against RdsCaBundleSha256 when the stack pins one.
STEP="step 3 (RDS CA bundle)"
if [ -f "$RELEASE_DIR/rds-ca.pem" ]; then
  put "$RDS_CA.new" 0644 < "$RELEASE_DIR/rds-ca.pem"
else
  mkdir -p "$(dirname "$ROOT$RDS_CA")"
  run curl -fsS --proto =https --retry 5 --max-time 60 -o "$ROOT$RDS_CA.new" "$RDS_CA_URL"
fi
if [ "$DRY_RUN" = 0 ] || [ -f "$ROOT$RDS_CA.new" ]; then
  grep -q -- "-----BEGIN CERTIFICATE-----" "$ROOT$RDS_CA.new" \
    || fail "the RDS CA bundle holds no certificate"
  if [ -n "$RDS_CA_SHA256" ]; then
    got="$(sha256sum "$ROOT$RDS_CA.new" | cut -d' ' -f1)"
    [ "$got" = "$RDS_CA_SHA256" ] \
      || fail "the RDS CA bundle's sha256 is $got, not the $RDS_CA_SHA256 the stack pins (RdsCaBundleSha256)"
  fi
  mv -f "$ROOT$RDS_CA.new" "$ROOT$RDS_CA"
fi

# 4. The role's unit. COMMANDS holds its Exec lines in the order they run. Only the indexer
#    migrates the schema and creates the role users (as the master user); the other roles'
#    users may not change the schema, and their groups start after the indexer's
#    (DependsOn: IndexerGroup), so the schema and their users are there when they connect.
STEP="step 4 (units)"
COMMANDS=""
EXTRA_ENV=""
add() { COMMANDS+="${COMMANDS:+$'\n'}$1"; }
case "$ROLE" in
  worker)
    DESCRIPTION="Nimbus crawl worker"
    # A worker ends when the cluster has nothing left to fetch (or after a million pages);
    # started again a minute later, it takes back its own batches and leases more.
    add "ExecStart=$NIMBUS crawl worker --quiet --max-pages 1000000"
    RESTART="always"
    RESTART_SEC=60
    ;;
  committer)
    DESCRIPTION="Nimbus crawl committer (one active, the other standing by)"
    # Seeding only adds frontier rows not there yet: both committers may run it, at every
    # start, without harm. ($NIMBUS_SEEDS unbraced: systemd splits it into one URL a word.)
    [ -z "$SEEDS" ] || add 'ExecStartPre='"$NIMBUS"' crawl seed $NIMBUS_SEEDS'
    add "ExecStart=$NIMBUS crawl committer"
    RESTART="always"
    RESTART_SEC=10
    ;;
  search)
    DESCRIPTION="Nimbus search service"
    if [ -n "$ADMIN_TOKEN_SECRET" ]; then
      # As root ("+"): the token goes to a file only root reads, which systemd loads into
      # the service's environment (NIMBUS_ADMIN_TOKEN) for the commands after it. A new
      # value in the secret takes effect at the next restart.
      add "ExecStartPre=+/opt/nimbus/bin/nimbus-admin-token $ADMIN_ENV"
      EXTRA_ENV="EnvironmentFile=-$ADMIN_ENV"
    fi
    add 'ExecStart='"$NIMBUS"' serve --workers ${NIMBUS_SERVE_WORKERS}'
    RESTART="on-failure"
    RESTART_SEC=5
    ;;
  indexer)
    DESCRIPTION="Nimbus indexer (migrations, database users, index builds on EMR)"
    # Expand/contract migrations: this release's schema still serves the release before it.
    add "ExecStartPre=$NIMBUS migrate"
    add "ExecStartPre=$NIMBUS db users"
    add "ExecStart=$NIMBUS index daemon"
    RESTART="always"
    RESTART_SEC=30
    ;;
esac

if [ "$ROLE" = search ]; then
  put /opt/nimbus/bin/nimbus-admin-token 0755 <<'EOF'
#!/usr/bin/env bash
# nimbus-admin-token ENV_FILE: NIMBUS_ADMIN_TOKEN from the secret NIMBUS_ADMIN_TOKEN_SECRET
# (in AWS_REGION), written to ENV_FILE for root only. Run by nimbus-search.service.
set -euo pipefail
out="${1:?usage: nimbus-admin-token ENV_FILE}"
secret="${NIMBUS_ADMIN_TOKEN_SECRET:?is not set (/etc/nimbus/nimbus.env)}"
token="$(aws secretsmanager get-secret-value --region "${AWS_REGION:?is not set}" \
  --secret-id "$secret" --query SecretString --output text)"
case "$token" in
  "" | *[!A-Za-z0-9._~+/=-]*)
    echo "nimbus-admin-token: secret $secret is empty or holds characters an environment" \
      "file cannot carry; put a token of letters, digits and ._~+/=- in it" >&2
    exit 1 ;;
esac
umask 077
mkdir -p "$(dirname "$out")"
printf 'NIMBUS_ADMIN_TOKEN=%s\n' "$token" > "$out.new"
mv -f "$out.new" "$out"
EOF
fi

put "/etc/systemd/system/$UNIT.service" 0644 <<EOF
[Unit]
Description=$DESCRIPTION
Documentation=https://github.com/nimbus-search/nimbus/blob/main/docs/deploy.md
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User=nimbus
Group=nimbus
EnvironmentFile=/etc/nimbus/nimbus.env
# numba's compiled search kernels are cached on disk (filled in step 1 for search); the
# release's tree is read-only here.
Environment=NUMBA_CACHE_DIR=$NUMBA_CACHE
${EXTRA_ENV:+$EXTRA_ENV
}$COMMANDS
Restart=$RESTART
RestartSec=$RESTART_SEC
StandardOutput=journal
StandardError=journal
SyslogIdentifier=$UNIT
NoNewPrivileges=yes
PrivateTmp=yes
ProtectSystem=strict
ProtectHome=yes
ReadWritePaths=/var/lib/nimbus
ProtectKernelTunables=yes
ProtectControlGroups=yes
RestrictSUIDSGID=yes
LimitNOFILE=65536

[Install]
WantedBy=multi-user.target
EOF

# The journal stays the source; this exporter appends the unit's lines to the file the
# CloudWatch agent tails, resuming after its cursor (no line lost or repeated on restarts).
put /etc/systemd/system/nimbus-logs.service 0644 <<EOF
[Unit]
Description=Export $UNIT's journal to /var/log/nimbus/$ROLE.log for the CloudWatch agent
After=systemd-journald.service

[Service]
Type=simple
ExecStartPre=/usr/bin/install -d -m 0755 /var/log/nimbus /var/lib/nimbus-logs
ExecStart=/bin/sh -c 'exec /usr/bin/journalctl --follow --lines=all --output=short-iso --cursor-file=/var/lib/nimbus-logs/cursor --unit=$UNIT >> /var/log/nimbus/$ROLE.log'
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
EOF

# What "healthy" means for each role (docs/deploy.md, "Rollouts"): search answers /healthz 200
# on the instance (what the load balancer asks); the others got past their start commands
# (a migration or seeding that fails fails the unit) and their process has stayed up for
# 30 s (six heartbeats, each a database transaction), answering /metrics when it has one; a
# worker that ran and ended cleanly (an empty frontier on a new stack) is healthy too. Three
# failed starts in a row, or no health by the timeout, is a failed boot.
put /opt/nimbus/bin/nimbus-health 0755 <<'EOF'
#!/usr/bin/env bash
# nimbus-health ROLE [--timeout S] [--settle S] [--interval S] [--metrics-port P]
# Wait until nimbus-ROLE.service is healthy: exit 0 and say so, or exit 1 and say why not.
set -euo pipefail
role="${1:?usage: nimbus-health ROLE [--timeout S] [--settle S] [--interval S] [--metrics-port P]}"
shift
timeout=480 settle=30 interval=5 metrics_port=0
while [ $# -gt 0 ]; do
  case "$1" in
    --timeout) timeout="$2"; shift 2 ;;
    --settle) settle="$2"; shift 2 ;;
    --interval) interval="$2"; shift 2 ;;
    --metrics-port) metrics_port="$2"; shift 2 ;;
    *) echo "nimbus-health: unknown argument $1" >&2; exit 2 ;;
  esac
done
unit="nimbus-$role.service"
started=$SECONDS pid_seen="" since=0
while :; do
  declare -A p=()
  while IFS='=' read -r key value; do p[$key]="$value"; done < <(systemctl show "$unit" \
    -p ActiveState -p SubState -p Result -p NRestarts -p ExecMainPID -p ExecMainStatus \
    -p ExecMainStartTimestampMonotonic -p ExecMainExitTimestampMonotonic)
  state="${p[ActiveState]:-?}/${p[SubState]:-?}"
  if [ "${p[Result]:-success}" != success ] && [ "${p[NRestarts]:-0}" -ge 2 ]; then
    echo "$unit failed to start 3 times (${p[Result]}, exit status ${p[ExecMainStatus]:-?}): journalctl -u $unit"
    exit 1
  fi
  if [ "$state" = active/running ]; then
    case "$role" in
      search)
        code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 http://127.0.0.1:8000/healthz || true)"
        if [ "$code" = 200 ]; then echo "$unit answers /healthz with 200"; exit 0; fi
        ;;
      *)
        if [ "${p[ExecMainPID]:-0}" != "$pid_seen" ]; then pid_seen="${p[ExecMainPID]:-0}" since=$SECONDS; fi
        if [ $((SECONDS - since)) -ge "$settle" ]; then
          if [ "$metrics_port" = 0 ]; then
            echo "$unit has run for ${settle}s (pid $pid_seen)"; exit 0
          elif curl -sf -o /dev/null --max-time 5 "http://127.0.0.1:$metrics_port/metrics"; then
            echo "$unit has run for ${settle}s (pid $pid_seen) and answers /metrics"; exit 0
          fi
        fi
        ;;
    esac
  elif [ "$role" = worker ] && [ "${p[Result]:-}" = success ] && [ "${p[ExecMainStatus]:-}" = 0 ] \
      && [ "${p[ExecMainExitTimestampMonotonic]:-0}" != 0 ] && [ "${p[ExecMainStartTimestampMonotonic]:-0}" != 0 ]; then
    echo "$unit ran and ended cleanly (nothing to fetch yet); it starts again by itself"
    exit 0
  fi
  if [ $((SECONDS - started)) -ge "$timeout" ]; then
    echo "$unit not healthy after ${timeout}s (state $state, last result ${p[Result]:-?}): journalctl -u $unit"
    exit 1
  fi
  sleep "$interval"
done
EOF

# 5. Start everything, wait for the service to be healthy, and say so to CloudFormation.
STEP="step 5 (start)"
if [ "$DRY_RUN" = 1 ]; then  # and say what the role's unit will run, in order
  while IFS= read -r line; do echo "would run in $UNIT.service: ${line#*=}"; done <<< "$COMMANDS"
fi
run systemctl daemon-reload
run systemctl restart logrotate.timer
run systemctl enable --now nimbus-logs.service "$UNIT.service"
HEALTH=(/opt/nimbus/bin/nimbus-health "$ROLE" --timeout "$HEALTH_TIMEOUT")
[ "$METRICS_PORT" = 0 ] || HEALTH+=(--metrics-port "$METRICS_PORT")
if [ "$DRY_RUN" = 1 ]; then
  run "${HEALTH[@]}"
  HEALTHY="$ROLE healthy (dry run)"
elif ! HEALTHY="$("$ROOT${HEALTH[0]}" "${HEALTH[@]:1}")"; then
  fail "$HEALTHY"
fi
trap - ERR
signal 0 "$HEALTHY"
echo "nimbus-bootstrap: $ROLE ready ($RELEASE_URL): $HEALTHY"
