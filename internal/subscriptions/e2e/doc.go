// Package e2e holds the end-to-end tests of subscriptions: a real
// supervisor with real child processes (fakemcp, the go-sdk test server,
// the npm server-memory), the real gRPC server on a real Unix socket, and
// real gRPC clients as the apps. It has no non-test code.
package e2e
