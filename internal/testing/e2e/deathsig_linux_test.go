package e2e

import (
	"os/exec"
	"syscall"
)

// dieWithTest has the kernel send cmd SIGTERM when the test process dies
// without its cleanups (a test binary killed on a timeout): a daemon then
// stops its servers instead of outliving the test.
func dieWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
}
