package stripeproc_test

import (
	"os/exec"
	"syscall"
)

// setParentDeathSignal kills stripe-mock with the test binary, even when
// the binary dies before TestMain can stop it (a panic, a -timeout).
func setParentDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
