package registry

import "encoding/json"

// Server is a server.json: one version of one MCP server as the registry
// publishes it. Fields mcpd does not use are kept in the raw document the
// client returns, not here.
type Server struct {
	Name        string    `json:"name"`
	Title       string    `json:"title,omitempty"`
	Description string    `json:"description"`
	Version     string    `json:"version"`
	WebsiteURL  string    `json:"websiteUrl,omitempty"`
	Repository  *Repo     `json:"repository,omitempty"`
	Packages    []Package `json:"packages,omitempty"`
	Remotes     []Remote  `json:"remotes,omitempty"`
}

// Repo is a server's source repository.
type Repo struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

// Package is one way to run a server locally: a package of a package
// registry (registryType npm, pypi, oci, nuget, mcpb) started by a runtime.
type Package struct {
	RegistryType    string     `json:"registryType"`
	RegistryBaseURL string     `json:"registryBaseUrl,omitempty"`
	Identifier      string     `json:"identifier"`
	Version         string     `json:"version,omitempty"`
	RuntimeHint     string     `json:"runtimeHint,omitempty"`
	Transport       Transport  `json:"transport"`
	RuntimeArgs     []Argument `json:"runtimeArguments,omitempty"`
	PackageArgs     []Argument `json:"packageArguments,omitempty"`
	Env             []KeyValue `json:"environmentVariables,omitempty"`
}

// Transport is a package's transport: type "stdio", "streamable-http" or
// "sse" (the latter two with a url).
type Transport struct {
	Type    string     `json:"type"`
	URL     string     `json:"url,omitempty"`
	Headers []KeyValue `json:"headers,omitempty"`
}

// Remote is a server hosted elsewhere: type "streamable-http" or "sse",
// its url (which may hold {variables}) and the headers it wants.
type Remote struct {
	Type      string           `json:"type"`
	URL       string           `json:"url"`
	Headers   []KeyValue       `json:"headers,omitempty"`
	Variables map[string]Input `json:"variables,omitempty"`
}

// Input is a value the user may have to supply: the registry's Input.
// A set Value is fixed (its {names} filled from Variables); otherwise the
// user is asked, Default being the suggestion.
type Input struct {
	Description string           `json:"description,omitempty"`
	IsRequired  bool             `json:"isRequired,omitempty"`
	IsSecret    bool             `json:"isSecret,omitempty"`
	Format      string           `json:"format,omitempty"`
	Value       string           `json:"value,omitempty"`
	Default     string           `json:"default,omitempty"`
	Placeholder string           `json:"placeholder,omitempty"`
	Choices     []string         `json:"choices,omitempty"`
	Variables   map[string]Input `json:"variables,omitempty"`
}

// KeyValue is an environment variable or an HTTP header.
type KeyValue struct {
	Name string `json:"name"`
	Input
}

// Argument is a runtime or package argument: type "positional" (Value, or
// the user's value for ValueHint) or "named" (Name, then its value).
type Argument struct {
	Type       string `json:"type"`
	Name       string `json:"name,omitempty"`
	ValueHint  string `json:"valueHint,omitempty"`
	IsRepeated bool   `json:"isRepeated,omitempty"`
	Input
}

// Status values of the registry's official metadata.
const (
	StatusActive     = "active"
	StatusDeprecated = "deprecated"
	StatusDeleted    = "deleted"
)

// OfficialKey is the _meta key of the registry's own metadata.
const OfficialKey = "io.modelcontextprotocol.registry/official"

// Official is the registry's metadata of one server version.
type Official struct {
	Status        string `json:"status,omitempty"`
	StatusMessage string `json:"statusMessage,omitempty"`
	PublishedAt   string `json:"publishedAt,omitempty"`
	UpdatedAt     string `json:"updatedAt,omitempty"`
	IsLatest      bool   `json:"isLatest,omitempty"`
}

// Entry is one server of an API answer: the server.json and the
// registry's metadata.
type Entry struct {
	Server Server `json:"server"`
	Meta   struct {
		Official *Official `json:"io.modelcontextprotocol.registry/official,omitempty"`
	} `json:"_meta"`
	// Raw is the answer's JSON of this entry, as the registry sent it.
	Raw json.RawMessage `json:"-"`
}

// Status is the entry's status, "active" when the registry gives none.
func (e *Entry) Status() string {
	if e.Meta.Official == nil || e.Meta.Official.Status == "" {
		return StatusActive
	}
	return e.Meta.Official.Status
}

// StatusMessage is the registry's explanation of the status, if any.
func (e *Entry) StatusMessage() string {
	if e.Meta.Official == nil {
		return ""
	}
	return e.Meta.Official.StatusMessage
}

// Transports lists how the entry can be reached: "npm", "pypi", "oci",
// ... for its packages, and "streamable-http" or "sse" for its remotes.
func (e *Entry) Transports() []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, p := range e.Server.Packages {
		add(p.RegistryType)
	}
	for _, r := range e.Server.Remotes {
		add(r.Type)
	}
	return out
}

// UnmarshalJSON keeps the raw bytes beside the decoded fields.
func (e *Entry) UnmarshalJSON(b []byte) error {
	type plain Entry
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*e = Entry(p)
	e.Raw = append(json.RawMessage(nil), b...)
	return nil
}

// list is the answer of GET /v0.1/servers.
type list struct {
	Servers  []Entry `json:"servers"`
	Metadata struct {
		NextCursor string `json:"nextCursor,omitempty"`
		Count      int    `json:"count,omitempty"`
	} `json:"metadata"`
}
