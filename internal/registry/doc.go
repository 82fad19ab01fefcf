// Package registry is the client side of the MCP Registry: it reads the
// registry's read-only API (GET /v0.1/servers with search and cursor
// pagination, GET /v0.1/servers/{name}/versions/{version}) with a bounded,
// on-disk cache under mcpd's state directory, and turns a server.json into
// an mcpd config entry that runs here (Convert). It also keeps the two
// small files "mcpdctl add" writes beside the config: the servers' secret
// variables (EnvFile) and which local server came from which registry
// entry (Records).
//
// The API and the server.json fields follow the registry's
// docs/reference/api/openapi.yaml and server-json/server.schema.json
// (schema 2025-12-11).
package registry
