//go:build !linux

package sandbox

// RunIfHelper does nothing: the helper is Linux only.
func RunIfHelper() {}

const minNetABI = 4

// checkKernel: there is no Landlock outside Linux.
func checkKernel(bool) (int, []string) {
	return 0, []string{"sandboxes are Linux only: nothing is confined"}
}

// Supported reports whether this platform can run the helper.
const Supported = false

// ABI returns 0: there is no Landlock here.
func ABI() int { return 0 }
