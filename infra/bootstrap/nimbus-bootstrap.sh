#!/usr/bin/env bash
# Turn a fresh instance (Amazon Linux 2023) into a Nimbus crawl worker, crawl committer or
# search server.
#
# Run by the launch template's user data (infra/nimbus.yaml) as root. It installs exactly the
# release wheel the stack names into /opt/nimbus/venv, writes the non-secret settings to
# /etc/nimbus/nimbus.env (the database password is read from the RDS-managed secret by the
# process at start-up, never written anywhere), installs systemd units and the CloudWatch
# agent's configuration, then enables and starts them.
#
#   nimbus-bootstrap.sh --role worker|committer|search --bucket DATA_BUCKET \
#     --artifacts ARTIFACTS_BUCKET --release-key releases/V/nimbus_search-V-py3-none-any.whl \
#     --db-instance ID --db-host HOST --db-port PORT --region REGION --log-group GROUP
#     [--metrics-port PORT] (worker, committer: Prometheus /metrics, NIMBUS_METRICS_PORT)
#     [--seeds "URL ..."] (committer: added to the frontier before it starts)
#     [--workers N] [--admin-token-secret ARN] [--proxy-cidrs CIDR,...] (search: uvicorn
#     workers; the secret holding the /admin token; the load balancer's subnets)
#     [--root DIR] [--dry-run]
#
# --root DIR writes every file under DIR; --dry-run writes the files and prints the commands
# it would run instead of running them, the units' commands too (tests/integration/deploy).
set -euo pipefail

usage() { sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "nimbus-bootstrap: $*" >&2; exit 2; }

ROLE="" BUCKET="" ARTIFACTS="" RELEASE_KEY="" DB_INSTANCE="" DB_HOST="" DB_PORT="" REGION=""
LOG_GROUP="" SEEDS="" WORKERS="2" METRICS_PORT="0" ADMIN_TOKEN_SECRET="" PROXY_CIDRS="" ROOT=""
DRY_RUN=0
while [ $# -gt 0 ]; do
  case "$1" in
    --role) ROLE="${2-}"; shift 2 ;;
    --bucket) BUCKET="${2-}"; shift 2 ;;
    --artifacts) ARTIFACTS="${2-}"; shift 2 ;;
    --release-key) RELEASE_KEY="${2-}"; shift 2 ;;
    --db-instance) DB_INSTANCE="${2-}"; shift 2 ;;
    --db-host) DB_HOST="${2-}"; shift 2 ;;
    --db-port) DB_PORT="${2-}"; shift 2 ;;
    --region) REGION="${2-}"; shift 2 ;;
    --log-group) LOG_GROUP="${2-}"; shift 2 ;;
    --seeds) SEEDS="${2-}"; shift 2 ;;
    --workers) WORKERS="${2-}"; shift 2 ;;
    --metrics-port) METRICS_PORT="${2-}"; shift 2 ;;
    --admin-token-secret) ADMIN_TOKEN_SECRET="${2-}"; shift 2 ;;
    --proxy-cidrs) PROXY_CIDRS="${2-}"; shift 2 ;;
    --root) ROOT="${2-}"; shift 2 ;;
    --dry-run) DRY_RUN=1; shift ;;
    -h|--help) usage ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

for pair in role:ROLE bucket:BUCKET artifacts:ARTIFACTS release-key:RELEASE_KEY \
            db-instance:DB_INSTANCE db-host:DB_HOST db-port:DB_PORT region:REGION log-group:LOG_GROUP; do
  var="${pair#*:}"
  [ -n "${!var}" ] || die "missing --${pair%%:*} (see --help)"
done
case "$ROLE" in
  worker|committer|search) ;;
  *) die "--role must be worker, committer or search, not '$ROLE'" ;;
