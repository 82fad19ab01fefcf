package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

// Reflection serves mcpd.proto with its comments, as `grpcurl describe
// mcpd.v1.Mcpd.CallTool` asks for it: the file containing the symbol, whose
// source info holds the RPC's and its messages' comments.
func TestReflectionServesComments(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, nil)
	stream, err := reflectionpb.NewServerReflectionClient(d.dial()).ServerReflectionInfo(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	defer stream.CloseSend()
	err = stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_FileContainingSymbol{FileContainingSymbol: "mcpd.v1.Mcpd.CallTool"},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	raw := r.GetFileDescriptorResponse().GetFileDescriptorProto()
	if len(raw) == 0 {
		t.Fatalf("no file descriptor in %v", r)
	}
	set := &descriptorpb.FileDescriptorSet{}
	for _, b := range raw {
		fdp := &descriptorpb.FileDescriptorProto{}
		if err := proto.Unmarshal(b, fdp); err != nil {
			t.Fatal(err)
		}
		set.File = append(set.File, fdp)
	}
	files, err := protodesc.NewFiles(set)
	if err != nil {
		t.Fatal(err)
	}
	want := map[protoreflect.FullName]string{
		"mcpd.v1.Mcpd.CallTool":                  "CallTool calls a tool; it streams progress and log events, then the result.",
		"mcpd.v1.CallOptions.timeout_ms":         "in milliseconds",
		"mcpd.v1.CallToolRequest.arguments_json": "arguments_json is the tool's arguments object",
	}
	for name, text := range want {
		if got := leadingComment(t, files, name); !strings.Contains(got, text) {
			t.Errorf("reflected comment of %s = %q, want it to contain %q", name, got, text)
		}
	}
}

func leadingComment(t *testing.T, files *protoregistry.Files, name protoreflect.FullName) string {
	t.Helper()
	d, err := files.FindDescriptorByName(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return d.ParentFile().SourceLocations().ByDescriptor(d).LeadingComments
}

// TestGrpcurlDescribe: the real grpcurl (go tool grpcurl, pinned in
// go.mod) describes CallTool with its comment.
func TestGrpcurlDescribe(t *testing.T) {
	skipShort(t)
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found: cannot run go tool grpcurl")
	}
	// Build grpcurl first (minutes on a fresh, loaded machine), then ask.
	bin := t.TempDir() + "/grpcurl"
	bctx, bcancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer bcancel()
	if out, err := exec.CommandContext(bctx, goBin, "build", "-o", bin, "github.com/fullstorydev/grpcurl/cmd/grpcurl").CombinedOutput(); err != nil {
		t.Fatalf("build grpcurl: %v\n%s", err, out)
	}
	d := startDaemon(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "-plaintext", "-unix", d.socket, "describe", "mcpd.v1.Mcpd.CallTool").CombinedOutput()
	if err != nil {
		t.Fatalf("grpcurl describe: %v\n%s", err, out)
	}
	if want := "CallTool calls a tool; it streams progress and log events, then the result."; !strings.Contains(string(out), want) {
		t.Fatalf("grpcurl describe mcpd.v1.Mcpd.CallTool:\n%s\nwant the comment %q", out, want)
	}
}
