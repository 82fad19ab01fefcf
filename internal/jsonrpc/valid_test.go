package jsonrpc

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

var validCases = []string{
	``, ` `, `null`, `true`, `false`, `nul`, `nulll`, `truefalse`, `True`,
	`0`, `-0`, `01`, `-01`, `1.`, `.5`, `1.5`, `1e5`, `1E+5`, `1e-05`, `1e`, `1e+`, `-`, `+1`,
	`123456789012345678901234567890`, `0.0e0`, `1.5.5`, `0x10`, `Infinity`, `NaN`,
	`""`, `"a"`, `"\""`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`,
	`"\x"`, `"\'"`, "\"\x01\"", "\"\x1f\"", "\"\x7f\"", "\"\xff\xfe\"", `"abc`, `"\`, `"\u`,
	"\"tab\there\"", `"é"`, `'a'`,
	`{}`, `{ }`, `[]`, `[ ]`, `{"a":1}`, `{"a":1,}`, `{,}`, `{"a"}`, `{"a":}`, `{"a" : 1 , "b" : [ ] }`,
	`{a:1}`, `{"a":1 "b":2}`, `{1:2}`, `[1,]`, `[,1]`, `[1 2]`, `[1,,2]`, `[[[]]]`, `[[[]]`, `[]]`, `{}}`,
	`[{"a":[{"b":null}]}]`, `{"a":{"b":{"c":[1,2,{"d":"e"}]}}}`, ` [1] `, "\t\r\n{}\n", `[1] x`, `[1][2]`,
	`{"":""}`, `{"a":true,"b":false,"c":null}`, `[-1.5e+10,0,-0.0]`, `{"a":[}`, `{"a":]}`, `[}`, `{]`,
	"\u00a0{}", `{"a":1}` + "\x00", `[tru]`, `[nulls]`, `[1.e1]`, `[1e1.5]`,
}

func TestValidAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range validCases {
		if got, want := Valid([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid says %v", c, got, want)
		}
	}
}

func TestValidDepthBound(t *testing.T) {
	for _, depth := range []int{maxValidDepth - 1, maxValidDepth, maxValidDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			closeWith := "]"
			if open != "[" {
				closeWith = "}"
			}
			s := strings.Repeat(open, depth) + "1" + strings.Repeat(closeWith, depth)
			if got, want := Valid([]byte(s)), json.Valid([]byte(s)); got != want {
				t.Errorf("depth %d of %q: Valid %v, json.Valid %v", depth, open, got, want)
			}
		}
	}
}

// Random mutations of valid messages: every one is judged as json.Valid
// judges it.
func TestValidAgreesOnMutations(t *testing.T) {
	seeds := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"h\u00e9llo\n"},"_meta":{"progressToken":-1.5e3}}}`,
		`{"jsonrpc":"2.0","id":"x","result":{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{}}},{"name":"b"}],"nextCursor":null}}`,
		`[true,false,null,0,-0.5,1E9,"\"\\\/\b\f\n\r\t",[],{}]`,
	}
	alphabet := []byte("{}[]:,\" \\/0123456789-+.eEtrufalsn\u00e9x\x01\t")
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		b := []byte(seeds[rng.IntN(len(seeds))])
		for k := rng.IntN(3) + 1; k > 0; k-- {
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b[i] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
			}
		}
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"h","version":"1"}}}}`)
	b.Run("jsonrpc", func(b *testing.B) {
		for range b.N {
			Valid(msg)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for range b.N {
			json.Valid(msg)
		}
	})
}
