#!/usr/bin/env bash
# Turn a fresh instance (Amazon Linux 2023) into a Nimbus crawler or search server.
#
# Run by the launch template's user data (infra/nimbus.yaml) as root. It installs exactly the
# release wheel the stack names into /opt/nimbus/venv, writes the non-secret settings to
# /etc/nimbus/nimbus.env (the database password is read from the RDS-managed secret by the
# process at start-up, never written anywhere), installs systemd units and the CloudWatch
# agent's configuration, then enables and starts them.
#
#   nimbus-bootstrap.sh --role crawler|search --bucket DATA_BUCKET --artifacts ARTIFACTS_BUCKET \
#     --release-key releases/V/nimbus_search-V-py3-none-any.whl --db-instance ID --db-host HOST \
#     --db-port PORT --region REGION --log-group GROUP [--seeds "URL ..."] [--workers N]
#     [--root DIR] [--dry-run]
#
# --root DIR writes every file under DIR; --dry-run writes the files and prints the commands
# it would run instead of running them (the tests use both, tests/integration/deploy).
set -euo pipefail

usage() { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
die() { echo "nimbus-bootstrap: $*" >&2; exit 2; }

ROLE="" BUCKET="" ARTIFACTS="" RELEASE_KEY="" DB_INSTANCE="" DB_HOST="" DB_PORT="" REGION=""
LOG_GROUP="" SEEDS="" WORKERS="2" ROOT="" DRY_RUN=0
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
case "$ROLE" in crawler|search) ;; *) die "--role must be crawler or search, not '$ROLE'" ;; esac
[[ "$WORKERS" =~ ^[1-9][0-9]*$ ]] || die "--workers must be a positive number, not '$WORKERS'"
[[ "$DB_PORT" =~ ^[0-9]+$ ]] || die "--db-port must be a number, not '$DB_PORT'"
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

# 1. Packages, the service user, and exactly this release in its own venv.
run dnf install -y -q python3.11 python3.11-pip amazon-cloudwatch-agent
run useradd --system --home-dir /var/lib/nimbus --shell /sbin/nologin nimbus
run install -d -o nimbus -g nimbus -m 0750 /var/lib/nimbus
run python3.11 -m venv /opt/nimbus/venv
run aws s3 cp --region "$REGION" "s3://$ARTIFACTS/$RELEASE_KEY" "/opt/nimbus/$WHEEL"
run /opt/nimbus/venv/bin/pip install --quiet "/opt/nimbus/$WHEEL"

# 2. Settings: no secret here. The process reads the password from the DB instance's
#    RDS-managed secret when it starts (services/config.py, NIMBUS_DATABASE_INSTANCE).
{
  echo "# Written by nimbus-bootstrap.sh for the $ROLE role; no secrets in this file."
  echo "AWS_REGION=$REGION"
  echo "NIMBUS_BLOB_URL=s3://$BUCKET/nimbus"
  echo "NIMBUS_DATABASE_INSTANCE=$DB_INSTANCE"
  echo "NIMBUS_DATABASE_HOST=$DB_HOST"
  echo "NIMBUS_DATABASE_PORT=$DB_PORT"
  echo "NIMBUS_DATABASE_NAME=nimbus"
  echo "NIMBUS_VAR_DIR=/var/lib/nimbus"
  if [ "$ROLE" = crawler ]; then
    echo "NIMBUS_SEEDS=$SEEDS"
  else
    echo "NIMBUS_HOST=0.0.0.0"
    echo "NIMBUS_PORT=8000"
    echo "NIMBUS_SERVE_WORKERS=$WORKERS"
  fi
} | put /etc/nimbus/nimbus.env 0644

# 3. The role's unit. Schema migrations run before the service under a database lock
#    (`nimbus migrate`), so instances starting together are safe.
if [ "$ROLE" = crawler ]; then
  DESCRIPTION="Nimbus crawler"
  EXEC='/opt/nimbus/venv/bin/nimbus crawl --quiet $NIMBUS_SEEDS'
  # A crawl run ends when its page budget is spent; the next run continues the frontier.
  RESTART="always"
  RESTART_SEC=60
else
  DESCRIPTION="Nimbus search service"
  EXEC='/opt/nimbus/venv/bin/nimbus serve --workers ${NIMBUS_SERVE_WORKERS}'
  RESTART="on-failure"
  RESTART_SEC=5
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
ExecStartPre=/opt/nimbus/venv/bin/nimbus migrate
ExecStart=$EXEC
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
run systemctl daemon-reload
run systemctl enable --now nimbus-logs.service "$UNIT.service"
run /opt/aws/amazon-cloudwatch-agent/bin/amazon-cloudwatch-agent-ctl -a fetch-config -m ec2 -s \
  -c file:/opt/aws/amazon-cloudwatch-agent/etc/amazon-cloudwatch-agent.json
echo "nimbus-bootstrap: $ROLE ready ($WHEEL)"