esac
[[ "$WORKERS" =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive number, not '$WORKERS'"
[[ "$DB_PORT" =~ ^[0-9]+$ ]] || die "--db-port must be a number, not '$DB_PORT'"
[[ "$METRICS_PORT" =~ ^[0-9]{1,5}$ ]] && [ "$METRICS_PORT" -le 65535 ] \
  || die "--metrics-port must be a port number (0: no /metrics), not '$METRICS_PORT'"
# Workers lease from the shared frontier; the committers seed it before they start.
[ -z "$SEEDS" ] || [ "$ROLE" = committer ] || die "--seeds is for the committer role, not $ROLE"
[ -z "$ADMIN_TOKEN_SECRET$PROXY_CIDRS" ] || [ "$ROLE" = search ] \
  || die "--admin-token-secret and --proxy-cidrs are for the search role, not $ROLE"
[[ "$PROXY_CIDRS" =~ ^([0-9./]+(,[0-9./]+)*)?$ ]] \
  || die "--proxy-cidrs must be CIDRs separated by commas, not '$PROXY_CIDRS'"
case "$RELEASE_KEY" in *.whl) ;; *) die "--release-key must name a wheel (.whl), not '$RELEASE_KEY'" ;; esac

run() {  # run a command, or say it in a dry run
  if [ "$DRY_RUN" = 1 ]; then echo "would run: $*"; else "$@"; fi
}

put() {  # put FILE MODE: write stdin to $ROOT/FILE
  local path="$ROOT$1"
  mkdir -p "$(dirname "$path")"
  cat > "$path"
  chmod "$2" "$path"
}

WHEEL="$(basename "$RELEASE_KEY")"
UNIT="nimbus-$ROLE"
NIMBUS=/opt/nimbus/venv/bin/nimbus
ADMIN_ENV=/run/nimbus-admin/admin.env  # tmpfs, root only: the token never reaches a disk

# 1. Packages, the service user, and exactly this release in its own venv.
run dnf install -y -q python3.11 python3.11-pip amazon-cloudwatch-agent
run useradd --system --home-dir /var/lib/nimbus --shell /sbin/nologin nimbus
run install -d -o nimbus -g nimbus -m 0750 /var/lib/nimbus
run python3.11 -m venv /opt/nimbus/venv
run aws s3 cp --region "$REGION" "s3://$ARTIFACTS/$RELEASE_KEY" "/opt/nimbus/$WHEEL"
run /opt/nimbus/venv/bin/pip install --quiet "/opt/nimbus/$WHEEL"

# 2. Settings: no secret here. The process reads the password from the DB instance's
#    RDS-managed secret when it starts (services/aws_database.py, NIMBUS_DATABASE_INSTANCE).
{
  echo "# Written by nimbus-bootstrap.sh for the $ROLE role; no secrets in this file."
  echo "AWS_REGION=$REGION"
  echo "NIMBUS_BLOB_URL=s3://$BUCKET/nimbus"
  echo "NIMBUS_DATABASE_INSTANCE=$DB_INSTANCE"
  echo "NIMBUS_DATABASE_HOST=$DB_HOST"
  echo "NIMBUS_DATABASE_PORT=$DB_PORT"
  echo "NIMBUS_DATABASE_NAME=nimbus"
  echo "NIMBUS_VAR_DIR=/var/lib/nimbus"
  if [ "$ROLE" = search ]; then
    echo "NIMBUS_HOST=0.0.0.0"
    echo "NIMBUS_PORT=8000"
    echo "NIMBUS_SERVE_WORKERS=$WORKERS"
    # Not the token: the secret holding it, read at each start of the service (step 3).
    [ -z "$ADMIN_TOKEN_SECRET" ] || echo "NIMBUS_ADMIN_TOKEN_SECRET=$ADMIN_TOKEN_SECRET"
    # uvicorn believes X-Forwarded-Proto/-For only from these (the load balancer): behind
    # HTTPS the app then sees https, and the admin session cookie is marked Secure.
    [ -z "$PROXY_CIDRS" ] || echo "FORWARDED_ALLOW_IPS=$PROXY_CIDRS"
  else
    # /metrics listens on every interface; the security groups admit only the stack's
    # Prometheus (MetricsScraperSecurityGroup), if it has one.
    if [ "$METRICS_PORT" != 0 ]; then
      echo "NIMBUS_HOST=0.0.0.0"
      echo "NIMBUS_METRICS_PORT=$METRICS_PORT"
    fi
    [ "$ROLE" != committer ] || echo "NIMBUS_SEEDS=$SEEDS"
  fi
} | put /etc/nimbus/nimbus.env 0644

