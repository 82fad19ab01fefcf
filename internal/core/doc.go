// Package core is mcpd's in-process service: the one API on the
// supervisor that every door calls, in internal/service's plain Go
// values. It validates each request, charges it to the request memory
// budget, checks it against its profile, audits, counts and traces it,
// routes a server's own requests to the apps registered as hosts, keeps
// the subscriptions, the connected apps and the status, and classes
// every domain error once (ToError: a service.Error).
//
// The in-process doors (the HTTP face, the bridge socket, the dashboard)
// call it through a App, one per connection or session, which
// charges and tracks each call itself; the gRPC door (internal/api) calls
// the Service's operations from its handlers, its interceptors doing the
// same with the same functions (Charge, InFlight, WithScope). What a door
// tells of a call besides its request travels in its context
// (App.Context, WithProfile, WithRoot, WithClient). It links no gRPC.
package core
