//go:build !unix

package main

import "os/exec"

// ownProcessGroup: elsewhere the cancellation kills cmd only.
func ownProcessGroup(cmd *exec.Cmd) {}
