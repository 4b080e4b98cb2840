// clusterctl starts and stops the local control plane used by `make test` and `make run`.
// Standard library only, so it builds in a second and needs nothing beyond the Go toolchain.
module olmv1-rs/hack/clusterctl

go 1.26.0
