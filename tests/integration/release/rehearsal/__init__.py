"""The boot rehearsal's stage: an instance on this machine, with stand-ins only for what cannot
run here.

* ``instance``: the instance's network, a network namespace joined to this machine by a veth
  pair and nothing else (no route out: no PyPI), so the service listens on 0.0.0.0:8000 as on
  EC2 and the test reaches it as the load balancer would, at the instance's address.
* ``userdata``: the real user data of a launch template in ``infra/nimbus.yaml``, its ``!Sub``
  variables rendered with test values, the instance's paths moved under a scratch root.
* ``shims``: ``dnf``, ``useradd``, ``systemctl``, ``cfn-signal``, the CloudWatch agent and
  ``aws``, each recording its arguments; ``aws`` and the processes' AWS SDK talk to a moto
  server, which also stands for the instance metadata service (the instance role's
  credentials). ``systemctl`` runs the generated units' real command lines as processes.
* ``mariadb``: a private MariaDB server standing for RDS (the settings file names the
  database ``nimbus``, which the shared test server must not be asked for).
"""
