package python

import (
	"os"
	"strconv"
	"strings"
	"testing"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TestMetadataKeysAgree checks that the package's metadata keys and error
// domain (mcpd_client/_status.py) are mcpd's own (proto/mcpd/v1): the client says
// them once, there, and this test keeps them equal.
func TestMetadataKeysAgree(t *testing.T) {
	src, err := os.ReadFile("mcpd_client/_status.py")
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{mcpdv1.MetadataClientName, mcpdv1.MetadataClientVersion, mcpdv1.MetadataDaemon, mcpdv1.ErrorDomain} {
		if !strings.Contains(string(src), strconv.Quote(key)) {
			t.Errorf("mcpd_client/_status.py does not say %s", strconv.Quote(key))
		}
	}
}
