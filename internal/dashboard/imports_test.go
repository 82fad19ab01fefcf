package dashboard

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The dashboard calls the service in its plain values (api.LocalApp,
// internal/service): no file of it imports gRPC or mcpd.v1 but
// errclass.go, which reads the class of the service's errors.
func TestNoProtoImports(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || name == "errclass.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "google.golang.org/grpc") || strings.HasSuffix(path, "/proto/mcpd/v1") {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
