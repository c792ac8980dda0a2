#!/usr/bin/env bash
# Start what the test suite talks to, if it is not there already:
# MariaDB on 127.0.0.1:3306 (root, no password, database `test`) and Debian's Chromium.
set -euo pipefail

mysql_up() { mysqladmin --host=127.0.0.1 --port=3306 --user=root status >/dev/null 2>&1; }

if [ -z "${NIMBUS_TEST_MYSQL_URL:-}" ] && ! mysql_up; then
  if ! command -v mariadbd >/dev/null && [ ! -x /usr/sbin/mariadbd ]; then
    echo "installing mariadb-server (apt-get)"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server >/dev/null
  fi
  if [ ! -d /var/lib/mysql/mysql ]; then
    mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
  fi
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
  for _ in $(seq 1 60); do mysql_up && break; sleep 0.5; done
  mysql_up || { echo "MariaDB did not start on 127.0.0.1:3306; see /var/log/mysql" >&2; exit 1; }
  mysql --host=127.0.0.1 --user=root -e "CREATE DATABASE IF NOT EXISTS test" || true
fi

if [ ! -x /usr/bin/chromium ]; then
  echo "installing chromium (apt-get) for the browser tests"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
