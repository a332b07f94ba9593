module github.com/supervise-dev/supervise/integration/conformance

go 1.26.8

replace github.com/supervise-dev/supervise => ../..

require (
	github.com/supervise-dev/supervise v0.0.0-00010101000000-000000000000
	k8s.io/client-go v0.37.2
	k8s.io/utils v0.0.0-20260707023825-cf1189d6abe3
)

require (
	github.com/go-logr/logr v1.4.3 // indirect
	golang.org/x/time v0.16.0
	k8s.io/apimachinery v0.37.2 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)
