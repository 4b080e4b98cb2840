module github.com/olmv1-rs/hack/bench-deppy-go

go 1.22

require (
	github.com/blang/semver/v4 v4.0.0
	github.com/operator-framework/deppy v0.3.0
)

require github.com/go-air/gini v1.0.4 // indirect
