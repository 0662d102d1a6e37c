"""``make demo``: the whole product locally, narrated.

Starts the local control plane with Kueue, the simulated EC2 (moto + our
layer), our webhook, two provisioner replicas and the node-join simulator;
applies a sample (``--story``: the gang Job hack/demo/allreduce-pretrain.yaml, the
gang JobSet hack/demo/allreduce-jobset.yaml or the gang TrainJob
hack/demo/llama-trainjob.yaml); prints each step as it happens, a timeline and
its self-checks at the end; tears everything down (also on Ctrl-C).
"""
