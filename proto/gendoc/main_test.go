package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

const (
	binpb   = "../mcpd/v1/mcpd.binpb"
	apiPage = "../../docs/api.md"
)

func readSet(t *testing.T) []protoreflect.FileDescriptor {
	t.Helper()
	raw, err := os.ReadFile(binpb)
	if err != nil {
		t.Fatal(err)
	}
	files, err := loadFiles(raw)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Every service, RPC, message, field, enum and enum value of mcpd.proto has
// a comment saying what it means.
func TestEverythingDocumented(t *testing.T) {
	for _, fd := range readSet(t) {
		if packageComment(fd) == "" {
			t.Errorf("%s: package has no comment", fd.Path())
		}
		check := func(d protoreflect.Descriptor) {
			if comment(fd.SourceLocations(), d) == "" {
				t.Errorf("%s has no comment", d.FullName())
			}
		}
		for i := 0; i < fd.Services().Len(); i++ {
			sd := fd.Services().Get(i)
			check(sd)
			for j := 0; j < sd.Methods().Len(); j++ {
				check(sd.Methods().Get(j))
			}
		}
		var messages func(protoreflect.MessageDescriptors)
		messages = func(ms protoreflect.MessageDescriptors) {
			for i := 0; i < ms.Len(); i++ {
				md := ms.Get(i)
				check(md)
				for j := 0; j < md.Fields().Len(); j++ {
					check(md.Fields().Get(j))
				}
				messages(md.Messages())
			}
		}
		messages(fd.Messages())
		for i := 0; i < fd.Enums().Len(); i++ {
			ed := fd.Enums().Get(i)
			check(ed)
			for j := 0; j < ed.Values().Len(); j++ {
				check(ed.Values().Get(j))
			}
		}
	}
}

// The committed reference page is what gendoc makes of the committed
// descriptor set.
func TestAPIPageCurrent(t *testing.T) {
	raw, err := os.ReadFile(binpb)
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(raw)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(apiPage)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is stale: run make proto", filepath.Clean(apiPage))
	}
	for _, s := range []string{"`CallTool`", "### `mcpd.v1.CallToolRequest`", "timeout_ms"} {
		if !bytes.Contains(got, []byte(s)) {
			t.Errorf("%s lacks %q", apiPage, s)
		}
	}
}

// The documented descriptor set is the same file as the descriptor compiled
// into the generated Go code (regenerated together by make proto).
func TestDescriptorSetMatchesGeneratedCode(t *testing.T) {
	files, err := mcpdv1.DocumentedFiles()
	if err != nil {
		t.Fatal(err)
	}
	path := mcpdv1.File_proto_mcpd_v1_mcpd_proto.Path()
	fd, err := files.FindFileByPath(path)
	if err != nil {
		t.Fatal(err)
	}
	got := protodesc.ToFileDescriptorProto(fd)
	if got.GetSourceCodeInfo() == nil {
		t.Fatal("documented descriptor has no source info")
	}
	got.SourceCodeInfo = nil
	want := protodesc.ToFileDescriptorProto(mcpdv1.File_proto_mcpd_v1_mcpd_proto)
	if !proto.Equal(got, want) {
		t.Error("proto/mcpd/v1/mcpd.binpb differs from mcpd.pb.go: run make proto")
	}
}

// The TypeScript package ships the same proto file.
func TestTypeScriptProtoCurrent(t *testing.T) {
	want, err := os.ReadFile("../mcpd/v1/mcpd.proto")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../clients/typescript/proto/mcpd.proto")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("clients/typescript/proto/mcpd.proto differs from proto/mcpd/v1/mcpd.proto: run make proto")
	}
}

func TestCell(t *testing.T) {
	if got := cell("a | b\n  c"); got != `a \| b c` {
		t.Errorf("cell = %q", got)
	}
	if strings.Contains(cell("x\ny"), "\n") {
		t.Error("cell kept a newline")
	}
}
