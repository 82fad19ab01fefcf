package api

import (
	"math"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"

	"github.com/mcpd-dev/mcpd/internal/apiconv"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// MaxTimeoutMs is the largest CallOptions.timeout_ms accepted: the most
// whole milliseconds a time.Duration holds (about 292 years). A larger
// value would overflow into a negative or zero timeout, so it is refused;
// anything up to it is capped by the supervisor's MaxRequestTimeout.
const MaxTimeoutMs = math.MaxInt64 / int64(time.Millisecond)

// optionsOf is opts as the service takes them; timeout_ms is checked
// here, where it is still a count of milliseconds. The capabilities are a
// view of opts' text, not a copy.
func optionsOf(opts *mcpdv1.CallOptions) (service.Options, error) {
	var o service.Options
	if ms := opts.GetTimeoutMs(); ms < 0 {
		return o, service.Errorf(service.InvalidArgument, "invalid options.timeout_ms: %d is negative", ms)
	} else if ms > MaxTimeoutMs {
		return o, service.Errorf(service.InvalidArgument, "invalid options.timeout_ms: %d is more than the maximum %d", ms, MaxTimeoutMs)
	} else if ms > 0 {
		o.Timeout = time.Duration(ms) * time.Millisecond
	}
	o.ClientCapabilities = stringBytes(opts.GetClientCapabilitiesJson())
	o.Client = service.Client{Name: opts.GetClient().GetName(), Version: opts.GetClient().GetVersion()}
	return o, nil
}

// toMcpResponse converts a child's (non-nil) response; the result bytes pass
// through unchanged, and a JSON-RPC error of the child becomes
// McpResponse.error, not a gRPC error. src says where it came from.
func toMcpResponse(server string, resp *session.Response, src service.Source, d time.Duration) *mcpdv1.McpResponse {
	out := &mcpdv1.McpResponse{
		Server:     server,
		Cache:      apiconv.SourceToProto(src),
		DurationUs: d.Microseconds(),
	}
	if resp.Error != nil {
		out.Error = mcpErrorToProto(resp.Error)
		return out
	}
	out.ResultJson = resultString(resp.Result)
	return out
}

func mcpErrorToProto(e *session.RPCError) *mcpdv1.McpError {
	return &mcpdv1.McpError{Code: e.Code, Message: e.Message, DataJson: string(e.Data)}
}
