//go:build !race

package etcd_test

// raceBuild reports a test binary built with the race detector.
const raceBuild = false