# 3. The role's unit. Schema migrations run before the service under a database lock
#    (`nimbus migrate`), so instances starting together are safe. COMMANDS holds the unit's
#    Exec lines in the order they run.
COMMANDS="ExecStartPre=$NIMBUS migrate"
EXTRA_ENV=""
case "$ROLE" in
  worker)
    DESCRIPTION="Nimbus crawl worker"
    # A worker ends when the cluster has nothing left to fetch (or after a million pages);
    # started again a minute later, it takes back its own batches and leases more.
    COMMANDS+=$'\n'"ExecStart=$NIMBUS crawl worker --quiet --max-pages 1000000"
    RESTART="always"
    RESTART_SEC=60
    ;;
  committer)
    DESCRIPTION="Nimbus crawl committer (one active, the other standing by)"
    # Seeding only adds frontier rows not there yet: both committers may run it, at every
    # start, without harm. ($NIMBUS_SEEDS unbraced: systemd splits it into one URL a word.)
    [ -z "$SEEDS" ] || COMMANDS+=$'\n''ExecStartPre='"$NIMBUS"' crawl seed $NIMBUS_SEEDS'
    COMMANDS+=$'\n'"ExecStart=$NIMBUS crawl committer"
    RESTART="always"
    RESTART_SEC=10
    ;;
  search)
    DESCRIPTION="Nimbus search service"
    if [ -n "$ADMIN_TOKEN_SECRET" ]; then
      # As root ("+"): the token goes to a file only root reads, which systemd loads into
      # the service's environment (NIMBUS_ADMIN_TOKEN) for the commands after it. A new
      # value in the secret takes effect at the next restart.
      COMMANDS="ExecStartPre=+/opt/nimbus/bin/nimbus-admin-token $ADMIN_ENV"$'\n'"$COMMANDS"
      EXTRA_ENV="EnvironmentFile=-$ADMIN_ENV"
    fi
    COMMANDS+=$'\n''ExecStart='"$NIMBUS"' serve --workers ${NIMBUS_SERVE_WORKERS}'
    RESTART="on-failure"
    RESTART_SEC=5
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

# 4. Logs: the journal stays the source; a follower copies the unit's lines to a file the
#    CloudWatch agent ships to the stack's log group (the agent does not read the journal).
put /etc/systemd/system/nimbus-logs.service 0644 <<EOF
[Unit]
Description=Copy $UNIT's journal to /var/log/nimbus for the CloudWatch agent
After=systemd-journald.service

[Service]
Type=simple
ExecStartPre=/usr/bin/install -d -m 0755 /var/log/nimbus
ExecStart=/bin/sh -c 'exec /usr/bin/journalctl --follow --output=short-iso --unit=$UNIT >> /var/log/nimbus/$ROLE.log'
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
EOF

put /opt/aws/amazon-cloudwatch-agent/etc/amazon-cloudwatch-agent.json 0644 <<EOF
{
  "agent": {"run_as_user": "root"},
  "logs": {
    "logs_collected": {
      "files": {
        "collect_list": [
          {"file_path": "/var/log/nimbus/$ROLE.log", "log_group_name": "$LOG_GROUP",
           "log_stream_name": "{instance_id}", "timestamp_format": "%Y-%m-%dT%H:%M:%S"}
        ]
      }
    }
  }
}
EOF

# 5. Start everything.
if [ "$DRY_RUN" = 1 ]; then  # and say what the role's unit will run, in order
  while IFS= read -r line; do echo "would run in $UNIT.service: ${line#*=}"; done <<< "$COMMANDS"
fi
run systemctl daemon-reload
run systemctl enable --now nimbus-logs.service "$UNIT.service"
run /opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s \
  -c file:/opt/aws/amazon-cloudwatch-agent/etc/amazon-cloudwatch-agent.json
echo "nimbus-bootstrap: $ROLE ready ($WHEEL)"
