"""``make demo``: the whole product locally, narrated.

Starts the local control plane with Kueue, the simulated EC2 (moto + our
layer), our webhook, two provisioner replicas and the node-join simulator;
applies the sample Job (hack/demo/allreduce-pretrain.yaml); prints each step as
it happens and a timeline at the end; tears everything down (also on Ctrl-C).
"""
