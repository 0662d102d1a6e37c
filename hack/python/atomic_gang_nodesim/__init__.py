"""atomic_gang_nodesim: a node-join simulator (test and demo infrastructure).

Plays EC2 boot plus nodeadm for every running managed instance in the
simulated EC2: parses the NodeConfig our launch template wrote, registers the
Node kubelet would (kwok makes it Ready) and deletes it when the instance is
gone. Knobs: boot delay, dropped joins, NotReady nodes, terminations behind
the provisioner's back. No service may import it (import-linter enforces that).
"""
