package api

import (
	"fmt"
	"unicode/utf8"
	"unsafe"

	"google.golang.org/grpc/encoding"
	protoenc "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// aliasLargeStrings is the size from which a request's top-level string
// field is a view of the received message rather than a copy of it.
const aliasLargeStrings = 64 << 10

// requestCodec is the server's codec: grpc-go's proto codec, except that
// a request's large string fields (arguments_json, params_json: the MCP
// payloads, up to MaxRequestSize) are not copied out of the received
// message. grpc-go gathers a message's frames into one pooled buffer and
// proto.Unmarshal copies each string out of it, so a 31 MiB request cost
// its size three times over before any handler ran; here the frames are
// gathered into a slice of the message's own, which the large strings are
// views of, and only the rest of the message is decoded by proto. That
// slice is never reused or written to, so the strings stay immutable.
type requestCodec struct {
	encoding.CodecV2 // the proto codec: Marshal, Name, small messages
}

func newRequestCodec() requestCodec {
	return requestCodec{encoding.GetCodecV2(protoenc.Name)}
}

func (c requestCodec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok || data.Len() < aliasLargeStrings {
		return c.CodecV2.Unmarshal(data, v)
	}
	return unmarshalAliased(data.Materialize(), m)
}

// unmarshalAliased is proto.Unmarshal of buf into m, except that m's
// singular top-level string fields of aliasLargeStrings or more are set to
// views of buf. buf must never be written to again.
func unmarshalAliased(buf []byte, m proto.Message) error {
	r := m.ProtoReflect()
	fields := r.Descriptor().Fields()
	type large struct {
		fd protoreflect.FieldDescriptor
		v  []byte
	}
	var (
		rest   []byte // buf without the large fields, for proto
		larges []large
	)
	for b := buf; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return proto.Unmarshal(buf, m) // for its error
		}
		vn := protowire.ConsumeFieldValue(num, typ, b[n:])
		if vn < 0 {
			return proto.Unmarshal(buf, m)
		}
		fd := fields.ByNumber(num)
		if typ == protowire.BytesType && vn >= aliasLargeStrings && fd != nil &&
			fd.Kind() == protoreflect.StringKind && fd.Cardinality() != protoreflect.Repeated {
			v, _ := protowire.ConsumeBytes(b[n:])
			larges = append(larges, large{fd, v})
		} else {
			rest = append(rest, b[:n+vn]...)
		}
		b = b[n+vn:]
	}
	for _, l := range larges {
		// The last value of a singular field wins: a field that is also
		// among the rest (written twice, rare) is decoded the plain way.
		if l.fd.ContainingOneof() != nil || hasField(rest, l.fd.Number()) {
			return proto.Unmarshal(buf, m)
		}
	}
	if err := proto.Unmarshal(rest, m); err != nil {
		return err
	}
	for _, l := range larges {
		if !utf8.Valid(l.v) {
			return fmt.Errorf("proto: field %s contains invalid UTF-8", l.fd.FullName())
		}
		r.Set(l.fd, protoreflect.ValueOfString(unsafe.String(unsafe.SliceData(l.v), len(l.v))))
	}
	return nil
}

// hasField reports whether the encoded message b has a field numbered num.
func hasField(b []byte, num protowire.Number) bool {
	for len(b) > 0 {
		n, typ, tn := protowire.ConsumeTag(b)
		if tn < 0 {
			return false
		}
		vn := protowire.ConsumeFieldValue(n, typ, b[tn:])
		if vn < 0 {
			return false
		}
		if n == num {
			return true
		}
		b = b[tn+vn:]
	}
	return false
}
