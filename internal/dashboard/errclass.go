package dashboard

import (
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The one place the dashboard reads the class of the service's errors.

// errClass is how the page is told of a service error: Code, its code's
// name ("NotFound"; "Unknown" for an error of no class), Message, and
// Reason, mcpd's class of it when it has one ("NOT_REMOTE"; "" for none).
type errClass struct {
	Code    string
	Message string
	Reason  string
}

// classOf is err's class.
func classOf(err error) errClass {
	st := status.Convert(err)
	c := errClass{Code: st.Code().String(), Message: st.Message()}
	if reason, _ := mcpdv1.ReasonOf(err); reason != mcpdv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		c.Reason = strings.TrimPrefix(reason.String(), "ERROR_REASON_")
	}
	return c
}

// errClosed is the error of a login begun as the dashboard closes: the
// service is unavailable to it.
var errClosed = status.Error(codes.Unavailable, "dashboard: closed")
