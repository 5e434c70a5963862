//go:build !linux

package stripeproc_test

import "os/exec"

// setParentDeathSignal has no portable equivalent outside Linux: there,
// TestMain alone stops stripe-mock.
func setParentDeathSignal(*exec.Cmd) {}
