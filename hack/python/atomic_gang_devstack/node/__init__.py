"""The real kubelet node: host changes, runtime and kubelet configuration."""
