package mcpdv1

import (
	_ "embed"
	"fmt"
	"sync"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// sourceDescriptorSet is mcpd.proto as a FileDescriptorSet with its source
// info (comments and locations), written by `make proto` (protoc
// --include_source_info). The descriptor compiled into mcpd.pb.go has no
// comments; this one lets server reflection show them.
//
//go:embed mcpd.binpb
var sourceDescriptorSet []byte

var documented = sync.OnceValues(func() (*protoregistry.Files, error) {
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(sourceDescriptorSet, &set); err != nil {
		return nil, fmt.Errorf("mcpd.binpb: %w", err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		return nil, fmt.Errorf("mcpd.binpb: %w", err)
	}
	return files, nil
})

// DocumentedFiles returns mcpd.proto's descriptors with their comments
// (SourceLocations), the same file the generated code registers.
func DocumentedFiles() (*protoregistry.Files, error) { return documented() }

// DocumentedResolver resolves mcpd.proto's descriptors from the documented
// set and everything else from protoregistry.GlobalFiles, for a reflection
// service that shows mcpd's comments.
type DocumentedResolver struct{}

// FindFileByPath looks path up in the documented set, then globally.
func (DocumentedResolver) FindFileByPath(path string) (protoreflect.FileDescriptor, error) {
	if files, err := documented(); err == nil {
		if fd, err := files.FindFileByPath(path); err == nil {
			return fd, nil
		}
	}
	return protoregistry.GlobalFiles.FindFileByPath(path)
}

// FindDescriptorByName looks name up in the documented set, then globally.
func (DocumentedResolver) FindDescriptorByName(name protoreflect.FullName) (protoreflect.Descriptor, error) {
	if files, err := documented(); err == nil {
		if d, err := files.FindDescriptorByName(name); err == nil {
			return d, nil
		}
	}
	return protoregistry.GlobalFiles.FindDescriptorByName(name)
}
