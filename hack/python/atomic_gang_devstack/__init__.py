"""Local dev stack: a real control plane built from the Go module proxy."""
