package hosts

import "errors"

// tomlDoc edits TOML in place (Codex's config.toml).
type tomlDoc struct{}

func parseTOML(data []byte) (document, error) {
	return nil, errors.New("TOML files are not supported yet")
}

func decodeTOMLValue(text string) (any, error) {
	return nil, errors.New("TOML files are not supported yet")
}
