package tracing

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"

	"github.com/mcpd-dev/mcpd/internal/version"
)

// CheckEndpoint validates an --otlp-endpoint: a loopback HOST:PORT (or
// http://HOST:PORT), since traces carry tool names and resource URIs and
// must not leave the machine. It returns the HOST:PORT.
func CheckEndpoint(endpoint string) (string, error) {
	hp := endpoint
	if strings.Contains(endpoint, "://") {
		u, err := url.Parse(endpoint)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return "", fmt.Errorf("invalid OTLP endpoint %q: want a loopback HOST:PORT such as 127.0.0.1:4317", endpoint)
		}
		hp = u.Host
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil || port == "" {
		return "", fmt.Errorf("invalid OTLP endpoint %q: want a loopback HOST:PORT such as 127.0.0.1:4317", endpoint)
	}
	if host != "localhost" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsLoopback() {
			return "", fmt.Errorf("invalid OTLP endpoint %q: only loopback addresses are allowed (127.0.0.1, [::1], localhost)", endpoint)
		}
	}
	return hp, nil
}

// NewOTLP returns a tracer provider exporting over OTLP/gRPC (plaintext,
// loopback only) to endpoint, batching spans; Shutdown flushes it.
func NewOTLP(ctx context.Context, endpoint string) (*sdktrace.TracerProvider, error) {
	hp, err := CheckEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(hp), otlptracegrpc.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName("mcpd"), semconv.ServiceVersion(version.Version))
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
